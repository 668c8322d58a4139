#!/usr/bin/env bash
# Builds the browser page into web/dist: the bitroom-web crate compiled to
# wasm32-unknown-unknown (the `wasm` profile: LTO, no debug info), its JavaScript glue from wasm-bindgen
# (wasm-bindgen-cli, the exact version of the wasm-bindgen crate pinned in
# the workspace Cargo.toml), the page's own files from web/page, and a .gz
# beside the wasm and the scripts (the server sends those to browsers that
# take gzip).
#
# web/dist is committed, so that `cargo run --release --bin bitroom-server
# -- demo --web` works on a machine without the wasm tools. After changing
# web/src, web/page or anything they depend on (sim, protocol), run this and
# commit web/dist. `web/build.sh --check` rebuilds into a temporary folder
# and fails if web/dist differs from it (CI runs that).
#
# Paths in the wasm (panic locations) are remapped to fixed prefixes so the
# output does not depend on where the repository or the cargo registry is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

check=0
if [[ ${1:-} == --check ]]; then check=1; fi

want=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' Cargo.toml)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ -z $have ]]; then
  echo "web/build.sh: wasm-bindgen not found: cargo install wasm-bindgen-cli --version $want --locked" >&2
  exit 2
fi
if [[ $have != "$want" ]]; then
  echo "web/build.sh: wasm-bindgen $have, the crate is $want: cargo install wasm-bindgen-cli --version $want --locked" >&2
  exit 2
fi

cargo_home=${CARGO_HOME:-$HOME/.cargo}
export RUSTFLAGS="--remap-path-prefix=$root=/bitroom --remap-path-prefix=$cargo_home=/cargo"
# A target folder of its own: other RUSTFLAGS would rebuild the host crates.
target=${BITROOM_WASM_TARGET_DIR:-$root/target/wasm}
cargo build --profile wasm --locked -p bitroom-web --target wasm32-unknown-unknown --target-dir "$target"

out=$root/web/dist
if [[ $check -eq 1 ]]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
mkdir -p "$out"
rm -f "$out"/*
wasm-bindgen --target web --no-typescript --out-dir "$out" \
  "$target/wasm32-unknown-unknown/wasm/bitroom_web.wasm"
cp web/page/* "$out"/
for f in "$out"/*.wasm "$out"/*.js; do
  gzip -9 -n -c "$f" >"$f.gz"
done

if [[ $check -eq 1 ]]; then
  if diff -r "$out" web/dist >/dev/null; then
    echo "web/build.sh --check: web/dist matches the source"
  else
    diff -rq "$out" web/dist || true
    echo "web/build.sh --check: web/dist is stale: run web/build.sh and commit web/dist" >&2
    exit 1
  fi
else
  wasm=$(stat -c %s "$out/bitroom_web_bg.wasm")
  gz=$(stat -c %s "$out/bitroom_web_bg.wasm.gz")
  echo "web/dist: bitroom_web_bg.wasm $wasm bytes, $gz gzipped"
fi
