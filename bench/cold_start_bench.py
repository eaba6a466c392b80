"""The Lambda layer's size, and each handler's cold-start import time against a bare interpreter start.

Size: the layer exactly as deployed (arm64, CPython 3.13 wheels, built by the CDK bundler's own function),
unzipped and zipped, beside what it leaves to the runtime (boto3 and its dependencies, same target).

Cold start: each function assembled as Lambda runs it (its code asset, the layer and the runtime's boto3
built for this machine's Python, the environment the template sets; see infra/deployed.py), and its
handler module imported in a fresh `python -I -S` process, several times; the median wall time is
compared with a bare `python -I -S -c pass` measured in the same run. Lambda's layer and code asset are
read-only: the layer ships its bytecode (compiled when it is built), the code asset none, so every cold
start compiles the asset's modules: the first column measures that (`-B`, no bytecode written); the
second, the same import with the asset's bytecode compiled too. A third column is the first with tracing
switched off (POWERTOOLS_TRACE_DISABLED), which the stack does not do: it shows what active tracing's
X-Ray SDK adds to a start. Each figure is the
median wall time; the CPU time of the same starts is printed beside the first column. The target, a
handler imported as deployed in under 250 ms, is judged on that CPU time: on a machine shared with other
work, wall time also counts the time spent waiting for a core, which a Lambda sandbox does not share.

    python bench/cold_start_bench.py               # 7 starts per function
    python bench/cold_start_bench.py --runs 15 --json cold-start.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

# Lambda's limit on a function's unzipped code and layers together.
UNZIPPED_LIMIT = 250 * 1024 * 1024
# The project's target for one handler's import, as deployed.
IMPORT_TARGET_SECONDS = 0.250


def tree_size(root: Path) -> tuple[int, int]:
    """Total bytes and number of files under root."""
    files = [path for path in root.rglob("*") if path.is_file()]
    return sum(path.stat().st_size for path in files), len(files)


def zipped_size(root: Path, archive: Path) -> int:
    """Bytes of root zipped (deflate) the way a layer asset is: its folder name at the archive's top."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zipped.write(path, Path(root.name) / path.relative_to(root))
    return archive.stat().st_size


def children_cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def median_seconds(run: Any, runs: int) -> tuple[float, float]:
    """Median wall and CPU time of `runs` calls of run(), each a fresh process that must succeed."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu_before, started = children_cpu_seconds(), time.perf_counter()
        done = run()
        walls.append(time.perf_counter() - started)
        cpus.append(children_cpu_seconds() - cpu_before)
        if done.returncode != 0:
            raise SystemExit(f"a measured start failed:\n{done.stderr}")
    return statistics.median(walls), statistics.median(cpus)


def without_tracing(function: Any) -> Any:
    """The function as deployed, but with powertools' tracing switched off in its environment."""
    environment = function.properties.get("Environment", {})
    variables = {**environment.get("Variables", {}), "POWERTOOLS_TRACE_DISABLED": "true"}
    properties = {**function.properties, "Environment": {**environment, "Variables": variables}}
    return dataclasses.replace(function, properties=properties)


def measure_sizes(root: Path) -> dict[str, Any]:
    from infra.constructs.layer import LAMBDA_TARGET, build_layer
    from infra.deployed import build_runtime

    layer = build_layer(root / "layer", LAMBDA_TARGET)
    runtime = build_runtime(root / "runtime" / "python", LAMBDA_TARGET)
    layer_bytes, layer_files = tree_size(layer)
    runtime_bytes, _ = tree_size(runtime)
    return {
        "layer_unzipped_bytes": layer_bytes,
        "layer_zipped_bytes": zipped_size(layer, root / "layer.zip"),
        "layer_files": layer_files,
        "runtime_provided_unzipped_bytes": runtime_bytes,
        "runtime_provided_zipped_bytes": zipped_size(runtime, root / "runtime.zip"),
    }


