#!/usr/bin/env bash
# Builds docker/Dockerfile here and checks the image end to end.
#
# No image registry is reachable on the machines this project is built on,
# so the Dockerfile's two bases are made locally and passed as build
# arguments (the defaults, rust:1-bookworm and debian:bookworm-slim, are
# what a user pulls):
#   RUNTIME_IMAGE  bitroom-test/debian:bookworm, a minimal Debian bookworm
#                  from debootstrap, imported with `docker import`;
#   RUST_IMAGE     bitroom-test/rust:host, that base plus gcc, libc6-dev,
#                  ca-certificates (and the extra certificate authorities
#                  of this host, /usr/local/share/ca-certificates, for a
#                  TLS-inspecting proxy) and the host's own Rust toolchain
#                  (cargo, rustc and the x86_64 Linux standard library,
#                  copied from `rustc --print sysroot`).
# The Dockerfile itself runs unchanged: its builder stage compiles the
# workspace from crates.io (`cargo build --release --locked`, with the
# agones feature) and its runtime stage copies the binaries.
#
# Then: the server runs in a container with its UDP and metrics ports
# published on 127.0.0.1; bots (the image's bitroom-client, on the host's
# network) join through the published UDP port and play; the metrics
# endpoint is read through its published port; `docker stop` (SIGTERM)
# must end the server with exit code 0, and the room's recording must be
# finished (end record) and verify (`replay verify`, exit 0).
#
# Not exercised here: pulling the official bases, the rust image's own
# toolchain version, and any host other than this x86_64 one.
#
# Needs: a running Docker engine, debootstrap, and root (debootstrap).
# Without them it prints that it skipped and exits 0, unless CI is set,
# then it fails. Environment:
#   BITROOM_DEBIAN_MIRROR  debootstrap mirror [http://deb.debian.org/debian]
#   BITROOM_DOCKER_KEEP=1  keep the images afterwards (the base images are
#                          reused by the next run); default: remove all
#   BITROOM_TARGET_CPU     the image's TARGET_CPU [x86-64-v3]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

START=$SECONDS
log() { printf '[docker-test t+%ss] %s\n' $((SECONDS - START)) "$*"; }
skip() {
  if [[ -n ${CI:-} ]]; then
    echo "docker/test.sh: FAILED: $* (CI is set, so this cannot be skipped)" >&2
    exit 1
  fi
  echo "docker/test.sh: skipped: $*"
  exit 0
}

command -v docker >/dev/null || skip "no docker command (apt-get install docker.io)"
docker info >/dev/null 2>&1 || skip "no Docker engine answers (start dockerd)"
command -v debootstrap >/dev/null || skip "no debootstrap (apt-get install debootstrap)"
[[ $(id -u) -eq 0 ]] || skip "debootstrap needs root"

