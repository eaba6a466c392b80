"""The sharded path, offline: a run split into shards, each scored and collected as a part, then merged.

The shards are what the pipeline hands a Distributed Map (see the shard inputs of the design): lines
[n*size, (n+1)*size) of the environment's ``cases.jsonl``, verbatim, and a ``prediction_output.zip`` in the
format ingest writes holding those cases' predictions, with the whole run's metadata. Making them is set-up
and is not measured. Each step below then runs in a fresh process, as a Lambda invocation would:

- score part n: ``score_part`` on shard n (what ScoreShard does);
- collect part n: ``collect_part`` on the verdicts of score part n (what BuildShardArtifact does);
- finish scores: ``finish_scores`` over the score parts in order (ReduceScores);
- finish artifact: ``finish_artifact`` over the artifact parts in order (BuildArtifact, sharded).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from measure import Clock, Step, in_fresh_process

from benchgen.outputs import RunOutput

# Every file a run publishes that the merge must reproduce byte for byte.
RUN_FILES = tuple(
    output.file_name
    for output in (
        RunOutput.SCORES,
        RunOutput.SCORING_OUTPUT,
        RunOutput.DETAILED_JSON,
        RunOutput.DETAILED_HTML,
        RunOutput.FINETUNE_ARTIFACT,
    )
)
ENVIRONMENT = "gsm8k-tr"
RUN_ID = "bench"
# A fixed finish time: the artifact records it, and the whole and the sharded run must agree on it.
FINISHED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def run_info(env: Any, overall_score: float | None) -> Any:
    from benchgen.records.runs import RunInfo

    return RunInfo(
        run_id=RUN_ID,
        environment_id=ENVIRONMENT,
        environment_version="bench",
        model="bench-model",
        benchmark=env.spec.title,
        overall_score=overall_score,
        finished_at=FINISHED_AT,
    )


def _case_lines(cases: Path) -> Iterator[bytes]:
    with cases.open("rb") as lines:
        yield from (line if line.endswith(b"\n") else line + b"\n" for line in lines if line.strip())


def _prediction_records(prediction_output: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The record lines of ingest's ``predictions.json`` by case id, verbatim, and its metadata."""
    from benchgen.scoring.ingested import MEMBER

    with zipfile.ZipFile(prediction_output) as archive:
        text = archive.read(MEMBER).decode("utf-8")
    head, _, rest = text.partition("\n")
    body, _, metadata = rest.rpartition('\n],\n"metadata": ')
    if head != '{"predictions": [' or not metadata.endswith("}\n"):
        raise SystemExit(f"{prediction_output} is not in the layout ingest writes")
    records = [line.removesuffix(",") for line in body.split("\n")] if body else []
    return {json.loads(record)["id"]: record for record in records}, json.loads(metadata[:-2])


def _write_prediction_output(
    target: Path, case_ids: list[str], records: dict[str, str], metadata: dict[str, Any]
) -> None:
    """What ingest writes for these cases, through ingest's own writer, with the whole run's metadata."""
    from benchgen.scoring.ingested import MEMBER, write_predictions_json
    from benchgen.zipwrite import entry

    with (
        zipfile.ZipFile(target, "w") as archive,
        archive.open(entry(MEMBER), "w", force_zip64=True) as out,
    ):
        in_order = ((case_id, records.get(case_id)) for case_id in case_ids)
        write_predictions_json(out, in_order, lambda total, answered: metadata, first_ids=0)


def split_run(cases: Path, prediction_output: Path, shard_cases: int, root: Path) -> list[Path]:
    """Shard folders under root, each with its ``cases.jsonl`` and ``prediction_output.zip``."""
    records, metadata = _prediction_records(prediction_output)
    shards: list[Path] = []
    lines = list(_case_lines(cases))
    for start in range(0, len(lines), shard_cases):
        shard = root / f"{len(shards):05d}"
        shard.mkdir(parents=True, exist_ok=True)
        chunk = lines[start : start + shard_cases]
        (shard / "cases.jsonl").write_bytes(b"".join(chunk))
        case_ids = [json.loads(line)["id"] for line in chunk]
        _write_prediction_output(RunOutput.PREDICTION_OUTPUT.path_in(shard), case_ids, records, metadata)
        shards.append(shard)
    return shards


