#!/bin/bash
# The seven Box2D benchmark scenes, Box2D v3 and bitroom side by side, one
# command:
#   tools/box2d-reference/table.sh [ROUNDS] [BITROOM_BINARY...]
# Each engine with its own timer and Box2D's protocol (the first step
# untimed, ms per step = total of steps 1..N-1 / (N-1); N as in
# benchmark-scenes.md): b2bench's wall_mean_ms_per_step and
# `bitroom-server sim --bench`'s mean. ROUNDS (default 3) rounds, the engines
# alternating scene by scene within each round; the table shows each one's
# median. Several bitroom binaries (e.g. a build of another commit) get a
# column each, the first one's ratio to Box2D last. A binary given as
# BIN:ARGS runs with ARGS added (e.g. `target/release/bitroom-server:--threads 2`);
# B2BENCH_WORKERS=N runs Box2D on N workers (its own scheduler). Builds
# Box2D first if build.sh has not. Prints a markdown table.
#
# Each round runs fresh copies of the binaries (Box2D's too): on this VM
# where a binary's file happens to lie in memory moves its speed by up to
# ±10 % (four copies of one bitroom binary ran many_pyramids' substeps in
# 6.6 to 8.3 ms over two rounds, the slowest copy the slowest in both), so
# the median of the rounds is one over placements as well as over time.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
rounds=${1:-3}
shift || true
b2=${B2BENCH:-$HERE/target/b2bench}
if [ ! -x "$b2" ]; then
  "$HERE/build.sh" >&2
fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$ROOT" && cargo build --quiet --release --bin bitroom-server)
  bins=("$ROOT/target/release/bitroom-server")
fi
scenes="large_pyramid:500 many_pyramids:200 joint_grid:500 tumbler:750 smash:300 rain:1000 spinner:500"
copies=$(mktemp -d)
trap 'rm -rf "$copies"' EXIT
for r in $(seq "$rounds"); do
  rm -f "$copies"/*
  cp "$b2" "$copies/b2bench"
  for i in "${!bins[@]}"; do
    cp "${bins[$i]%%:*}" "$copies/bitroom$i"
  done
  for entry in $scenes; do
    scene=${entry%%:*}; steps=${entry##*:}
    ms=$("$copies/b2bench" "$scene" "$steps" | sed -n 's/.*wall_mean_ms_per_step=\([0-9.]*\).*/\1/p')
    echo "box2d $scene $ms"
    for i in "${!bins[@]}"; do
      bin=$copies/bitroom$i; args=""
      case ${bins[$i]} in *:*) args=${bins[$i]#*:} ;; esac
      # shellcheck disable=SC2086 # ARGS split into words on purpose
      ms=$("$bin" sim --scene "$scene" --steps "$steps" --bench $args |
        sed -n 's/.* mean \([0-9.]*\) ms.*/\1/p')
      echo "bitroom$i $scene $ms"
    done
  done
done | python3 -c '
import sys, statistics, math
bins = sys.argv[1:]
runs = {}
order = []
for line in sys.stdin:
    engine, scene, ms = line.split()
    if scene not in order:
        order.append(scene)
    runs.setdefault((engine, scene), []).append(float(ms))
cols = ["box2d"] + [f"bitroom{i}" for i in range(len(bins))]
import os
workers = os.environ.get("B2BENCH_WORKERS", "1")
names = ["Box2D v3 (SSE2)" + (f", {workers} workers" if workers not in ("", "1") else "")] + [f"bitroom ({b})" for b in bins]
print("| scene | " + " | ".join(names) + " | bitroom / Box2D |")
print("|---|" + "---:|" * (len(cols) + 1))
med = {c: {} for c in cols}
for s in order:
    row = []
    for c in cols:
        med[c][s] = statistics.median(runs[(c, s)])
        row.append(f"{med[c][s]:.2f}")
    ratio = med["bitroom0"][s] / med["box2d"][s]
    print(f"| {s} | " + " | ".join(row) + f" | {ratio:.2f} |")
geo = {c: math.exp(sum(math.log(med[c][s]) for s in order) / len(order)) for c in cols}
gr = geo["bitroom0"] / geo["box2d"]
print("| geomean | " + " | ".join(f"{geo[c]:.2f}" for c in cols) + f" | {gr:.2f} |")
print(f"\nms per step, median of '"$rounds"' rounds, steps 1..N-1, each engine with its own timer")
' "${bins[@]}"
