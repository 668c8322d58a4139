#!/bin/bash
# A room tick's instructions and cache misses, counted instead of timed:
#   tools/room-counts.sh [ROOM_LOAD_BINARY...]
#
# The timed figures of a room's cost (tools/room-cost.sh, room_load with a
# pause) move 10-20 % between hours on this VM, more than most changes to
# the tick. This counts them: `protocol/examples/room_load.rs` ticks ROOMS
# default-arena rooms (8 players each) in turn under callgrind, whose cache
# simulation has a last level of one core's L2 (COUNTS_LL, default 1 MiB,
# 8-way, 64-byte lines). Eight rooms' data do not fit in it, so each tick
# starts as cold as a server's do, where 20 or more rooms share a core.
# Only `ServerRoom::tick` is counted. Each binary runs WARM rounds, then
# A and B more; the difference divided by (B − A) × ROOMS is one room
# tick. Instructions repeat to 0.01 %; misses depend on addresses too
# (within about 2 %). At the 15-20 ns an L2 miss that hits the L3 takes
# on this kind of CPU (published, not measured here), the misses are most
# of what a cold tick costs over a hot one (docs/fleet.md).
#
# valgrind cannot run AVX-512: without arguments, room_load is built for
# x86-64-v3 (AVX2) into target/counts. Binaries given must be built so too
# (RUSTFLAGS="-C target-cpu=x86-64-v3"). Environment: ROOMS (8), WARM
# (300), A (20), B (40). About 2 minutes a binary on an idle machine here.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
command -v valgrind > /dev/null || {
  echo "room-counts.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
}
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$ROOT" && RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR="$ROOT/target/counts" \
    cargo build --quiet --release -p bitroom-protocol --example room_load)
  bins=("$ROOT/target/counts/release/examples/room_load")
fi
ll=${COUNTS_LL:-1048576,8,64}
rooms=${ROOMS:-8} warm=${WARM:-300} a=${A:-20} b=${B:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "Ir D1misses LLmisses" of one run (events Ir Dr Dw I1mr D1mr D1mw ILmr
# DLmr DLmw), or "fail".
count() {
  local bin=$1 rounds=$2
  rm -f "$tmp/out"
  if ! valgrind --tool=callgrind --cache-sim=yes --LL="$ll" --toggle-collect='*ServerRoom*::tick' \
    --callgrind-out-file="$tmp/out" "$bin" "$warm" "$rounds" 1 arena "$rooms" 0 > "$tmp/log" 2>&1; then
    echo "room-counts.sh: valgrind failed on $bin (is it built for AVX-512?)" >&2
    tail -3 "$tmp/log" >&2
    echo "fail fail fail"
    return
  fi
  sed -n 's/^summary: //p' "$tmp/out" | head -1 | awk '{print $1, $5 + $6, $8 + $9}'
}
echo "| binary | instructions a room tick | L1 data misses | last-level misses |"
echo "|---|---:|---:|---:|"
for bin in "${bins[@]}"; do
  read -r ia da la <<< "$(count "$bin" "$a")"
  read -r ib db lb <<< "$(count "$bin" "$b")"
  if [ "$ia" = fail ] || [ "$ib" = fail ]; then
    echo "room-counts.sh: no count for $bin" >&2
    exit 1
  fi
  awk -v n="$(( (b - a) * rooms ))" -v bin="$bin" -v ia="$ia" -v ib="$ib" -v da="$da" -v db="$db" \
    -v la="$la" -v lb="$lb" 'BEGIN {
      printf "| %s | %.0f | %.0f | %.0f |\n", bin, (ib - ia) / n, (db - da) / n, (lb - la) / n
    }'
done
echo
echo "$rooms default-arena rooms of 8 players ticked in turn after $warm rounds;"
echo "ticks $a..$b of each; callgrind, last level $ll."
