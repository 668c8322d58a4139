#!/bin/sh
# Regenerates Box2D v3's reference figures for the behaviour scenarios and
# prints them side by side with bitroom's:
#   tools/box2d-compare/compare.sh [--before FILE] [--json OUT]
# Builds Box2D first if tools/box2d-reference has not (its build.sh), then
# b2compare.c against it, writes shared/tests/data/box2d_reference.json (the
# file the Rust tests read; commit it when it changes) and runs the
# box2d_compare example (extra arguments go to it). Needs cargo and gcc.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REF=$HERE/../box2d-reference
if [ ! -f "$REF/target/libbox2d.a" ]; then
  "$REF/build.sh"
fi
SRC=$REF/target/boxdd-sys-0.6.0/third-party/box2d
mkdir -p "$HERE/target"
gcc -O2 -Wall -DNDEBUG -std=c17 -ffp-contract=off -I"$SRC/include" "$HERE/b2compare.c" \
  "$REF/target/libbox2d.a" -lm -lpthread -o "$HERE/target/b2compare"
"$HERE/target/b2compare" > "$HERE/target/reference.json"
cp "$HERE/target/reference.json" "$ROOT/shared/tests/data/box2d_reference.json"
cd "$ROOT"
cargo run --quiet --release -p bitroom-sim --example box2d_compare -- "$@"
