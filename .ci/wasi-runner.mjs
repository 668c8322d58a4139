// Cargo runner for wasm32-wasip1 test binaries, using node's built-in WASI.
//
//   CARGO_TARGET_WASM32_WASIP1_RUNNER="node --no-warnings /abs/path/.ci/wasi-runner.mjs"
//
// Cargo invokes it as `runner <file.wasm> <args...>` with the package dir as
// cwd.  argv and the environment are passed through to the guest; the host
// cwd is preopened as "." and the host root as "/", so both relative paths and
// absolute ones (e.g. built from env!("CARGO_MANIFEST_DIR")) resolve.  Exits
// with the guest's exit code; a trap (panic=abort on wasm) exits 134.
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
  preopens: { ".": process.cwd(), "/": "/" },
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