def measure_imports(root: Path, runs: int) -> dict[str, Any]:
    from infra.constructs.layer import THIS_MACHINE, build_layer
    from infra.deployed import build_runtime, deployed_functions
    from infra.synth import synth_template

    runtime = build_runtime(root / "runtime", THIS_MACHINE)
    # Assumed: the runtime's own packages come with their bytecode, as pip installs them by default.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(runtime)], check=True)
    functions = deployed_functions(
        synth_template(),
        root / "tasks",
        layer_root=build_layer(root / "layer", THIS_MACHINE),
        runtime_root=runtime,
    )
    bare = [sys.executable, "-I", "-S", "-B", "-c", "pass"]
    bare_s, _ = median_seconds(lambda: subprocess.run(bare, capture_output=True, check=False), runs)
    results: dict[str, Any] = {
        "bare_seconds": bare_s,
        "runs": runs,
        "target_seconds": IMPORT_TARGET_SECONDS,
        "functions": {},
    }
    columns = (("no_bytecode", False, False), ("tracing_off", False, True), ("with_bytecode", True, False))
    for column, bytecode, quiet in columns:
        for deployed in functions:
            function = without_tracing(deployed) if quiet else deployed
            code = f"import {function.handler_module}"
            if bytecode:
                function.run(code)  # compiles and caches bytecode once, as a warm layer would have it
            wall, cpu = median_seconds(lambda f=function, c=code, b=bytecode: f.run(c, bytecode=b), runs)
            measured = results["functions"].setdefault(function.name, {})
            measured[f"{column}_seconds"] = wall
            measured[f"{column}_cpu_seconds"] = cpu
    for measured in results["functions"].values():
        measured["meets_target"] = measured["no_bytecode_cpu_seconds"] < IMPORT_TARGET_SECONDS
    return results


def report(sizes: dict[str, Any], imports: dict[str, Any], runs: int) -> None:
    mb = 1024 * 1024
    unzipped, zipped = sizes["layer_unzipped_bytes"], sizes["layer_zipped_bytes"]
    print("layer as deployed (arm64, CPython 3.13):")
    print(
        f"  {unzipped:,} bytes unzipped ({unzipped / mb:.1f} MiB, {sizes['layer_files']:,} files, "
        f"{unzipped / UNZIPPED_LIMIT:.1%} of Lambda's 250 MiB limit), {zipped:,} bytes zipped "
        f"({zipped / mb:.1f} MiB)"
    )
    left_out = sizes["runtime_provided_unzipped_bytes"]
    print(
        f"  left to the runtime (boto3 and its dependencies): {left_out:,} bytes unzipped, "
        f"{sizes['runtime_provided_zipped_bytes']:,} zipped; bundling them would make the layer "
        f"x{(unzipped + left_out) / unzipped:.2f} its size"
    )
    print()
    print(import_table(imports, runs))


def import_table(imports: dict[str, Any], runs: int | str) -> str:
    """The cold-start table: each handler's import time beside the bare interpreter, against the target."""
    ms = 1000
    bare, target = imports["bare_seconds"], imports["target_seconds"]
    lines = [
        f"cold-start import, median of {runs} fresh `python -I -S` processes ({sys.version.split()[0]}); "
        f"target: a handler imported as deployed in under {target * ms:.0f} ms of CPU",
        f"  {'':<22}{'as deployed: wall (cpu)':>26}{'tracing off':>14}{'bytecode':>11}  target",
        f"  {'bare python -c pass':<22}{bare * ms:>15.0f} ms",
    ]
    for name, result in imports["functions"].items():
        cold, cpu = result["no_bytecode_seconds"], result["no_bytecode_cpu_seconds"]
        quiet, warm = result["tracing_off_seconds"], result["with_bytecode_seconds"]
        verdict = "PASS" if result["meets_target"] else "MISS"
        lines.append(
            f"  {name:<22}{cold * ms:>15.0f} ms ({cpu * ms:>4.0f} ms)"
            f"{quiet * ms:>11.0f} ms{warm * ms:>8.0f} ms  {verdict}"
        )
    met = sum(result["meets_target"] for result in imports["functions"].values())
    lines.append(
        f"  {met} of {len(imports['functions'])} handlers under {target * ms:.0f} ms of CPU as deployed"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per measurement (7)")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchgen-cold-start-") as tmp:
        root = Path(tmp)
        sizes = measure_sizes(root / "lambda")
        imports = measure_imports(root / "here", args.runs)
    report(sizes, imports, args.runs)
    if args.json is not None:
        args.json.write_text(json.dumps({"sizes": sizes, "imports": imports}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
