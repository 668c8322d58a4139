#!/bin/bash
# Box2D's CPU protocol for one scene, Box2D and bitroom alternating:
#   compare.sh SCENE STEPS REPS [BITROOM_BINARY]
# B2BENCH=path picks another Box2D build (AVX2=1 build.sh makes
# target/avx2/b2bench, Box2D's eight-wide AVX2 solver).
# Per run: process CPU time (perf stat task-clock) of STEPS steps minus that
# of 1 step, over STEPS - 1. Prints every run and the medians. Needs perf.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
scene=$1; steps=$2; reps=$3
bitroom=${4:-$HERE/../../target/release/bitroom-server}
b2=${B2BENCH:-$HERE/target/b2bench}
cpu() { perf stat -e task-clock -x, "$@" 2>&1 >/dev/null | grep task-clock | cut -d, -f1; }
for r in $(seq "$reps"); do
  for engine in box2d bitroom; do
    if [ $engine = box2d ]; then
      t1=$(cpu "$b2" "$scene" 1); tn=$(cpu "$b2" "$scene" "$steps")
    else
      t1=$(cpu "$bitroom" sim --scene "$scene" --steps 1)
      tn=$(cpu "$bitroom" sim --scene "$scene" --steps "$steps")
    fi
    echo "$engine $(echo "($tn - $t1) / ($steps - 1)" | bc -l)"
  done
done | python3 -c '
import sys, statistics
runs = {}
for line in sys.stdin:
    engine, ms = line.split()
    runs.setdefault(engine, []).append(float(ms))
for engine, v in runs.items():
    print(f"{engine:8} median {statistics.median(v):7.3f} ms/step  runs: " + " ".join(f"{x:.2f}" for x in v))
b, r = runs["box2d"], runs["bitroom"]
print(f"ratio    median {statistics.median(x / y for x, y in zip(r, b)):.3f} (run by run)")
'
