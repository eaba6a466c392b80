"""A runtime's environment on this machine: the virtual environment whose ``python`` runs its programs.

Locally ``make runtimes`` creates one per runtime under the repository's ``.runtimes`` folder, from the
runtime's pinned requirements; each sandbox image holds its own runtime's, under the folder it names in
``BENCHGEN_RUNTIMES``. A program sees that environment's folders (read-only) and nothing of the
environment BenchGen itself runs in.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchgen.bundle.runtime import RUNTIMES
from benchgen.settings import RuntimeSettings

MAKE_TARGET = "make runtimes"
# Run by a runtime's own interpreter, isolated: every top-level name it can import. Folders without
# __init__.py count too (namespace packages such as mpl_toolkits), which pkgutil does not list.
_LIST_MODULES = """
import json, os, pkgutil, sys
names = {module.name for module in pkgutil.iter_modules()} | set(sys.builtin_module_names)
for folder in filter(os.path.isdir, sys.path):
    for name in os.listdir(folder):
        if name.isidentifier() and os.path.isdir(os.path.join(folder, name)):
            names.add(name)
print(json.dumps(sorted(names)))
"""


class RuntimeMissing(RuntimeError):
    """The runtime a job names has no environment here: a platform fault, with the command that fixes it."""


@dataclass(frozen=True)
class RuntimeEnvironment:
    name: str
    prefix: Path

    @property
    def interpreter(self) -> Path:
        return self.prefix / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    def folders(self) -> list[str]:
        """What the program's ``python`` needs to start: the environment and the installation it was made
        from (the ``home`` of its ``pyvenv.cfg``, and wherever its interpreter link resolves)."""
        folders = {os.path.realpath(self.prefix), os.path.realpath(self.interpreter.resolve().parents[1])}
        config = self.prefix / "pyvenv.cfg"
        if config.is_file():
            for line in config.read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    folders.add(os.path.realpath(Path(value.strip()).parent))
        return sorted(folders)


def runtime_environment(name: str, folder: Path | None = None) -> RuntimeEnvironment:
    """The environment of runtime ``name`` under ``folder`` (the settings' when None); raises
    RuntimeMissing, naming what to run, when it is not there."""
    if name not in RUNTIMES:
        raise RuntimeMissing(f"{name!r} is not a runtime; the runtimes are {', '.join(RUNTIMES)}")
    root = folder if folder is not None else RuntimeSettings.from_environment().runtimes_folder
    environment = RuntimeEnvironment(name=name, prefix=root / name)
    if not environment.interpreter.exists():
        raise RuntimeMissing(
            f"the {name} runtime has no environment at {environment.prefix}: create it with `{MAKE_TARGET}` "
            "(or point BENCHGEN_RUNTIMES at the folder that holds it)"
        )
    return environment


def importable_modules(environment: RuntimeEnvironment) -> frozenset[str]:
    """Every top-level module the environment's interpreter can import, asked of the interpreter itself."""
    listed = subprocess.run(  # noqa: S603 - our own interpreter and script
        [str(environment.interpreter), "-I", "-c", _LIST_MODULES],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return frozenset(json.loads(listed.stdout))
