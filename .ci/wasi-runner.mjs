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
//
// Test isolation: a libtest binary asked to run all its tests (only flags, no
// filter) is run one test per node process (listed with `--list`, then each
// with `--exact NAME`). node 20's garbage collector crashes intermittently
// (V8_Fatal / SIGSEGV, after every test passed or at a memory.grow) late in
// a long run of this workload, whatever the guest computes; short runs do
// not. Set BITROOM_WASI_ISOLATE=0 to run everything in one process.
import { readFile } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { WASI } from "node:wasi";

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  process.stderr.write("usage: wasi-runner.mjs <file.wasm> [args...]\n");
  process.exit(2);
}

const isolate =
  process.env.BITROOM_WASI_ISOLATE !== "0" &&
  args.every((a) => a.startsWith("-")) &&
  !args.some((a) => ["--list", "--exact", "--help", "-h"].includes(a));

function runChild(childArgs, capture) {
  return spawnSync(process.execPath, [...process.execArgv, process.argv[1], wasmPath, ...childArgs], {
    env: { ...process.env, BITROOM_WASI_ISOLATE: "0" },
    stdio: capture ? ["inherit", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
}

if (isolate) {
  const listed = runChild(["--list", "--format", "terse"], true);
  if (listed.status !== 0) {
    process.stderr.write(`wasi-runner: listing tests failed (${listed.status ?? listed.signal})\n`);
    process.exit(listed.status || 1);
  }
  const names = listed.stdout
    .split("\n")
    .filter((l) => l.endsWith(": test"))
    .map((l) => l.slice(0, -": test".length));
  const failed = [];
  for (const name of names) {
    const r = runChild([...args, "--exact", name], false);
    if (r.status !== 0) failed.push(`${name} (${r.status ?? r.signal})`);
  }
  process.stdout.write(
    `\nwasi-runner: ${names.length - failed.length} of ${names.length} tests passed, each in its own process\n`,
  );
  if (failed.length > 0) {
    process.stderr.write(`wasi-runner: failed: ${failed.join(", ")}\n`);
    process.exit(101);
  }
  process.exit(0);
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