MIRROR=${BITROOM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=bitroom-test/debian:bookworm
RUST=bitroom-test/rust:host
IMAGE=bitroom-test/bitroom:test
NAME=bitroom-test-$$
WORK=$(mktemp -d /tmp/bitroom-docker-test.XXXXXX)

cleanup() {
  local rc=$?
  docker rm -f "$NAME" >/dev/null 2>&1 || true
  if [[ ${BITROOM_DOCKER_KEEP:-0} != 1 ]]; then
    docker rmi -f "$IMAGE" "$RUST" "$BASE" >/dev/null 2>&1 || true
    # The builder stage's layers (the legacy builder keeps them untagged).
    docker image prune -f >/dev/null 2>&1 || true
  else
    docker rmi -f "$IMAGE" >/dev/null 2>&1 || true
    docker image prune -f >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

# --- the bases ---------------------------------------------------------
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  log "debootstrap bookworm (minbase) from $MIRROR"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; exit 1; }
  # PATH as the official image sets it (an imported image has no ENV).
  tar -C "$WORK/rootfs" -c . \
    | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
fi
log "runtime base $BASE: $(docker image inspect -f '{{.Size}}' "$BASE" | numfmt --to=iec)"

if ! docker image inspect "$RUST" >/dev/null 2>&1; then
  SYSROOT=$(rustc --print sysroot)
  HOST_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
  [[ $HOST_TRIPLE == x86_64-unknown-linux-gnu ]] || skip "host is $HOST_TRIPLE (this script copies an x86_64 Linux toolchain)"
  CTX=$WORK/rust
  mkdir -p "$CTX/rust/bin" "$CTX/rust/lib/rustlib"
  cp "$SYSROOT/bin/rustc" "$CTX/rust/bin/"
  # cargo: the toolchain's own (rustup's proxy would need rustup).
  cp "$(dirname "$(rustup which cargo 2>/dev/null || command -v cargo)")/cargo" "$CTX/rust/bin/"
  cp -a "$SYSROOT"/lib/*.so* "$CTX/rust/lib/" # librustc_driver, libLLVM
  cp -a "$SYSROOT/lib/rustlib/$HOST_TRIPLE" "$SYSROOT/lib/rustlib/etc" "$CTX/rust/lib/rustlib/" 2>/dev/null \
    || cp -a "$SYSROOT/lib/rustlib/$HOST_TRIPLE" "$CTX/rust/lib/rustlib/"
  # Certificate authorities this host adds to the system's (a machine
  # behind a TLS-inspecting proxy needs them to reach crates.io).
  mkdir -p "$CTX/ca"
  cp /usr/local/share/ca-certificates/*.crt "$CTX/ca/" 2>/dev/null || true
  cat >"$CTX/Dockerfile" <<EOF
FROM $BASE
RUN apt-get update \\
 && apt-get install -y --no-install-recommends gcc libc6-dev ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
COPY ca /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
COPY rust /usr/local/rust
ENV PATH=/usr/local/rust/bin:/usr/local/cargo/bin:\$PATH CARGO_HOME=/usr/local/cargo
RUN rustc --version && cargo --version
EOF
  log "builder base $RUST: $BASE + the host's $(rustc --version)"
  docker build --force-rm -q -t "$RUST" "$CTX" >/dev/null
  rm -rf "$CTX"
fi

# --- the image, from the Dockerfile as a user builds it ----------------
log "docker build -f docker/Dockerfile (RUST_IMAGE=$RUST RUNTIME_IMAGE=$BASE)"
T0=$SECONDS
docker build --force-rm -f docker/Dockerfile -t "$IMAGE" \
  --build-arg RUST_IMAGE="$RUST" --build-arg RUNTIME_IMAGE="$BASE" \
  --build-arg TARGET_CPU="${BITROOM_TARGET_CPU:-x86-64-v3}" \
  . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
log "image built in $((SECONDS - T0)) s: $(docker image inspect -f '{{.Size}}' "$IMAGE" | numfmt --to=iec)"

# --- run it ------------------------------------------------------------
mkdir -p "$WORK/data"
chmod 0777 "$WORK/data" # the image runs as uid 10001
docker run -d --name "$NAME" \
  -p 127.0.0.1::4433/udp -p 127.0.0.1::9100/tcp \
  -v "$WORK/data:/var/lib/bitroom" \
  "$IMAGE" serve --bind 0.0.0.0:4433 --metrics 0.0.0.0:9100 --cpu-budget 70 \
  --cert-dir /var/lib/bitroom --record /var/lib/bitroom/rec --stats-every 2s >/dev/null
UDP_PORT=$(docker port "$NAME" 4433/udp | head -1 | sed 's/.*://')
HTTP_PORT=$(docker port "$NAME" 9100/tcp | head -1 | sed 's/.*://')
FP=
for _ in $(seq 100); do
  FP=$(docker logs "$NAME" 2>/dev/null | sed -n 's/.*sha256 \([0-9a-f]\{64\}\).*/\1/p' | head -1)
  [[ -n $FP ]] && break
  sleep 0.1
done
[[ -n $FP ]] || { docker logs "$NAME"; echo "server did not print its certificate" >&2; exit 1; }
log "server up: UDP 127.0.0.1:$UDP_PORT, metrics 127.0.0.1:$HTTP_PORT, certificate $FP"

# metrics PATH: GET it through the published port (bash's /dev/tcp).
metrics() {
  exec 3<>"/dev/tcp/127.0.0.1/$HTTP_PORT" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
  cat <&3
  exec 3<&-
}
metric() { # name -> value (first sample)
  metrics | awk -v m="$1" '$1 == m { print $2; exit }'
}

# A room that is still playing when the server stops, opened first: with
# --cpu-budget a server whose ticks start late (a loaded machine) takes no
# new room once a room has been measured, and this one must not depend on
# the machine's load.
docker run --rm --network host --entrypoint bitroom-client "$IMAGE" \
  bots --server "127.0.0.1:$UDP_PORT" --cert-sha256 "$FP" --room docker-stop \
  --count 2 --strategy circle --duration 60s >"$WORK/bots2.log" 2>&1 &
BOTS2=$!
for _ in $(seq 50); do
  sleep 0.2
  [[ $(metric bitroom_clients || echo 0) == 2 ]] && break
done

# Bots from the host's network namespace, through the published port.
BOTS_SECS=6
log "4 bots for ${BOTS_SECS}s through 127.0.0.1:$UDP_PORT"
docker run --rm --network host --entrypoint bitroom-client "$IMAGE" \
  bots --server "127.0.0.1:$UDP_PORT" --cert-sha256 "$FP" --room docker \
  --count 4 --strategy random --duration "${BOTS_SECS}s" >"$WORK/bots.log" 2>&1 &
BOTS=$!
CLIENTS=0
for _ in $(seq 50); do
  sleep 0.2
  CLIENTS=$(metric bitroom_clients || echo 0)
  [[ ${CLIENTS%.*} -ge 6 ]] 2>/dev/null && break
done
TICKS=$(metric bitroom_ticks_total || echo 0)
log "metrics while playing: bitroom_clients $CLIENTS, bitroom_ticks_total $TICKS"
wait $BOTS || { cat "$WORK/bots.log"; echo "bots failed" >&2; exit 1; }
# The capacity the server measured in the container (--cpu-budget, as the
# Fleet runs it): the process CPU clock works there, and a room was
# measured while the bots played.
ROOM_CPU=0
for _ in $(seq 50); do
  ROOM_CPU=$(metric bitroom_room_cpu_cores || echo 0)
  [[ -n $ROOM_CPU && $ROOM_CPU != 0 ]] && break
  sleep 0.2
done
CAPACITY=$(metric bitroom_room_capacity || echo 0)
log "measured: a room ${ROOM_CPU} cores, capacity ${CAPACITY} rooms"
awk -v c="$ROOM_CPU" 'BEGIN { exit !(c > 0) }' || { echo "no room cost measured (bitroom_room_cpu_cores $ROOM_CPU)" >&2; exit 1; }
[[ ${CAPACITY%.*} -ge 1 ]] 2>/dev/null || { echo "no room capacity exported (bitroom_room_capacity $CAPACITY)" >&2; exit 1; }
tail -3 "$WORK/bots.log"
[[ ${CLIENTS%.*} -ge 6 ]] || { echo "metrics never showed 6 clients (last: $CLIENTS)" >&2; exit 1; }
[[ ${TICKS%.*} -gt 0 ]] || { echo "no ticks counted in the metrics" >&2; exit 1; }


log "docker stop (SIGTERM)"
docker stop -t 10 "$NAME" >/dev/null
EXIT=$(docker inspect -f '{{.State.ExitCode}}' "$NAME")
wait $BOTS2 || true
docker logs "$NAME" >"$WORK/server.log" 2>&1
tail -4 "$WORK/server.log"
[[ $EXIT -eq 0 ]] || { echo "server exited with $EXIT after SIGTERM" >&2; exit 1; }
grep -q "shut down" "$WORK/server.log" || { echo "server log has no 'shut down'" >&2; exit 1; }
grep -q "server shutting down" "$WORK/bots2.log" \
  || { cat "$WORK/bots2.log"; echo "the playing bots were not told 'server shutting down'" >&2; exit 1; }

# Both recordings finished (end record) and verify.
shopt -s nullglob
RECS=("$WORK"/data/rec/*.brr)
[[ ${#RECS[@]} -eq 2 ]] || { ls -la "$WORK/data/rec"; echo "expected 2 recordings, found ${#RECS[@]}" >&2; exit 1; }
for r in "${RECS[@]}"; do
  f=/var/lib/bitroom/rec/$(basename "$r")
  out=$(docker run --rm -v "$WORK/data:/var/lib/bitroom" "$IMAGE" replay verify --jobs 1 "$f" 2>&1) \
    || { echo "$out"; echo "replay verify failed on $f" >&2; exit 1; }
  echo "$out" | tail -1
  grep -q ": OK$" <<<"$out" || { echo "$out"; echo "$f: not finished cleanly" >&2; exit 1; }
done

log "passed: image built, served 2 rooms through the published port, metrics read, SIGTERM → exit 0, recordings finished and verified"
