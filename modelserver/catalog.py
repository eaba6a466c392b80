"""The models one server serves: its base model, and every fine-tuned checkpoint saved under its work
folder (``<work>/models/<model id>/``), each under its own id."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
OWNER = "benchgen-model-server"


@dataclass(frozen=True)
class Served:
    model_id: str
    folder: Path
    created: int
    parent: str | None = None  # the model it was fine-tuned from


def check_model_id(model_id: str) -> str:
    if not _MODEL_ID.match(model_id):
        raise ValueError(
            f"{model_id!r} cannot name a model: use up to 128 letters, digits, dots, dashes and underscores, "
            "starting with a letter or digit"
        )
    return model_id


class Catalog:
    """Model id -> where its weights are; the base model first, then checkpoints in the order made."""

    def __init__(self, base_id: str, base_folder: Path, checkpoints: Path) -> None:
        self.base_id = check_model_id(base_id)
        self.checkpoints = checkpoints
        self._served = {base_id: Served(base_id, base_folder, int(time.time()))}
        self._lock = threading.Lock()
        for folder in sorted(checkpoints.glob("*/config.json"), key=lambda p: p.stat().st_mtime):
            model_id = folder.parent.name
            if _MODEL_ID.match(model_id) and model_id != base_id:
                self._served[model_id] = Served(model_id, folder.parent, int(folder.stat().st_mtime))

    def folder(self, model_id: str) -> Path | None:
        with self._lock:
            served = self._served.get(model_id)
        return served.folder if served else None

    def checkpoint_folder(self, model_id: str) -> Path:
        """Where the checkpoint of ``model_id`` is saved."""
        return self.checkpoints / check_model_id(model_id)

    def add(self, model_id: str, parent: str) -> None:
        folder = self.checkpoint_folder(model_id)
        with self._lock:
            self._served[model_id] = Served(model_id, folder, int(time.time()), parent)

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._served)

    def view(self) -> list[dict[str, Any]]:
        with self._lock:
            served = list(self._served.values())
        return [
            {
                "id": s.model_id,
                "object": "model",
                "created": s.created,
                "owned_by": OWNER,
                "root": s.parent or s.model_id,
                "parent": s.parent,
            }
            for s in served
        ]
