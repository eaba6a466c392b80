"""The layer: which packages it carries, and how pip builds it for the Lambda platform."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def test_the_layer_pins_the_librarys_dependencies_and_the_tracers_sdk_but_not_boto3() -> None:
    from infra.constructs.layer import layer_requirements, runtime_requirements

    assert sorted(layer_requirements()) == [
        "aws-lambda-powertools==3.37.0",
        "aws-xray-sdk==2.15.0",
        "msgspec==0.22.0",
        "pydantic==2.13.4",
        "pyyaml==6.0.3",
        "wrapt==1.17.3",
    ]
    assert runtime_requirements() == ["boto3==1.43.11"]


def test_an_unpinned_dependency_is_refused_with_the_file_to_fix(tmp_path: Path) -> None:
    from infra.constructs.layer import layer_requirements

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["pydantic>=2"]\n')

    with pytest.raises(ValueError, match=r"'pydantic>=2' must be pinned with == in .*pyproject.toml"):
        layer_requirements(pyproject)


def _report(command: list[str], *pins: str) -> None:
    """What pip's resolution writes to the file its --report option names."""
    install = [{"metadata": dict(zip(("name", "version"), pin.split("=="), strict=True))} for pin in pins]
    Path(command[command.index("--report") + 1]).write_text(json.dumps({"install": install}))


def test_the_layer_is_built_from_arm64_cpython_313_wheels_without_what_the_runtime_ships(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given pip replaced by a recorder whose resolution pulls botocore in through aws-xray-sdk
    from infra.constructs import layer

    source = tmp_path / "layers"
    (source / "benchgen" / "__pycache__").mkdir(parents=True)
    (source / "benchgen" / "__init__.py").write_text("VERSION = 1\n")
    (source / "benchgen" / "__pycache__" / "x.pyc").write_bytes(b"")
    commands: list[list[str]] = []

    def pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        if "--dry-run" in command:
            _report(command, "PyYAML==6.0.3", "aws-xray-sdk==2.15.0", "wrapt==1.17.3", "botocore==1.43.127")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr("infra.constructs.layer.subprocess.run", pip)

    # When the local bundler runs
    out = tmp_path / "out"
    built = layer.LayerBundler(source).try_bundle(str(out), None)  # type: ignore[arg-type]

    # Then pip resolves, then installs exactly the resolved set less botocore, for the Lambda platform,
    # pinned by constraints.txt, the library sits beside the wheels, and the whole tree is compiled to
    # bytecode for CPython 3.13 as the runtime finds it, at /opt/python
    assert built is True
    resolution, install, *_, compiling = commands
    assert compiling == [
        shutil.which("node"),
        str(layer.BYTECODE_COMPILER / "compile.mjs"),
        str(out / "python"),
        "/opt/python",
        "3.13",
    ]
    assert "pydantic==2.13.4" in resolution
    for command in (resolution, install):
        assert command[command.index("--platform") + 1] == "manylinux2014_aarch64"
        assert command[command.index("--python-version") + 1] == "3.13"
        assert command[command.index("--implementation") + 1] == "cp"
        assert "--only-binary=:all:" in command
        assert command[command.index("-c") + 1] == str(layer.REPO_ROOT / "constraints.txt")
    assert "--no-deps" in install
    assert install[install.index("--target") + 1] == str(out / "python")
    packages = install[install.index("--target") + 2 :]
    assert packages == ["aws-xray-sdk==2.15.0", "pyyaml==6.0.3", "wrapt==1.17.3"]
    assert (out / "python" / "benchgen" / "__init__.py").read_text() == "VERSION = 1\n"
    assert not (out / "python" / "benchgen" / "__pycache__").exists()


def test_a_layer_for_this_machine_names_no_platform() -> None:
    from infra.constructs.layer import THIS_MACHINE, pip_install_command

    command = pip_install_command(Path("/tmp/layer"), ["pyyaml==6.0.3"], THIS_MACHINE)

    assert "--platform" not in command
    assert command[-3:] == ["--target", "/tmp/layer", "pyyaml==6.0.3"]


def _layer_asset_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resolved: list[str]) -> str:
    """The S3 key of the layer asset, synthesized with bundling by a pip stand-in that installs `resolved`."""
    from aws_cdk import App, AssetStaging, Stack

    from infra.constructs.layer import Layer

    def pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if "pip" not in command:  # the bytecode compiler: these packages have no module to compile
            return subprocess.CompletedProcess(command, 0)
        if "--dry-run" in command:
            _report(command, *resolved)
            return subprocess.CompletedProcess(command, 0)
        target = Path(command[command.index("--target") + 1])
        for pin in command[command.index("--target") + 2 :]:
            (target / pin.split("==")[0]).mkdir(parents=True)
            (target / pin.split("==")[0] / "__init__.py").write_text(f"VERSION = {pin.split('==')[1]!r}\n")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr("infra.constructs.layer.subprocess.run", pip)
    AssetStaging.clear_asset_hash_cache()
    app = App(outdir=str(tmp_path / f"out-{len(list(tmp_path.iterdir()))}"))
    stack = Stack(app, "LayerOnly")
    Layer(stack, "Layer")
    template = app.synth().get_stack_by_name("LayerOnly").template
    (layer,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    return str(layer["Properties"]["Content"]["S3Key"])


def test_a_changed_dependency_set_is_a_new_layer_asset_and_the_same_set_the_same_asset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the layer built with one package set, again with the same set, and with one package added
    before = _layer_asset_key(tmp_path, monkeypatch, ["pydantic==2.13.4"])
    again = _layer_asset_key(tmp_path, monkeypatch, ["pydantic==2.13.4"])
    added = _layer_asset_key(tmp_path, monkeypatch, ["pydantic==2.13.4", "aws-xray-sdk==2.15.0"])

    # Then only the changed set gets a new asset, so `cdk deploy` publishes a new layer version for it
    assert before == again
    assert added != before


def test_a_layer_for_this_machine_is_compiled_by_this_machines_python() -> None:
    from infra.constructs.layer import THIS_MACHINE, compile_command

    command = compile_command(Path("/tmp/layer/python"), THIS_MACHINE)

    assert command[:3] == [sys.executable, "-m", "compileall"]
    assert command[command.index("--invalidation-mode") + 1] == "unchecked-hash"
    assert command[command.index("-d") + 1] == "/opt/python"
    assert command[-1] == "/tmp/layer/python"


def test_the_layers_bytecode_is_for_cpython_313_and_never_checked_against_the_source(tmp_path: Path) -> None:
    from infra.constructs.layer import LAMBDA_TARGET, compile_command

    # Given a layer tree with one module
    (tmp_path / "benchgen").mkdir()
    (tmp_path / "benchgen" / "scores.py").write_text("def total(values):\n    return sum(values)\n")

    # When it is compiled for the Lambda runtime
    subprocess.run(compile_command(tmp_path, LAMBDA_TARGET), check=True)

    # Then the module has CPython 3.13's bytecode (magic number 3571) beside it, an unchecked-hash file
    # (PEP 552 flags 0b01), so a zip's timestamps cannot make the runtime compile it again
    compiled = (tmp_path / "benchgen" / "__pycache__" / "scores.cpython-313.pyc").read_bytes()
    assert int.from_bytes(compiled[:2], "little") == 3571
    assert compiled[2:4] == b"\r\n"
    assert int.from_bytes(compiled[4:8], "little") == 0b01
