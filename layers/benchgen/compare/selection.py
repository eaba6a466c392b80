"""Which cases a comparison covers: a package's held-out cases, a plain list of case ids, or both.

A package is identified by its id and by the sha256 of its zip. Given the zip, both are known; given only
its ``manifest.json``, the id is, and the sha256 is whatever the caller states.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from benchgen.errors import BenchGenError
from benchgen.lazy_model import LazyModel
from benchgen.zipwrite import file_sha256

MANIFEST = "manifest.json"
MAX_NAMED = 5  # ids an error message names before it just counts


class SelectionError(BenchGenError):
    """The cases to compare on cannot be read, or would include cases that were not held out."""


class PackageRef(LazyModel):
    model_config = ConfigDict(frozen=True)

    package_id: str
    sha256: str | None
    held_out: tuple[str, ...]
    benchmark: str | None = None  # the title of the benchmark the package's preparation drew from
    method: str | None = None  # the training method of the package's preparation
    reward: str | None = None  # reinforcement: what rewarded the training, as the manifest names it


def _reward(grader: Any) -> str | None:
    """What rewarded a reinforcement package's training, in words, from its manifest's grader entry."""
    if not isinstance(grader, dict):
        return None
    if isinstance(grader.get("file"), str):
        sha256 = grader.get("sha256") or "not given"
        return f"the environment's own scoring as {grader['file']}, sha256 {sha256}"
    if isinstance(grader.get("program"), str):
        return f"the environment's scoring program {grader['program']}"
    return None


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED])
    return shown if len(ids) <= MAX_NAMED else f"{shown} and {len(ids) - MAX_NAMED} more"


def _load_json(data: bytes, source: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise SelectionError(f"{source} is not valid JSON: {exc}") from exc


def read_package(path: Path, sha256: str | None = None) -> PackageRef:
    """The package id and held-out case ids from a package zip (whose sha256 is computed) or its manifest."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                if MANIFEST not in archive.namelist():
                    raise SelectionError(f"{path.name} holds no {MANIFEST}; give a BenchGen package zip")
                manifest = _load_json(archive.read(MANIFEST), f"{path.name}'s {MANIFEST}")
            sha256 = file_sha256(path)
        else:
            manifest = _load_json(path.read_bytes(), path.name)
    except OSError as exc:
        raise SelectionError(f"cannot read the package {path}: {exc.strerror}") from exc
    try:
        package_id = manifest["package_id"]
        cases = manifest["held_out"]["cases"]
        held_out = tuple(case["case_id"] for case in cases)
    except (KeyError, TypeError) as exc:
        raise SelectionError(
            f"{path.name} is not a package manifest: it needs package_id and held_out.cases[].case_id"
        ) from exc
    if not isinstance(package_id, str) or not all(isinstance(case_id, str) for case_id in held_out):
        raise SelectionError(f"{path.name}: package_id and every held-out case_id must be strings")
    preparation = manifest.get("preparation")
    benchmark = preparation.get("benchmark") if isinstance(preparation, dict) else None
    method = preparation.get("method") if isinstance(preparation, dict) else None
    return PackageRef(
        package_id=package_id,
        sha256=sha256,
        held_out=held_out,
        benchmark=benchmark if isinstance(benchmark, str) and benchmark else None,
        method=method if isinstance(method, str) and method else None,
        reward=_reward(manifest.get("grader")),
    )


def read_case_list(path: Path) -> list[str]:
    """Case ids from a JSON array of strings, or from a text file with one id a line (blank lines skipped)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SelectionError(f"cannot read the case list {path}: {exc.strerror}") from exc
    if data.lstrip().startswith(b"["):
        ids = _load_json(data, path.name)
        if not all(isinstance(case_id, str) for case_id in ids):
            raise SelectionError(f"{path.name}: the JSON array must hold case ids as strings")
        return list(ids)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SelectionError(f"{path.name} is not UTF-8 text; write one case id a line") from exc
    return [line.strip() for line in text.splitlines() if line.strip()]


def choose_cases(listed: list[str] | None, package: PackageRef | None) -> list[str] | None:
    """The case ids to compare on (None: every case both runs judged).

    With a package, the listed cases must be among its held-out ones: any other case may have been trained
    on, and measuring a trained model on it says nothing about what it learned.
    """
    if package is None:
        return listed
    if listed is None:
        return list(package.held_out)
    held_out = set(package.held_out)
    trained = [case_id for case_id in listed if case_id not in held_out]
    if trained:
        raise SelectionError(
            f"{len(trained)} listed cases are not held out by package {package.package_id} "
            f"({_named(trained)}): they may have been trained on; list held-out cases only, or leave the "
            "list out to compare on every held-out case"
        )
    return listed
