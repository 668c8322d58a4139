#!/usr/bin/env bash
# Stage-by-stage A/B of bitroom builds on one scene: the medians of each
# stage's per-step median (`bitroom-server sim --profile`) over copies and
# rounds, one line per build.
#
#   tools/ab-profile.sh SCENE STEPS COPIES ROUNDS BIN...
#
# e.g. `tools/ab-profile.sh large_pyramid 400 3 2 /tmp/bin-old
# target/release/bitroom-server` (copy the binary you build against first:
# a rebuild overwrites target/release). Each BIN is copied COPIES times and
# every round runs every copy of every build in turn, so the builds share
# the machine's mood and where a binary's file lies in memory (on this VM
# that alone moves a stage by up to ±10 %). Stages: prepare, substeps,
# finish, collide and the whole step, in ms. docs/benchmarks.md quotes it
# (as `/tmp/ab2.sh` before it was kept here). Noise to expect: ±2 % on
# large_pyramid, ±8 % on many_pyramids between copies of one binary.
set -euo pipefail
if [ $# -lt 5 ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
scene=$1 steps=$2 copies=$3 rounds=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names=()
for b in "$@"; do
  [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }
  n=$(( ${#names[@]} ))
  names+=("$n:$b")
  for c in $(seq "$copies"); do cp "$b" "$dir/bin$n.$c"; done
done
for r in $(seq "$rounds"); do
  for c in $(seq "$copies"); do
    for n in $(seq 0 $(( $# - 1 ))); do
      "$dir/bin$n.$c" sim --scene "$scene" --steps "$steps" --profile 2>&1 |
        awk -v n="$n" '/^  (prepare|substeps|finish|collide|step) /{print n, $1, $3}'
    done
  done
done > "$dir/out"
for entry in "${names[@]}"; do
  n=${entry%%:*}
  line="$(basename "${entry#*:}")"
  for st in prepare substeps finish collide step; do
    med=$(awk -v n="$n" -v st="$st" '$1 == n && $2 == st {print $3}' "$dir/out" | sort -g |
      awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    line="$line $st=$med"
  done
  runs=$(awk -v n="$n" '$1 == n && $2 == "step"' "$dir/out" | wc -l)
  echo "$line (n=$runs)"
done
