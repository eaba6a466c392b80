"""The S3 requests one run makes, counted on the local cloud: the synthesized stack on moto, real handlers.

A generated math environment is registered, then a submission uploaded by the user, and the run followed
until its artifact pipeline has ended; every S3 call any client makes is counted by operation and key,
for the run (the user's upload and all that follows) apart from the registration. moto answers the calls
as S3 would, so the count is what AWS would bill for this run at this size. Transfers larger than the
multipart threshold split into more requests; cost.py scales them with the sizes the bench measured.

    python bench/run_requests.py --json run-requests.json      # a 2,000-case run, whole
    python bench/run_requests.py --shard-cases 500 --json sharded-4.json     # the same run in 4 shards
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ENVIRONMENT = "gsm8k-tr"
RUN_ID = "run-requests"
SEED = 1234


@contextmanager
def counting_calls() -> Iterator[Counter[tuple[str, str, str]]]:
    """Every AWS call made while inside, counted by (service, operation, object key or "")."""
    import botocore.client

    counts: Counter[tuple[str, str, str]] = Counter()
    lock = threading.Lock()
    original = botocore.client.BaseClient._make_api_call

    def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
        with lock:
            counts[(client.meta.service_model.service_name, operation, str(params.get("Key", "")))] += 1
        return original(client, operation, params)

    botocore.client.BaseClient._make_api_call = counted
    try:
        yield counts
    finally:
        botocore.client.BaseClient._make_api_call = original


def s3_calls(counts: Counter[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [
        {"operation": operation, "key": key, "count": count}
        for (service, operation, key), count in sorted(counts.items())
        if service == "s3"
    ]


def count_run(cases: int, root: Path, shard_cases: int | None = None) -> dict[str, Any]:
    """S3 calls of registering a generated environment and of one run of it, on a fresh local cloud
    (deployed with ``shard_cases`` as its shard size, when given)."""
    from benchgen.bucket_layout import execution_name
    from examplegen import generate_environment
    from examplegen.writing import write_bundle_zip
    from infra.sizing import SHARD_CASES
    from localcloud.cloud import LocalCloud

    made = generate_environment(ENVIRONMENT, root / "generated", cases=cases, seed=SEED)
    bundle = write_bundle_zip(made.bundle_dir, root / "bundle.zip")
    context = {SHARD_CASES: shard_cases} if shard_cases is not None else None
    with LocalCloud(context=context) as cloud, counting_calls() as counts:
        s3 = cloud.client("s3")
        s3.put_object(
            Bucket=cloud.bucket, Key=f"environments/{ENVIRONMENT}/v1/bundle.zip", Body=bundle.read_bytes()
        )
        cloud.settle()
        registration = Counter(counts)
        s3.put_object(
            Bucket=cloud.bucket,
            Key=f"submissions/{RUN_ID}/{made.submission_path.name}",
            Body=made.submission_path.read_bytes(),
            Metadata={"environment": ENVIRONMENT, "version": "v1", "model": "bench-model"},
        )
        execution = cloud.wait_for_execution(execution_name(RUN_ID), timeout=600)
        cloud.settle(timeout=600)
        run = counts - registration
    if execution["status"] != "SUCCEEDED":
        raise SystemExit(f"the run's artifact pipeline ended {execution['status']}: {execution}")
    shards = math.ceil(cases / shard_cases) if shard_cases is not None and cases > shard_cases else 0
    return {"cases": cases, "shards": shards, "registration": s3_calls(registration), "run": s3_calls(run)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=2000, help="cases of the generated environment (2,000)")
    parser.add_argument("--shard-cases", type=int, help="deploy the local cloud with this shard size")
    parser.add_argument("--json", type=Path, help="also write the counts to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchgen-requests-") as tmp:
        counted = count_run(args.cases, Path(tmp), args.shard_cases)
    for phase in ("registration", "run"):
        print(f"{phase}: {sum(call['count'] for call in counted[phase])} S3 requests")
        for call in counted[phase]:
            print(f"  {call['count']:>4}  {call['operation']:<28}{call['key']}")
    if args.json is not None:
        args.json.write_text(json.dumps(counted, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
