#!/usr/bin/env bash
# The CPU cost of a room: one server, R rooms × 8 load clients (a second
# process), the server's own CPU time over a steady window.
#
#   tools/room-cost.sh [-r ROOMS] [-s SECONDS] [-n RUNS] BUILD[:SERVER_ARGS] ...
#
# Each BUILD is a directory holding bitroom-server and bitroom-client (e.g.
# target/release, or a copy of an older build's), optionally followed by
# ':' and more `serve` arguments for that run (e.g. "target/release:--threads
# 1"; a `--scene S` there is given to the load clients too, e.g.
# "target/release:--scene arena:0" for rooms of avatars only). With
# several builds the runs alternate (A B A B ...), so they share the
# machine's mood. Per run
# it prints the server's CPU (utime+stime from /proc/PID/stat over the
# window, after the ramp and a settling pause) as % of one core (and the
# kernel's part of it, stime: on loopback that includes delivering each
# datagram the server sends to its client's socket), that
# divided by the rooms, the load clients' CPU, and the server's own tick
# time p50 and lateness p50/p99 from its status lines in the window.
#
# The server runs at normal priority with --shed-lateness 0 (every client
# joins), no per-address connection or room-creation limits (the load
# clients share one address), and the default arena at 60 Hz. A run where
# fewer than ROOMS × 8 clients were in their rooms says so.
set -euo pipefail

ROOMS=20 SECS=30 RUNS=1
while getopts "r:s:n:" o; do
  case $o in
    r) ROOMS=$OPTARG ;;
    s) SECS=$OPTARG ;;
    n) RUNS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || { sed -n 2,20p "$0"; exit 2; }

HZ=$(getconf CLK_TCK)
cpu_ticks() { # pid -> utime+stime
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
sys_ticks() { # pid -> stime (the kernel's part)
  awk '{ sub(/^.*\) /, ""); print $13 }' "/proc/$1/stat"
}

# The processes of the run under way, stopped if the script ends early.
server='' load=''
stop_run() {
  [[ -n $load ]] && kill -INT "$load" 2>/dev/null
  [[ -n $server ]] && kill -INT "$server" 2>/dev/null
  return 0
}
trap stop_run EXIT

run_one() { # build_dir[:server args]
  local dir=${1%%:*} label=$1 extra=() work port fp t0 c0 t1 c1 l0 l1
  local scene=() j
  if [[ $1 == *:* ]]; then read -r -a extra <<<"${1#*:}"; fi
  # The load clients must build the server's scene.
  for ((j = 0; j + 1 < ${#extra[@]}; j++)); do
    if [[ ${extra[j]} == --scene ]]; then scene=(--scene "${extra[j + 1]}"); fi
  done
  work=$(mktemp -d /tmp/room-cost.XXXXXX)
  port=$((20000 + RANDOM % 20000))
  "$dir/bitroom-server" serve --bind "127.0.0.1:$port" --max-rooms $((ROOMS + 10)) \
    --max-connections 8192 --max-connections-per-address 0 --room-creations-per-minute 0 \
    --shed-lateness 0 --stats-every 5s --cert-dir "$work" "${extra[@]}" \
    >"$work/server.out" 2>"$work/server.err" &
  server=$!
  for _ in $(seq 100); do
    # The server's shell may not have opened its output yet: no error.
    fp=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\).*/\1/p' "$work/server.out" 2>/dev/null | head -1 || true)
    [[ -n $fp ]] && break
    sleep 0.1
  done
  local clients=$((ROOMS * 8)) ramp=$((ROOMS * 8 / 100 + 1))
  local settle=5
  "$dir/bitroom-client" bots --server "127.0.0.1:$port" --cert-sha256 "$fp" \
    --room cost --rooms "$ROOMS" --count "$clients" --load --spawn-rate 100 \
    --duration $((ramp + settle + SECS + 5))s "${scene[@]}" >"$work/load.out" 2>&1 &
  load=$!
  sleep $((ramp + settle))
  t0=$(date +%s.%N); c0=$(cpu_ticks $server); l0=$(cpu_ticks $load); k0=$(sys_ticks $server)
  local mark
  mark=$(wc -l <"$work/server.err")
  sleep "$SECS"
  t1=$(date +%s.%N); c1=$(cpu_ticks $server); l1=$(cpu_ticks $load); k1=$(sys_ticks $server)
  local status
  status=$(tail -n +$((mark + 1)) "$work/server.err" | grep 'rooms .* clients' || true)
  kill -INT $load 2>/dev/null || true
  wait $load 2>/dev/null || true
  kill -INT $server 2>/dev/null || true
  wait $server 2>/dev/null || true
  server='' load=
  awk -v c="$((c1 - c0))" -v k="$((k1 - k0))" -v l="$((l1 - l0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" \
      -v r="$ROOMS" -v d="$label" '
    BEGIN {
      wall = t1 - t0; s = c / hz / wall * 100; lc = l / hz / wall * 100
      printf "%-28s rooms %3d  server %5.1f %% (kernel %4.1f)  per room %5.2f %%  (%4.0f rooms/core)  load clients %5.1f %%\n",
        d, r, s, k / hz / wall * 100, s / r, 100 / (s / r), lc
    }'
  # Status lines in the window: clients, tick p50, lateness p50/p99.
  sed -n 's/.*clients \([0-9]*\) .*tick p50 \([0-9]*\) µs p99 \([0-9]*\) µs.*lateness p50 \([0-9]*\) µs p99 \([0-9]*\) µs.*/    clients \1  tick p50 \2 µs p99 \3 µs  lateness p50 \4 µs p99 \5 µs/p' <<<"$status"
  local seen
  seen=$(sed -n 's/.*rooms \([0-9]*\) clients \([0-9]*\) .*/\1 \2/p' <<<"$status" | tail -1)
  if [[ -z $seen ]]; then
    echo "    WARNING: no server status line in the window (stats every 5 s): take -s 10 or more"
  elif [[ $seen != "$ROOMS $clients" ]]; then
    echo "    WARNING: expected $ROOMS rooms, $clients clients; the server saw (rooms clients) '$seen'"
  fi
  rm -rf "$work"
}

for ((i = 0; i < RUNS; i++)); do
  for d in "$@"; do
    run_one "$d"
  done
done
