#!/bin/sh
# Builds Box2D v3 (the C sources vendored by the crates.io crate boxdd-sys
# 0.6.0, upstream revision 56edae79f2949d86142b03450d5d60f63bcf5a6f) and the
# b2bench driver into tools/box2d-reference/target/. Needs cargo and gcc.
# Flags as a CMake Release build: -O3, SSE2 only (no AVX2), one thread.
# With AVX2=1: Box2D's BOX2D_AVX2 option (eight-wide solver, -mavx2), built
# into target/avx2/ instead.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE/target
EXTRA=""
BIN=$OUT
if [ "${AVX2:-0}" = 1 ]; then
  EXTRA="-DBOX2D_AVX2 -mavx2"
  BIN=$OUT/avx2
fi
CRATE=boxdd-sys-0.6.0
mkdir -p "$BIN/obj"
if [ ! -d "$OUT/$CRATE" ]; then
  # Through cargo (crates.io checks the crate's checksum): a throwaway
  # package that depends on exactly this version, fetched, then copied out
  # of cargo's registry cache.
  FETCH=$OUT/fetch
  mkdir -p "$FETCH/src"
  printf '[workspace]\n[package]\nname = "b2fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nboxdd-sys = "=0.6.0"\n' > "$FETCH/Cargo.toml"
  : > "$FETCH/src/lib.rs"
  (cd "$FETCH" && cargo fetch --quiet)
  REG=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$CRATE" | head -n 1)
  cp -r "$REG" "$OUT/$CRATE"
fi
SRC=$OUT/$CRATE/third-party/box2d
CFLAGS="-O3 -DNDEBUG -std=c17 -ffp-contract=off $EXTRA"
for f in "$SRC"/src/*.c; do
  gcc $CFLAGS -I"$SRC/include" -I"$SRC/src" -c "$f" -o "$BIN/obj/$(basename "$f" .c).o"
done
rm -f "$BIN/libbox2d.a"
ar rcs "$BIN/libbox2d.a" "$BIN"/obj/*.o
gcc $CFLAGS -I"$SRC/include" "$HERE/b2bench.c" "$BIN/libbox2d.a" -lm -lpthread -o "$BIN/b2bench"
echo "built $BIN/b2bench"
