"""Each runtime's whole package set imports inside the runner, exactly as a bundle's program would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchgen.bundle.runtime import RUNTIMES, Runtime
from benchgen.programs import prepare_layout, program_job
from benchgen.sandbox.local import LocalSandbox
from tests.program_runs import write_program

# Run inside the program: every pinned distribution is installed at its pinned version, and every public
# top-level module it ships imports.
PROGRAM = """
import importlib, importlib.metadata, json, sys
pins = json.loads(sys.argv[1])
versions, imported = {}, {}
for name in pins:
    distribution = importlib.metadata.distribution(name)
    versions[name] = distribution.version
    tops = set()
    for file in distribution.files or []:
        top = file.parts[0]
        if len(file.parts) > 1 and file.parts[1] == "__init__.py":
            tops.add(top)
        elif len(file.parts) == 1 and top.endswith(".py"):
            tops.add(top[:-3])
        elif len(file.parts) == 1 and top.endswith(".so"):
            tops.add(top.split(".", 1)[0])
    imported[name] = [module for module in sorted(tops) if not module.startswith("_")]
    for module in imported[name]:
        importlib.import_module(module)
print(json.dumps({"versions": versions, "imported": imported, "prefix": sys.prefix}))
"""


@pytest.mark.parametrize("runtime", RUNTIMES.values(), ids=lambda runtime: runtime.name)
def test_the_runtimes_whole_package_set_imports_in_a_program(tmp_path: Path, runtime: Runtime) -> None:
    # Given a program that imports every module of every package its runtime pins
    pins = runtime.pins()
    program = write_program(tmp_path, PROGRAM, f"python $program/main.py '{json.dumps(sorted(pins))}'")
    layout = prepare_layout(tmp_path / "run")
    job = program_job(
        program,
        input_dir=layout.input,
        output_dir=layout.output,
        shared_dir=layout.shared,
        ref_dir=layout.ref,
        res_dir=layout.res,
        time_limit=600,
        runtime=runtime.name,
    )

    # When it runs through the local runner in that runtime
    result = LocalSandbox().run(job)

    # Then every package is there at its pinned version, and each one's modules (one at least) imported
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["versions"] == pins
    assert Path(answer["prefix"]).name == runtime.name
    assert [name for name, modules in answer["imported"].items() if not modules] == []
