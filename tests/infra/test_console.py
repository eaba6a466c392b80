"""The web console on AWS: a private bucket behind CloudFront (OAC, HTTPS only, security headers), the
built app and its config.json deployed into it, and the Cognito app client it signs in with.

The stack is synthesized once for the module with a small built app of the test's own, so the deployed
files can be read back from the cloud assembly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.console import CONSOLE_ASSETS, ConsoleAssetsMissing, console_assets

Resource = dict[str, Any]
APP_PAGE = (
    '<!doctype html><title>BenchGen console</title><script type="module" src="/assets/app.js"></script>'
)
APP_SCRIPT = 'document.title = "BenchGen";\n'


@dataclass(frozen=True)
class Assembly:
    template: dict[str, Any]
    outdir: Path

    def of_type(self, kind: str) -> dict[str, Resource]:
        return {lid: r for lid, r in self.template["Resources"].items() if r["Type"] == kind}

    def one(self, kind: str) -> tuple[str, Resource]:
        (found,) = self.of_type(kind).items()
        return found

    def asset_folder(self, object_key: str) -> Path:
        """The staged folder of a file asset, from the key it is uploaded under (``<hash>.zip``)."""
        return self.outdir / f"asset.{object_key.removesuffix('.zip')}"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    from infra.app import build_app
    from infra.merge import merge_stacks
    from infra.synth import NO_BUNDLING, read_templates

    dist = tmp_path_factory.mktemp("dist")
    (dist / "index.html").write_text(APP_PAGE, encoding="utf-8")
    (dist / "assets").mkdir()
    (dist / "assets" / "app.js").write_text(APP_SCRIPT, encoding="utf-8")
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stacks = build_app({**NO_BUNDLING, CONSOLE_ASSETS: str(dist)}, outdir=str(outdir))
    app.synth()
    return Assembly(template=merge_stacks(read_templates(outdir, stacks)), outdir=outdir)


@pytest.fixture(scope="module")
def bucket(assembly: Assembly) -> Resource:
    bucket: Resource = assembly.template["Resources"]["ConsoleBucket"]
    return bucket


@pytest.fixture(scope="module")
def distribution(assembly: Assembly) -> dict[str, Any]:
    config: dict[str, Any] = assembly.template["Resources"]["ConsoleDistribution"]["Properties"][
        "DistributionConfig"
    ]
    return config


@pytest.fixture(scope="module")
def security_headers(assembly: Assembly) -> dict[str, Any]:
    _, policy = assembly.one("AWS::CloudFront::ResponseHeadersPolicy")
    headers: dict[str, Any] = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    return headers


@pytest.fixture(scope="module")
def deployment(assembly: Assembly) -> dict[str, Any]:
    _, resource = assembly.one("Custom::CDKBucketDeployment")
    properties: dict[str, Any] = resource["Properties"]
    return properties


def test_the_bucket_is_private_encrypted_and_logged(bucket: Resource) -> None:
    properties = bucket["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert properties["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert properties["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": "ConsoleAccessLogsBucket"}
    assert "WebsiteConfiguration" not in properties


def test_only_the_distribution_reads_the_bucket_and_only_over_tls(
    assembly: Assembly, render: Callable[[Any], str]
) -> None:
    (policy,) = (
        p
        for p in assembly.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": "ConsoleBucket"}
    )
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    allows = [s for s in statements if s["Effect"] == "Allow"]
    assert [(s["Principal"], s["Action"], render(s["Resource"])) for s in allows] == [
        ({"Service": "cloudfront.amazonaws.com"}, "s3:GetObject", "${ConsoleBucket.Arn}/*")
    ]
    source = render(allows[0]["Condition"]["StringEquals"]["AWS:SourceArn"])
    assert source == "arn:${AWS::Partition}:cloudfront::${AWS::AccountId}:distribution/${ConsoleDistribution}"
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Action"] == "s3:*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_the_distribution_reaches_the_bucket_through_origin_access_control(
    assembly: Assembly, distribution: dict[str, Any]
) -> None:
    (origin,) = distribution["Origins"]
    assert origin["DomainName"] == {"Fn::GetAtt": ["ConsoleBucket", "RegionalDomainName"]}
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}
    control_id, control = assembly.one("AWS::CloudFront::OriginAccessControl")
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": [control_id, "Id"]}
    assert control["Properties"]["OriginAccessControlConfig"] | {"Name": "-"} == {
        "Name": "-",
        "OriginAccessControlOriginType": "s3",
        "SigningBehavior": "always",
        "SigningProtocol": "sigv4",
    }
    assert not assembly.of_type("AWS::CloudFront::CloudFrontOriginAccessIdentity")


def test_the_distribution_serves_https_only(distribution: dict[str, Any]) -> None:
    behavior = distribution["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
    assert behavior["AllowedMethods"] == ["GET", "HEAD"]
    assert "CacheBehaviors" not in distribution


def test_every_path_of_the_app_opens_its_entry_page(distribution: dict[str, Any]) -> None:
    assert distribution["DefaultRootObject"] == "index.html"
    # Without ListBucket S3 answers a missing key with 403: both lead to the app, which routes the path.
    assert sorted(
        (r["ErrorCode"], r["ResponseCode"], r["ResponsePagePath"])
        for r in distribution["CustomErrorResponses"]
    ) == [(403, 200, "/index.html"), (404, 200, "/index.html")]


def test_the_distribution_writes_access_logs(assembly: Assembly, distribution: dict[str, Any]) -> None:
    assert distribution["Logging"]["Bucket"] == {
        "Fn::GetAtt": ["ConsoleDistributionLogsBucket", "RegionalDomainName"]
    }
    logs_bucket = assembly.template["Resources"]["ConsoleDistributionLogsBucket"]["Properties"]
    assert logs_bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    # CloudFront's standard logging writes with ACLs: the bucket must not disable them.
    assert logs_bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerPreferred"}]


def test_every_response_carries_the_security_headers(
    assembly: Assembly, distribution: dict[str, Any], security_headers: dict[str, Any]
) -> None:
    policy_id, _ = assembly.one("AWS::CloudFront::ResponseHeadersPolicy")
    assert distribution["DefaultCacheBehavior"]["ResponseHeadersPolicyId"] == {"Ref": policy_id}
    assert security_headers["StrictTransportSecurity"] == {
        "AccessControlMaxAgeSec": 31536000,
        "IncludeSubdomains": True,
        "Override": True,
    }
    assert security_headers["ContentTypeOptions"] == {"Override": True}
    assert security_headers["FrameOptions"] == {"FrameOption": "DENY", "Override": True}
    assert security_headers["ReferrerPolicy"] == {"ReferrerPolicy": "no-referrer", "Override": True}


def test_the_content_security_policy_allows_the_app_the_api_cognito_and_the_data_buckets_frames(
    security_headers: dict[str, Any], render: Callable[[Any], str]
) -> None:
    csp = security_headers["ContentSecurityPolicy"]
    assert csp["Override"] is True
    directives = {
        name: sources
        for name, *sources in (part.split() for part in render(csp["ContentSecurityPolicy"]).split("; "))
    }
    assert directives == {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": [
            "'self'",
            "https://${RestApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}",
            "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}",
            # the Environments page PUTs a bundle to a presigned URL of the data bucket
            "https://${DataBucket.DomainName}",
            "https://${DataBucket.RegionalDomainName}",
        ],
        # Detailed Results is a presigned URL of the data bucket, on either of its hosts.
        "frame-src": ["https://${DataBucket.DomainName}", "https://${DataBucket.RegionalDomainName}"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }


def test_the_built_app_is_deployed_as_given(assembly: Assembly, deployment: dict[str, Any]) -> None:
    assert deployment["DestinationBucketName"] == {"Ref": "ConsoleBucket"}
    app_key, _config_key = deployment["SourceObjectKeys"]
    folder = assembly.asset_folder(app_key)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "assets/app.js",
        "index.html",
    ]
    assert (folder / "index.html").read_text(encoding="utf-8") == APP_PAGE
    # An older build's files go, nothing is cached without revalidation, CloudFront drops its copies.
    assert deployment["Prune"] is True
    assert deployment["SystemMetadata"] == {"cache-control": "no-cache"}
    assert deployment["DistributionId"] == {"Ref": "ConsoleDistribution"}
    assert deployment["DistributionPaths"] == ["/*"]


def test_config_json_names_the_api_the_region_the_pool_and_the_consoles_client(
    assembly: Assembly, deployment: dict[str, Any], render: Callable[[Any], str]
) -> None:
    _app_key, config_key = deployment["SourceObjectKeys"]
    text = (assembly.asset_folder(config_key) / "config.json").read_text(encoding="utf-8")
    # Values known only at deploy time are markers in the file, replaced by the deployment.
    for marker, value in deployment["SourceMarkers"][1].items():
        text = text.replace(marker, render(value))
    assert json.loads(text) == {
        "apiUrl": render(assembly.template["Outputs"]["ApiUrl"]["Value"]),
        "region": "${AWS::Region}",
        "userPoolId": "${UserPool}",
        "userPoolClientId": "${ConsoleUserPoolClient}",
    }
    assert json.loads(text)["apiUrl"].startswith("https://${RestApi}.execute-api.${AWS::Region}.")


def test_the_console_signs_in_with_its_own_client_without_secret_or_oauth(assembly: Assembly) -> None:
    client = assembly.template["Resources"]["ConsoleUserPoolClient"]["Properties"]
    assert client["UserPoolId"] == {"Ref": "UserPool"}
    assert client["GenerateSecret"] is False
    assert sorted(client["ExplicitAuthFlows"]) == ["ALLOW_REFRESH_TOKEN_AUTH", "ALLOW_USER_PASSWORD_AUTH"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is False
    assert "CallbackURLs" not in client
    assert client["PreventUserExistenceErrors"] == "ENABLED"
    assert client["EnableTokenRevocation"] is True
    assert (client["AccessTokenValidity"], client["IdTokenValidity"], client["RefreshTokenValidity"]) == (
        60,
        60,
        720,
    )
    assert client["TokenValidityUnits"] == {
        "AccessToken": "minutes",
        "IdToken": "minutes",
        "RefreshToken": "minutes",
    }


def test_the_stack_names_the_console_url(assembly: Assembly, render: Callable[[Any], str]) -> None:
    assert (
        render(assembly.template["Outputs"]["ConsoleUrl"]["Value"])
        == "https://${ConsoleDistribution.DomainName}"
    )


def test_a_folder_without_a_built_app_stops_synthesis_and_says_to_run_make_web(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    with pytest.raises(ConsoleAssetsMissing, match=r"index\.html does not exist\. Run `make web`"):
        console_assets(str(tmp_path))


def test_without_the_context_key_the_console_is_web_dist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("infra.constructs.console.DEFAULT_ASSETS", tmp_path / "web" / "dist")
    with pytest.raises(ConsoleAssetsMissing, match=r"web/dist/index\.html does not exist\. Run `make web`"):
        console_assets(None)
    (tmp_path / "web" / "dist").mkdir(parents=True)
    (tmp_path / "web" / "dist" / "index.html").write_text(APP_PAGE, encoding="utf-8")
    assert console_assets(None) == tmp_path / "web" / "dist"


@pytest.mark.slow
def test_the_app_without_a_built_console_fails_before_writing_a_template(tmp_path: Path) -> None:
    from infra.app import build_app

    with pytest.raises(ConsoleAssetsMissing, match="make web"):
        build_app({CONSOLE_ASSETS: str(tmp_path)}, outdir=str(tmp_path / "cdk.out"))
    assert not list((tmp_path / "cdk.out").glob("*.template.json"))


def _api_paths(assembly: Assembly) -> dict[str, str]:
    """Full path of each API Gateway resource, by logical id."""
    resources = assembly.of_type("AWS::ApiGateway::Resource")

    def path_of(reference: dict[str, Any]) -> str:
        if "Fn::GetAtt" in reference:
            return ""
        node = resources[reference["Ref"]]["Properties"]
        return f"{path_of(node['ParentId'])}/{node['PathPart']}"

    return {lid: path_of({"Ref": lid}) for lid in resources}


def test_each_route_answers_the_consoles_preflight_without_a_token(
    assembly: Assembly, render: Callable[[Any], str]
) -> None:
    paths = _api_paths(assembly)
    verbs: dict[str, set[str]] = {}
    preflights: dict[str, Resource] = {}
    for method in assembly.of_type("AWS::ApiGateway::Method").values():
        properties = method["Properties"]
        path = paths[properties["ResourceId"]["Ref"]]
        if properties["HttpMethod"] == "OPTIONS":
            preflights[path] = properties
        else:
            verbs.setdefault(path, set()).add(properties["HttpMethod"])
    assert set(preflights) == set(verbs)
    for path, preflight in preflights.items():
        # A browser sends a preflight without credentials: API Gateway answers it, no function is called.
        assert preflight["AuthorizationType"] == "NONE", path
        assert preflight["Integration"]["Type"] == "MOCK", path
        (response,) = preflight["Integration"]["IntegrationResponses"]
        headers = {
            name.removeprefix("method.response.header."): render(value).strip("'")
            for name, value in response["ResponseParameters"].items()
        }
        assert headers == {
            "Access-Control-Allow-Origin": "https://${ConsoleDistribution.DomainName}",
            "Access-Control-Allow-Methods": ",".join(sorted(verbs[path])),
            "Access-Control-Allow-Headers": "Authorization,Content-Type,Idempotency-Key",
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        }, path


def test_api_gateways_own_refusals_are_readable_by_the_console(
    assembly: Assembly, render: Callable[[Any], str]
) -> None:
    responses = {
        r["Properties"]["ResponseType"]: {
            name: render(value) for name, value in r["Properties"]["ResponseParameters"].items()
        }
        for r in assembly.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    refusal = {
        "gatewayresponse.header.Access-Control-Allow-Origin": "'https://${ConsoleDistribution.DomainName}'",
        "gatewayresponse.header.Vary": "'Origin'",
    }
    assert responses == {"DEFAULT_4XX": refusal, "DEFAULT_5XX": refusal}


def test_the_api_function_is_told_the_consoles_origin(
    assembly: Assembly, render: Callable[[Any], str]
) -> None:
    variables = assembly.template["Resources"]["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert render(variables["CONSOLE_ORIGIN"]) == "https://${ConsoleDistribution.DomainName}"
