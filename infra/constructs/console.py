"""The web console on AWS: the built app in a private bucket, served by CloudFront over HTTPS only."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from benchgen.api.cors import CONSOLE_HEADERS
from infra.constructs import set_logical_id
from infra.constructs.api import Api
from infra.constructs.storage import access_logs_bucket, private_bucket

REPO_ROOT = Path(__file__).resolve().parents[2]
# `make web` builds the app here; `-c benchgen:consoleAssets=<folder>` deploys another build instead.
CONSOLE_ASSETS = "benchgen:consoleAssets"
DEFAULT_ASSETS = REPO_ROOT / "web" / "dist"
ENTRY_PAGE = "index.html"
# What the app reads at start to find the API and the user pool (the local cloud serves the same keys).
CONFIG_FILE = "config.json"
# After a visit, browsers refuse plain HTTP to the console's host for this long.
HSTS_MAX_AGE = Duration.days(365)
# What a browser sends the API from the console beside the simple headers: the Cognito token and JSON.
PREFLIGHT_HEADERS = ["Authorization", "Content-Type", *CONSOLE_HEADERS]
PREFLIGHT_MAX_AGE = Duration.minutes(10)


class ConsoleAssetsMissing(RuntimeError):
    """The folder to deploy as the console holds no built app."""


def console_assets(given: str | None) -> Path:
    """The built app to deploy: the folder the context names, else `web/dist`; it must hold index.html.

    Deploying without it would ship an empty site, so synthesis stops here and says how to build it.
    """
    folder = Path(given) if given else DEFAULT_ASSETS
    if not (folder / ENTRY_PAGE).is_file():
        raise ConsoleAssetsMissing(
            f"The web console is not built: {folder / ENTRY_PAGE} does not exist. Run `make web` to build "
            f"it into {DEFAULT_ASSETS}, or pass `-c {CONSOLE_ASSETS}=<folder>` naming a built app."
        )
    return folder


def content_security_policy(*, api_origin: str, cognito_origin: str, frame_origins: list[str]) -> str:
    """The console's CSP: its own files only, calls to the API, Cognito and the data bucket, frames from
    the data bucket.

    The run page embeds Detailed Results from a presigned URL of the data bucket, and the Environments page
    uploads a bundle to one; S3 may answer one host with a redirect to the other, so both are allowed.
    """
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'", api_origin, cognito_origin, *frame_origins],
        "frame-src": frame_origins,
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class Console(Construct):
    """The console's buckets, distribution, security headers and deployment; it signs in to the user pool
    ``user_pool_id`` through the app client ``client_id``.

    ``origin`` is the https origin browsers load the console from: the API allows it (CORS).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api: Api,
        user_pool_id: str,
        client_id: str,
        data_bucket: s3.IBucket,
        assets: Path,
    ) -> None:
        super().__init__(scope, construct_id)

        # The console's own: a bucket policy of the data stack's log bucket naming these buckets would make
        # the data depend on the console. Its buckets only log here, so nothing logs this one's accesses.
        logs_bucket = access_logs_bucket(self, "ConsoleAccessLogsBucket")
        self.bucket = private_bucket(
            self,
            "Bucket",
            server_access_logs_bucket=logs_bucket,
            server_access_logs_prefix="console-bucket/",
            # Only the build lives here: deleting the stack removes the files (below), then the bucket.
            removal_policy=RemovalPolicy.DESTROY,
        )
        set_logical_id(self.bucket, "ConsoleBucket")

        # CloudFront's standard logs are written with object ACLs, which the other buckets disable.
        self.distribution_logs = private_bucket(
            self,
            "DistributionLogs",
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            server_access_logs_bucket=logs_bucket,
            server_access_logs_prefix="console-distribution-logs/",
            lifecycle_rules=[s3.LifecycleRule(id="expire-distribution-logs", expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        set_logical_id(self.distribution_logs, "ConsoleDistributionLogsBucket")

        api_origin = f"https://{api.rest_api.rest_api_id}.execute-api.{Aws.REGION}.{Aws.URL_SUFFIX}"
        self.headers = cloudfront.ResponseHeadersPolicy(
            self,
            "SecurityHeaders",
            comment="BenchGen console: CSP, HSTS, nosniff, no framing, no referrer",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=content_security_policy(
                        api_origin=api_origin,
                        cognito_origin=f"https://cognito-idp.{Aws.REGION}.{Aws.URL_SUFFIX}",
                        frame_origins=[
                            f"https://{data_bucket.bucket_domain_name}",
                            f"https://{data_bucket.bucket_regional_domain_name}",
                        ],
                    ),
                    override=True,
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=HSTS_MAX_AGE, include_subdomains=True, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                # Run and dataset ids in the console's addresses stay out of other sites' logs.
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
            ),
        )

        # The app routes in the browser: a path with no file (S3 answers 403 without ListBucket) gets the
        # app's entry page, which shows that path's view.
        app_routes = [
            cloudfront.ErrorResponse(
                http_status=status,
                response_http_status=200,
                response_page_path=f"/{ENTRY_PAGE}",
                ttl=Duration.seconds(0),
            )
            for status in (403, 404)
        ]
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="BenchGen web console",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=self.headers,
                compress=True,
            ),
            default_root_object=ENTRY_PAGE,
            error_responses=app_routes,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            enable_logging=True,
            log_bucket=self.distribution_logs,
            log_file_prefix="console/",
        )
        set_logical_id(self.distribution, "ConsoleDistribution")
        self.origin = f"https://{self.distribution.distribution_domain_name}"

        config = {
            "apiUrl": api.rest_api.url,
            "region": Aws.REGION,
            "userPoolId": user_pool_id,
            "userPoolClientId": client_id,
        }
        deployment_logs = logs.LogGroup(
            self,
            "DeploymentLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "Deployment",
            sources=[s3deploy.Source.asset(str(assets)), s3deploy.Source.json_data(CONFIG_FILE, config)],
            destination_bucket=self.bucket,
            # Files of an older build go; the entry page and config.json are revalidated on every load.
            prune=True,
            retain_on_delete=False,
            cache_control=[s3deploy.CacheControl.no_cache()],
            distribution=self.distribution,
            distribution_paths=["/*"],
            log_group=deployment_logs,
        )


def allow_console_origin(rest_api: apigw.RestApi, origin: str) -> None:
    """Let browsers on the console's origin call the API, and no other origin.

    API Gateway answers each route's preflight itself (a preflight carries no token, so it cannot pass the
    authorizer); its own refusals (401, 403, 429, 5xx) carry the origin too, so the console can read them.
    The api function adds the same header to its answers (CONSOLE_ORIGIN, ``benchgen.api.cors``).
    """
    methods: dict[str, tuple[apigw.IResource, list[str]]] = {}
    for method in rest_api.methods:
        methods.setdefault(method.resource.path, (method.resource, []))[1].append(method.http_method)
    for resource, verbs in methods.values():
        resource.add_cors_preflight(
            allow_origins=[origin],
            allow_methods=sorted(verbs),
            allow_headers=PREFLIGHT_HEADERS,
            max_age=PREFLIGHT_MAX_AGE,
        )
    for construct_id, response_type in (
        ("Default4xx", apigw.ResponseType.DEFAULT_4_XX),
        ("Default5xx", apigw.ResponseType.DEFAULT_5_XX),
    ):
        rest_api.add_gateway_response(
            construct_id,
            type=response_type,
            response_headers={"Access-Control-Allow-Origin": f"'{origin}'", "Vary": "'Origin'"},
        )
