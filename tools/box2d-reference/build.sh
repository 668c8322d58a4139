#!/bin/sh
# Builds Box2D v3 (the C sources vendored by the crates.io crate boxdd-sys
# 0.6.0, upstream revision 56edae79f2949d86142b03450d5d60f63bcf5a6f) and the
# b2bench driver into tools/box2d-reference/target/. Needs curl, tar and gcc.
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
SHA256=08783b52bc311647b7a227c49f52241007d4a0e8b11d631ecf81b1939d1c3a92
mkdir -p "$BIN/obj"
if [ ! -d "$OUT/$CRATE" ]; then
  curl -sSfL "https://static.crates.io/crates/boxdd-sys/$CRATE.crate" -o "$OUT/$CRATE.crate"
  echo "$SHA256  $OUT/$CRATE.crate" | sha256sum -c -
  tar xzf "$OUT/$CRATE.crate" -C "$OUT"
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
