"""`benchgen local up`: the whole application on this machine, reachable by the AWS CLI and curl."""

from __future__ import annotations

import argparse
import logging
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from benchgen.settings import EVALUATORS_GROUP
from cli.api_client import Api

DEMO_USER = "demo@example.com"
DEFAULT_LOG = Path("out/local/local-up.log")
# The loggers whose lines are the local cloud's own workings: moto's server writes its access log
# through werkzeug's.
ACCESS_LOGGERS = ("werkzeug",)
# What the library logs at each change of a run's status or artifact status (benchgen.aws.transitions).
RUN_TRANSITION = "run transition"


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
    up.add_argument(
        "--log",
        type=Path,
        default=DEFAULT_LOG,
        help=f"file the access logs and the functions' logs are appended to, default {DEFAULT_LOG}",
    )
    up.set_defaults(func=run_up)


def run_up(args: argparse.Namespace) -> int:
    from localcloud.cloud import LocalCloud

    terminal, terminal_errors = sys.stdout, sys.stderr
    log_path: Path = args.log.resolve()
    print("Synthesizing the CDK app and creating its resources (about 20 s)...", flush=True)
    print(f"Access logs and the functions' logs go to {log_path}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with logged_to(log_path), run_transitions_on(terminal):
        cloud = LocalCloud(mode="server", port=args.port)
        cloud.start()
        try:
            password = demo_password()
            token = sign_in_demo_user(cloud, password).id_token
            with cloud.serve_api(args.api_port) as api, console_for(cloud, api, args.console_port) as console:
                print(summary(cloud, api.url, token, password, console, log_path), file=terminal, flush=True)
                try:
                    while not stop.wait(0.5):
                        pass
                except KeyboardInterrupt:
                    pass
        finally:
            print("\nStopping: waiting for running executions...", file=terminal, flush=True)
            abandoned = cloud.stop()
    for arn in abandoned:
        print(f"abandoned (still running): {arn}", file=terminal_errors)
    return 0


@contextmanager
def logged_to(path: Path) -> Iterator[TextIO]:
    """Send what the process prints and the access loggers write to ``path`` while the block runs.

    The terminal stays for what the caller prints to the streams it kept (addresses, credentials, run
    transitions); the moto server's access log alone is a line per AWS call."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8", buffering=1) as log:
        handler = logging.StreamHandler(log)
        loggers = [logging.getLogger(name) for name in ACCESS_LOGGERS]
        saved = [(logger.level, logger.propagate) for logger in loggers]
        for logger in loggers:
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False
        try:
            with redirect_stdout(log), redirect_stderr(log):
                yield log
        finally:
            for logger, (level, propagate) in zip(loggers, saved, strict=True):
                logger.removeHandler(handler)
                logger.setLevel(level)
                logger.propagate = propagate


class RunTransitionLines(logging.Handler):
    """One line on ``terminal`` for each change of a run's status or artifact status."""

    def __init__(self, terminal: TextIO) -> None:
        super().__init__(logging.INFO)
        self.terminal = terminal

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() != RUN_TRANSITION:
            return
        fields = record.__dict__
        what = "run" if fields.get("field") == "status" else "run artifact"
        before = fields.get("from_status") or "new"
        line = f"{time.strftime('%H:%M:%S')} {what} {fields.get('run_id')} ({fields.get('environment_id')}): "
        line += f"{before} -> {fields.get('to_status')}"
        if fields.get("reason"):
            line += f": {fields['reason']}"
        self.terminal.write(line + "\n")
        self.terminal.flush()


@contextmanager
def run_transitions_on(terminal: TextIO) -> Iterator[RunTransitionLines]:
    """Write the library's run transitions to ``terminal`` while the block runs.

    In-process the library's loggers hang under powertools' unnamed service (see
    localcloud/function_logs.py), which logs nothing below WARNING unless told to."""
    from localcloud.function_logs import library_logger

    library = library_logger()
    lines = RunTransitionLines(terminal)
    level = library.level
    library.addHandler(lines)
    library.setLevel(min(level or logging.INFO, logging.INFO))
    try:
        yield lines
    finally:
        library.removeHandler(lines)
        library.setLevel(level)


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


@dataclass(frozen=True)
class SignedIn:
    """A user signed in: its ID token, and how to get a new one when that has expired (an hour on)."""

    id_token: str
    refresh: Callable[[], str]

    def api(self, url: str) -> Api:
        """A client of the REST API at ``url`` as this user, signed in again whenever its token expires."""
        return Api(url, self.id_token, refresh=self.refresh)


def sign_in_demo_user(cloud: Any, password: str) -> SignedIn:
    """Create the demo user, a member of the evaluators group (it evaluates the models it trains), and
    sign it in."""
    cloud.create_user(DEMO_USER, password, groups=[EVALUATORS_GROUP])
    tokens = cloud.sign_in(DEMO_USER, password)
    return SignedIn(tokens["IdToken"], partial(cloud.refreshed_id_token, DEMO_USER, tokens["RefreshToken"]))


def demo_password() -> str:
    """A random password meeting a strict Cognito policy (length, cases, digit, symbol)."""
    return "Bg-7" + secrets.token_hex(8) + "-Local"


def summary(
    cloud: Any, api_url: str, token: str, password: str, console: str, log_path: Path | None = None
) -> str:
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
        *([f"  Log:                {log_path}"] if log_path is not None else []),
        "",
        "Try (the ID token of the demo user goes in the Authorization header):",
        f"  export TOKEN={token}",
        f"  export API={api_url}",
        "  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=" + cloud.region,
        f"  aws --endpoint-url {endpoint} s3 cp bundle.zip s3://{cloud.bucket}/environments/<id>/<version>/bundle.zip",
        f"  aws --endpoint-url {endpoint} s3 ls s3://{cloud.bucket} --recursive",
        '  curl -H "Authorization: $TOKEN" "$API/runs"',
        "",
        "Each change of a run's status is a line below.",
        "Ctrl-C stops it (running executions are drained first).",
    ]
    return "\n".join(lines)
