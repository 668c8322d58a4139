#!/usr/bin/env bash
# How much a crash loses from `serve --record`: starts a recording server
# with two bots, kill -9s it at a random moment, and compares the last tick
# in the replay file with the tick the room was at when it died. Repeats
# KILLS times (default 12) and prints each loss and the worst, in ticks and
# milliseconds.
#
#   tools/crash-loss.sh [KILLS]
#
# The room's tick n is due at (room start + n / 60 s), and the replay file
# is named <room>-<unix ms at the room's start>.brr, so at the kill time K
# the room had reached tick floor((K - start) * 60 / 1000) if on time. The
# loss in ms is K minus the due time of the last recorded tick: the span of
# play the file does not have. Loopback only; every process is ours and is
# stopped before the next run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
KILLS=${1:-12}
RATE=60
nice -n 10 cargo build --release --quiet --bin bitroom-server --bin bitroom-client
SERVER=target/release/bitroom-server
CLIENT=target/release/bitroom-client
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
worst_ticks=0
worst_ms=0
for i in $(seq 1 "$KILLS"); do
  port=$((47100 + i))
  rec="$WORK/rec$i"
  log="$WORK/serve$i.log"
  mkdir -p "$WORK/cert"
  "$SERVER" serve --bind "127.0.0.1:$port" --record "$rec" --cert-dir "$WORK/cert" \
    --tick-rate $RATE >"$log" 2>&1 &
  srv=$!
  fp=""
  for _ in $(seq 1 100); do
    fp=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\).*/\1/p' "$log" | head -1)
    [[ -n $fp ]] && break
    sleep 0.05
  done
  [[ -n $fp ]] || { echo "server $i did not start: $(cat "$log")"; kill -9 $srv 2>/dev/null; exit 1; }
  "$CLIENT" bots --server "127.0.0.1:$port" --cert-sha256 "$fp" --count 2 \
    --duration 60s >"$WORK/bots$i.log" 2>&1 &
  bots=$!
  for _ in $(seq 1 100); do
    compgen -G "$rec/*.brr" >/dev/null && break
    sleep 0.05
  done
  # A random moment 1.5–3.5 s in, so kills land at every phase of the flush.
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 1.5 + 2 * r / 32768 }')"
  kill_ms=$(date +%s%3N)
  kill -9 $srv
  wait $srv 2>/dev/null || true
  kill $bots 2>/dev/null || true
  wait $bots 2>/dev/null || true
  file=$(compgen -G "$rec/*.brr" | head -1)
  start_ms=$(basename "$file" .brr | sed 's/.*-//')
  last=$("$SERVER" replay info "$file" | sed -n 's/^ticks *[0-9]* to \([0-9]*\) .*/\1/p')
  reached=$(( (kill_ms - start_ms) * RATE / 1000 ))
  lost_ticks=$(( reached - last ))
  lost_ms=$(( kill_ms - start_ms - last * 1000 / RATE ))
  printf 'kill %2d: room at tick %4d, file ends at tick %4d: lost %2d ticks, %3d ms\n' \
    "$i" "$reached" "$last" "$lost_ticks" "$lost_ms"
  (( lost_ticks > worst_ticks )) && worst_ticks=$lost_ticks
  (( lost_ms > worst_ms )) && worst_ms=$lost_ms
done
echo "worst over $KILLS kills: $worst_ticks ticks, $worst_ms ms"
