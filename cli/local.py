"""`benchgen local up`: the whole application on this machine, reachable by the AWS CLI and curl."""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchgen.settings import EVALUATORS_GROUP

DEMO_USER = "demo@example.com"


def register(subparsers: Any) -> None:
    local = subparsers.add_parser("local", help="run the application on a local cloud (moto), no AWS account")
    commands = local.add_subparsers(dest="local_command", required=True)
    up = commands.add_parser(
        "up",
        help="start the local cloud and the REST API; keeps running until Ctrl-C",
        description="Synthesize the CDK app, create its resources on a moto server, run the Lambda handlers "
        "in-process, and serve the REST API on localhost.",
    )
    up.add_argument(
        "--port", type=int, default=5000, help="port of the AWS endpoint (moto server), default 5000"
    )
    up.add_argument("--api-port", type=int, default=8080, help="port of the REST API, default 8080")
    up.add_argument(
        "--console-port",
        type=int,
        default=8081,
        help="port of the web console (built by `make web`), default 8081",
    )
    up.set_defaults(func=run_up)


def run_up(args: argparse.Namespace) -> int:
    from localcloud.cloud import LocalCloud

    print("Synthesizing the CDK app and creating its resources (about 20 s)...", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cloud = LocalCloud(mode="server", port=args.port)
    cloud.start()
    try:
        password = demo_password()
        token = sign_in_demo_user(cloud, password)
        with cloud.serve_api(args.api_port) as api, console_for(cloud, api, args.console_port) as console:
            print(summary(cloud, api.url, token, password, console), flush=True)
            try:
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
    finally:
        print("\nStopping: waiting for running executions...", flush=True)
        abandoned = cloud.stop()
    for arn in abandoned:
        print(f"abandoned (still running): {arn}", file=sys.stderr)
    return 0


@contextmanager
def console_for(cloud: Any, api: Any, port: int = 0) -> Iterator[str]:
    """Serve the web console beside ``api`` while the block runs; yields the line that says where it is."""
    from localcloud.console_server import serve_console

    try:
        server = serve_console(cloud, api, port=port)
    except FileNotFoundError as missing:
        yield f"not served: {missing}"
        return
    with server:
        yield f"{server.url} (sign in as the demo user)"


def sign_in_demo_user(cloud: Any, password: str) -> str:
    """Create the demo user, a member of the evaluators group (it evaluates the models it trains), and
    return its ID token."""
    return str(cloud.create_user(DEMO_USER, password, groups=[EVALUATORS_GROUP]))


def demo_password() -> str:
    """A random password meeting a strict Cognito policy (length, cases, digit, symbol)."""
    return "Bg-7" + secrets.token_hex(8) + "-Local"


def summary(cloud: Any, api_url: str, token: str, password: str, console: str) -> str:
    endpoint = cloud.endpoint_url
    lines = [
        "",
        "BenchGen is running locally.",
        f"  AWS endpoint (S3, DynamoDB, Step Functions, ...): {endpoint}",
        f"  Data bucket:        {cloud.bucket}",
        *(f"  Table {lid}: {name}" for lid, name in sorted(cloud.table_names.items())),
        f"  Event bus:          {cloud.bus_name}",
        *(f"  State machine {lid}: {arn}" for lid, arn in sorted(cloud.state_machine_arns.items())),
        f"  Cognito user pool:  {cloud.user_pool_id} (app client {cloud.client_id})",
        f"  REST API:           {api_url}",
        f"  Web console:        {console}",
        f"  Demo user:          {DEMO_USER} / {password} (in the {EVALUATORS_GROUP} group)",
        "",
        "Try (the ID token of the demo user goes in the Authorization header):",
        f"  export TOKEN={token}",
        "  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=" + cloud.region,
        f"  aws --endpoint-url {endpoint} s3 cp bundle.zip s3://{cloud.bucket}/environments/<id>/<version>/bundle.zip",
        f"  aws --endpoint-url {endpoint} s3 ls s3://{cloud.bucket} --recursive",
        f'  curl -H "Authorization: $TOKEN" {api_url}/runs',
        "",
        "Ctrl-C stops it (running executions are drained first).",
    ]
    return "\n".join(lines)
