// Compiles every module under a folder to bytecode for CPython 3.13, the Lambda python3.13 runtime's
// interpreter, with the CPython 3.13 that Pyodide builds for WebAssembly: bytecode does not depend on the
// platform, only on the interpreter's version, and this one comes from the npm registry and runs on the
// Node.js that CDK needs anyway, where no native CPython 3.13 can be installed.
//
//   node compile.mjs <folder> <as> <major.minor>
//
// <as> is the path the folder has where the bytecode is read (/opt/python in a layer): tracebacks name it,
// and the files do not depend on where they were built. The .pyc files are unchecked-hash ones (PEP 552):
// a layer's files are extracted with the zip's timestamps, which a timestamp .pyc would take for stale.
import { loadPyodide } from "pyodide";

const [folder, recordedAs, version] = process.argv.slice(2);
if (!folder || !recordedAs || !version) {
  console.error("usage: node compile.mjs <folder> <as> <major.minor>");
  process.exit(2);
}
const python = await loadPyodide({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
python.FS.mkdirTree("/layer");
python.FS.mount(python.FS.filesystems.NODEFS, { root: folder }, "/layer");
python.globals.set("recorded_as", recordedAs);
python.globals.set("wanted", version);
const compiled = python.runPython(`
import compileall
import py_compile
import sys

found = f"{sys.version_info.major}.{sys.version_info.minor}"
if found != wanted:
    raise SystemExit(
        f"this compiler is CPython {found} and the layer is for {wanted}: pin a Pyodide built on "
        f"CPython {wanted} in infra/bytecode/package.json"
    )
bool(
    compileall.compile_dir(
        "/layer",
        ddir=recorded_as,
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
)
`);
process.exit(compiled ? 0 : 1);
