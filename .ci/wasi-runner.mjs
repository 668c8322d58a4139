// Cargo runner for wasm32-wasip1 test binaries, using node's built-in WASI.
//
//   CARGO_TARGET_WASM32_WASIP1_RUNNER="node --no-warnings /abs/path/.ci/wasi-runner.mjs"
//
// Cargo invokes it as `runner <file.wasm> <args...>` (cwd = package dir).
// argv and the environment are passed through to the guest, and the host root
// is preopened as "/", so absolute paths such as
// concat!(env!("CARGO_MANIFEST_DIR"), "/../scenes/x.json") work.  Relative
// paths do NOT follow the host cwd: wasi-libc always starts with cwd "/" (and
// a "." preopen would share the empty prefix with "/" and shadow it), so tests
// should use absolute paths or include_str!/include_bytes!.
// Exits with the guest's exit code; a trap (e.g. panic=abort) exits 134.
import { readFile } from "node:fs/promises";
import process from "node:process";
import { WASI } from "node:wasi";

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  process.stderr.write("usage: wasi-runner.mjs <file.wasm> [args...]\n");
  process.exit(2);
}

const wasi = new WASI({
  version: "preview1",
  args: [wasmPath, ...args],
  env: process.env,
  preopens: { "/": "/" },
  returnOnExit: true,
});

let code;
try {
  const module = await WebAssembly.compile(await readFile(wasmPath));
  const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
  code = wasi.start(instance);
} catch (err) {
  process.stderr.write(`wasi-runner: ${wasmPath}: ${err && err.stack ? err.stack : err}\n`);
  code = err instanceof WebAssembly.RuntimeError ? 134 : 1;
}
process.exitCode = code ?? 0;
