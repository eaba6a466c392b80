"""A run restricted to a list of case ids: the list in S3, named by the run, applied where a step opens
the run's environment.

Every step of a run (plan, ingest, score, artifact) opens the environment through
``open_run_environment``, which narrows the reference cases to the scope there, once: so a scoped run asks,
counts, judges and reports exactly its cases, and a case outside the scope is neither missing nor scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from benchgen.errors import BenchGenError
from benchgen.ports.storage import ObjectStorage
from benchgen.records.runs import CaseScope

MAX_NAMED = 5  # ids a message names before it just counts


class CaseScopeError(BenchGenError):
    """The case scope cannot be read or names cases the environment does not have."""


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED])
    return shown if len(ids) <= MAX_NAMED else f"{shown} and {len(ids) - MAX_NAMED} more"


def write_case_scope(case_ids: Iterable[str], key: str, *, store: ObjectStorage, workdir: Path) -> CaseScope:
    """Store the ids (each once, in the order given) at ``key``; the scope a run record names."""
    ids = list(dict.fromkeys(case_ids))
    if not ids:
        raise CaseScopeError("a case scope needs at least one case id")
    path = workdir / "case_scope.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"case_ids": ids}, ensure_ascii=False), encoding="utf-8")
    store.upload(path, key, content_type="application/json")
    return CaseScope(key=key, count=len(ids))


def read_case_scope(scope: CaseScope, *, store: ObjectStorage, workdir: Path) -> set[str]:
    """The scope's ids, checked against the count the run recorded."""
    path = store.download(scope.key, workdir / "case_scope.json")
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))["case_ids"]
    except (ValueError, KeyError, TypeError) as error:
        raise CaseScopeError(f"the run's case scope {scope.key} is not a case id list: {error}") from None
    if not isinstance(ids, list) or not all(isinstance(case_id, str) for case_id in ids):
        raise CaseScopeError(f"the run's case scope {scope.key} must list case ids as strings")
    unique = set(ids)
    if len(unique) != scope.count:
        raise CaseScopeError(
            f"the run's case scope {scope.key} lists {len(unique)} cases, but the run recorded "
            f"{scope.count}: the list changed after the run was created; create the run again"
        )
    return unique


def restrict_cases(cases_path: Path, wanted: set[str]) -> set[str]:
    """Keep only the ``wanted`` lines of a ``cases.jsonl`` (rewritten in place); the ids it kept.

    Lines are kept byte for byte: the steps read the same cases they would read unscoped.
    """
    kept: set[str] = set()
    narrowed = cases_path.with_name(cases_path.name + ".scoped")
    with cases_path.open("rb") as lines, narrowed.open("wb") as out:
        for line in lines:
            if not line.strip():
                continue
            try:
                case_id = json.loads(line).get("id")
            except (ValueError, AttributeError):
                continue  # not a case: the steps that read the file report it with its line number
            if isinstance(case_id, int):
                case_id = str(case_id)
            if case_id in wanted and case_id not in kept:
                kept.add(case_id)
                out.write(line if line.endswith(b"\n") else line + b"\n")
    narrowed.replace(cases_path)
    return kept


def unknown_cases_message(scope: CaseScope, unknown: set[str], *, environment: str) -> str:
    """The sentence a run reads when its scope names cases its environment does not have."""
    return (
        f"the run's case scope names {len(unknown)} of its {scope.count} cases that environment "
        f"{environment} does not have ({_named(sorted(unknown))}): scope the run to cases of its own "
        "environment version"
    )
