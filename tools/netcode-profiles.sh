#!/usr/bin/env bash
# Runs issue 23's bad-network profiles against a fresh local server with 8
# bots behind bitroom-client's link conditioner, RUNS times each, and keeps
# every run's table under OUT (default: target/netcode-profiles/).
#
#   tools/netcode-profiles.sh [PROFILE...]      profiles: p10 p20 burst clean
#   RUNS=5 DURATION=90s BIN=target/release OUT=dir tools/netcode-profiles.sh
#
# Build first: cargo build --release --bin bitroom-server --bin bitroom-client
# Extra bots options go in BOTS_ARGS (e.g. BOTS_ARGS="--send-rate 30").
set -u
BIN=${BIN:-target/release}
RUNS=${RUNS:-5}
DURATION=${DURATION:-90s}
OUT=${OUT:-target/netcode-profiles}
PORT=${PORT:-47051}
BOTS_ARGS=${BOTS_ARGS:-}
SERVE_ARGS=${SERVE_ARGS:-}
mkdir -p "$OUT"

profile() {
    case "$1" in
        p10) echo "--sim-latency 100ms --sim-jitter 30ms --sim-loss 10% --sim-dup 2% --sim-reorder 2%" ;;
        p20) echo "--sim-latency 150ms --sim-jitter 50ms --sim-loss 20%" ;;
        # Bursts of 4 datagrams (5.6 % lost overall), 256 kbit/s with an
        # 8 KB queue, a 2 s outage in the middle of the run.
        burst)
            local half
            half=$(( ${DURATION%s} / 2 ))
            echo "--sim-latency 60ms --sim-jitter 20ms --sim-burst 2%,25%,75% --sim-rate 256kbit --sim-queue 8KB --sim-outage ${half}s+2s"
            ;;
        clean) echo "" ;;
        *) echo "unknown profile $1" >&2; exit 2 ;;
    esac
}

run_one() {
    local name=$1 run=$2 dir
    dir=$(mktemp -d "$OUT/$name-$run.XXXX")
    uptime >"$dir/uptime"
    # shellcheck disable=SC2086
    "$BIN/bitroom-server" serve --bind "127.0.0.1:$PORT" --cert-dir "$dir" --stats-every 10s $SERVE_ARGS \
        >"$dir/server.log" 2>&1 &
    local server=$!
    for _ in $(seq 100); do
        grep -q sha256 "$dir/server.log" 2>/dev/null && break
        sleep 0.1
    done
    local fp
    fp=$(grep -o -E '[0-9a-f]{64}' "$dir/server.log" | head -1)
    # shellcheck disable=SC2046,SC2086
    "$BIN/bitroom-client" bots --server "127.0.0.1:$PORT" --cert-sha256 "$fp" --room "$name" \
        --count 8 --duration "$DURATION" --sim-seed "$run" $(profile "$name") $BOTS_ARGS \
        >"$dir/table.txt" 2>"$dir/bots.log"
    local code=$?
    echo "$code" >"$dir/exit"
    uptime >>"$dir/uptime"
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    echo "== $name run $run: exit $code ($dir)"
    cat "$dir/table.txt"
}

profiles=("$@")
[ ${#profiles[@]} -eq 0 ] && profiles=(p10 p20 burst)
for p in "${profiles[@]}"; do
    for r in $(seq "$RUNS"); do
        run_one "$p" "$r"
    done
done
