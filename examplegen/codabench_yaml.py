"""``competition.yaml`` the way bundles published for Codabench write it: version 2, nulls and platform
keys included. What every Codabench-style example shares."""

from __future__ import annotations

from typing import Any

LIMIT_S = 60
PY39_IMAGE = "codalab/codalab-legacy:py39"
# The image whose set of scientific libraries (numpy, scipy, scikit-learn, pandas, matplotlib) the
# scientific runtime reproduces.
SCIENTIFIC_IMAGE = "codalab/codalab-legacy:py312"


def column(title: str, key: str, index: int, **more: Any) -> dict[str, Any]:
    return {"title": title, "key": key, "index": index, "sorting": "desc", **more}


def competition(
    title: str,
    tasks: list[dict[str, Any]],
    phases: list[dict[str, Any]],
    columns: list[Any],
    *,
    docker_image: str = PY39_IMAGE,
) -> Any:
    """competition.yaml as published for Codabench: version 2, nulls and platform keys included."""
    return {
        "version": 2,
        "title": title,
        "description": f"{title}: a small bundle in the shape Codabench publishes.",
        "image": "logo.png",
        "docker_image": docker_image,
        "registration_auto_approve": True,
        "enable_detailed_results": None,
        "tasks": tasks,
        "phases": phases,
        "leaderboards": [{"index": 0, "title": "Results", "key": "main", "columns": columns}],
    }


def phase(index: int, name: str, tasks: list[int]) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "description": None,
        "start": "2026-01-01",
        "end": None,
        "execution_time_limit": LIMIT_S,
        "max_submissions_per_day": None,
        "tasks": tasks,
    }