def measure_score_part(bundle: Path, shard: Path, part: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.scoring.score_parts import score_part

    clock = Clock()
    env = open_environment(bundle, shard / "work" / "environment")
    opened = clock.lap()
    predictions = RunOutput.PREDICTION_OUTPUT.path_in(shard)
    score_part(env, shard / "cases.jsonl", predictions, part, workdir=shard / "work")
    return {**clock.lap(), "open": opened, "cases": sum(1 for _ in _case_lines(shard / "cases.jsonl"))}


def _files(folder: Path) -> dict[str, int]:
    files = [path for path in folder.rglob("*") if path.is_file()]
    return {"files": len(files), "bytes": sum(path.stat().st_size for path in files)}


def measure_collect_part(bundle: Path, shard: Path, part: Path, *, verdicts: str) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.finetune.artifact_parts import collect_part

    clock = Clock()
    env = open_environment(bundle, shard / "work" / "environment-artifact")
    opened = clock.lap()
    collect_part(env, Path(verdicts), shard / "cases.jsonl", part, run_id=RUN_ID)
    return {**clock.lap(), "open": opened}


def measure_finish_scores(bundle: Path, parts: Path, out: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.scoring.score_parts import finish_scores

    clock = Clock()
    env = open_environment(bundle, out / "work" / "environment")
    opened = clock.lap()
    report = finish_scores(env, sorted(path for path in parts.iterdir() if path.is_dir()), out)
    return {**clock.lap(), "open": opened, "overall_score": report.overall_score}


def measure_finish_artifact(bundle: Path, parts: Path, out: Path, *, overall_score: str) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.finetune.artifact import finish_artifact

    clock = Clock()
    env = open_environment(bundle, out / "work" / "environment")
    opened = clock.lap()
    run = run_info(env, None if overall_score == "None" else float(overall_score))
    finish_artifact(env, sorted(path for path in parts.iterdir() if path.is_dir()), out, run=run)
    return {**clock.lap(), "open": opened}


STEPS: dict[str, Step] = {
    "score-part": measure_score_part,
    "collect-part": measure_collect_part,
    "finish-scores": measure_finish_scores,
    "finish-artifact": measure_finish_artifact,
}


def run_sharded(
    script: str, bundle: Path, cases: Path, prediction_output: Path, whole: Path, root: Path, shard_cases: int
) -> dict[str, Any]:
    """Every step of the sharded path in its own process, and whether the merge equals the whole run."""
    shards = split_run(cases, prediction_output, shard_cases, root / "shards")
    score_parts, artifact_parts = root / "parts" / "score", root / "parts" / "artifact"
    per_shard = []
    for shard in shards:
        scored = in_fresh_process(script, "score-part", bundle, shard, score_parts / shard.name)
        verdicts = score_parts / shard.name / "verdicts.jsonl"
        collected = in_fresh_process(
            script, "collect-part", bundle, shard, artifact_parts / shard.name, {"verdicts": verdicts}
        )
        parts = {
            "score_part": _files(score_parts / shard.name),
            "artifact_part": _files(artifact_parts / shard.name),
        }
        per_shard.append({"shard": shard.name, "score": scored, "artifact": collected, **parts})
    out = root / "out"
    scores = in_fresh_process(script, "finish-scores", bundle, score_parts, out)
    artifact = in_fresh_process(
        script, "finish-artifact", bundle, artifact_parts, out, {"overall_score": scores["overall_score"]}
    )
    same = {name: (out / name).read_bytes() == (whole / name).read_bytes() for name in RUN_FILES}
    return {
        "shard_cases": shard_cases,
        "shards": per_shard,
        "finish_scores": scores,
        "finish_artifact": artifact,
        "same_bytes": same,
    }
