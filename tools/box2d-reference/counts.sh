#!/bin/bash
# Instructions and cache misses per step, Box2D v3 against bitroom, counted
# instead of timed:
#   tools/box2d-reference/counts.sh [BITROOM_BINARY...]
# Each engine's step runs under callgrind (valgrind) with its cache
# simulation, the last level sized as one core's L2 of this machine
# (COUNTS_LL, default 1 MiB, 8-way, 64-byte lines, as
# /sys/devices/system/cpu/cpu0/cache/index2 says), collecting only inside
# the step function (Box2D's `b2World_Step`, bitroom's `step_observed`).
# Each scene is run to step A and to step B; the difference divided by
# B − A is the cost of a step in that window, without the scene's build
# and first steps. Instruction counts repeat to 0.1 % (miss counts depend on
# addresses too, within about 2 %): a change that saves instructions shows
# here even when the machine's timings drift by 10-20 % (this VM has no
# hardware counters, so `perf stat` cannot count them).
#
# valgrind cannot run AVX-512: bitroom is built for x86-64-v3 (AVX2, four
# lanes) into target/counts unless binaries are given (build those with
# RUSTFLAGS="-C target-cpu=x86-64-v3"). Box2D is its default SSE2 build
# (four lanes of f32). Prints a markdown table; the first bitroom binary's
# ratios last. About 14 minutes with the build, 10 per further binary.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
command -v valgrind > /dev/null || {
  echo "counts.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
}
b2=${B2BENCH:-$HERE/target/b2bench}
if [ ! -x "$b2" ]; then
  "$HERE/build.sh" >&2
fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$ROOT" && RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR="$ROOT/target/counts" \
    cargo build --quiet --release --bin bitroom-server)
  bins=("$ROOT/target/counts/release/bitroom-server")
fi
ll=${COUNTS_LL:-1048576,8,64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# scene:A:B, windows early enough that valgrind's slowdown stays bearable.
scenes=${COUNTS_SCENES:-"large_pyramid:4:12 many_pyramids:2:5 joint_grid:4:12 tumbler:100:120 smash:80:88 rain:100:120 spinner:20:40"}
# Prints "Ir misses" for one run: instructions, and data reads and writes
# that miss the last level.
# A run valgrind could not finish (a binary built for AVX-512, say) prints
# "fail", which stops the table rather than leaving a number from another run.
count() {
  local fn=$1
  shift
  rm -f "$tmp/out"
  if ! valgrind --tool=callgrind --cache-sim=yes --LL="$ll" --toggle-collect="$fn" \
    --callgrind-out-file="$tmp/out" "$@" > "$tmp/log" 2>&1; then
    echo "counts.sh: valgrind failed on: $* (is it built for AVX-512?)" >&2
    grep -m 3 -i 'unhandled\|illegal\|terminating' "$tmp/log" >&2 || tail -3 "$tmp/log" >&2
    echo "fail fail"
    return
  fi
  sed -n 's/^summary: //p' "$tmp/out" | head -1 > "$tmp/sum"
  # Events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
  awk '{print $1, $8 + $9}' "$tmp/sum"
}
for entry in $scenes; do
  IFS=: read -r scene a b <<< "$entry"
  for n in "$a" "$b"; do
    echo "box2d $scene $n $(count b2World_Step "$b2" "$scene" "$n")"
    for i in "${!bins[@]}"; do
      echo "bitroom$i $scene $n $(count '*step_observed*' "${bins[$i]}" sim --scene "$scene" --steps "$n" --bench)"
    done
  done
done | python3 -c '
import sys
bins = sys.argv[1:]
runs, order = {}, []
for line in sys.stdin:
    engine, scene, n, ir, miss = line.split()
    if ir == "fail":
        sys.exit(f"counts.sh: no count for {engine} on {scene} at step {n}")
    if scene not in order:
        order.append(scene)
    runs.setdefault((engine, scene), []).append((int(n), int(ir), int(miss)))
cols = ["box2d"] + [f"bitroom{i}" for i in range(len(bins))]
def per_step(c, s):
    (na, ia, ma), (nb, ib, mb) = sorted(runs[(c, s)])
    return (ib - ia) / (nb - na), (mb - ma) / (nb - na), (na, nb)
names = ["Box2D"] + [f"bitroom{i}" for i in range(len(bins))]
print("| scene | steps | " + " | ".join(f"{n} Minstr" for n in names) + " | ratio | "
      + " | ".join(f"{n} kmiss" for n in names) + " | ratio |")
print("|---|---|" + "---:|" * (2 * len(cols) + 2))
for s in order:
    v = {c: per_step(c, s) for c in cols}
    na, nb = v["box2d"][2]
    ir = [v[c][0] for c in cols]
    ms = [v[c][1] for c in cols]
    print(f"| {s} | {na}..{nb} | " + " | ".join(f"{x / 1e6:.1f}" for x in ir)
          + f" | {ir[1] / ir[0]:.2f} | " + " | ".join(f"{x / 1e3:.0f}" for x in ms)
          + f" | {ms[1] / max(ms[0], 1):.2f} |")
print()
print("Per step over the window: instructions (millions) and data misses of the")
print("simulated last level (thousands, reads + writes), callgrind, only inside")
print("the step function.")
for i, b in enumerate(bins):
    print(f"bitroom{i}: {b}")
' "${bins[@]}"
