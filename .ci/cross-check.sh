#!/usr/bin/env bash
# Cross-platform determinism check for the bitroom simulation.
#
# Runs the sim crate's golden-hash test (`shared/tests/golden.rs`) and the
# committed replay fixture's test (`protocol/tests/replay_fixture.rs`) on:
#   x86_64 host (release and debug, built for this CPU by .cargo/config.toml),
#   x86_64 built for x86-64-v3 (the contact solver's four AVX2 lanes) and for
#   the baseline x86-64 (its one-lane scalar path), i686-unknown-linux-musl (native),
#   aarch64-unknown-linux-musl (qemu-aarch64-static), wasm32-wasip1 (node WASI),
#   and s390x-unknown-linux-gnu (big-endian) under Miri, for the tests whose
#   names contain "miri".
# A target passes when its tests pass (they assert committed hashes) AND the
# `GOLDEN <scene> <steps> <hash>` lines it prints equal those of x86_64 release.
#
# Environment knobs (defaults in brackets):
#   BITROOM_ROOT           workspace root            [dir above this script]
#   BITROOM_SIM_PKG        package to test           [bitroom-sim]
#   BITROOM_GOLDEN_TEST    integration test target   [golden]
#   BITROOM_EXTRA_GOLDEN   more "package:test" pairs run the same way, their
#                          GOLDEN lines diffed with the rest
#                          [bitroom-protocol:replay_fixture]
#   BITROOM_CROSS_TARGETS  space-separated targets (may be empty)
#                          [i686-unknown-linux-musl aarch64-unknown-linux-musl wasm32-wasip1]
#   BITROOM_DEBUG_SELECT   how the x86_64 debug lane builds its tests:
#                          "package" (cargo test -p PKG --test T) or
#                          "workspace": the test binaries of
#                          `cargo test --workspace` with
#                          BITROOM_WORKSPACE_FEATURES (found with --no-run),
#                          run directly. After that command has run (as in
#                          .ci/run) nothing is compiled again; `-p PKG`
#                          unifies the dependencies' features differently
#                          and builds the sim anew                [package]
#   BITROOM_WORKSPACE_FEATURES  --features for the "workspace" build    []
#   BITROOM_MIRI           1 = run the s390x Miri step, 0 = skip          [1]
#   BITROOM_MIRI_TIMEOUT   seconds cap for building+running under Miri    [900]
#   BITROOM_MIRI_FILTER    libtest filter for the Miri run                [miri]
#   BITROOM_NIGHTLY        toolchain used for Miri                        [nightly]
#   BITROOM_XCHECK_OUT     where logs / GOLDEN files go  [$BITROOM_ROOT/target/cross-check]
#   CARGO_BUILD_JOBS       [2]
#   CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS  [-C link-arg=--initial-memory=268435456]
#   MIRIFLAGS              [-Zmiri-disable-isolation] (lets tests read scene files)
set -euo pipefail

CI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "${BITROOM_ROOT:-$CI_DIR/..}" && pwd)
PKG=${BITROOM_SIM_PKG:-bitroom-sim}
GOLDEN_TEST=${BITROOM_GOLDEN_TEST:-golden}
read -r -a EXTRA_GOLDEN <<<"${BITROOM_EXTRA_GOLDEN-bitroom-protocol:replay_fixture}"
read -r -a CROSS_TARGETS <<<"${BITROOM_CROSS_TARGETS-i686-unknown-linux-musl aarch64-unknown-linux-musl wasm32-wasip1}"
DEBUG_SELECT=${BITROOM_DEBUG_SELECT:-package}
WORKSPACE_FEATURES=${BITROOM_WORKSPACE_FEATURES:-}
MIRI=${BITROOM_MIRI:-1}
MIRI_TIMEOUT=${BITROOM_MIRI_TIMEOUT:-900}
MIRI_FILTER=${BITROOM_MIRI_FILTER:-miri}
MIRI_TARGET=s390x-unknown-linux-gnu
NIGHTLY=${BITROOM_NIGHTLY:-nightly}
OUT=${BITROOM_XCHECK_OUT:-$ROOT/target/cross-check}

export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export RUST_BACKTRACE=${RUST_BACKTRACE:-0}
# Cross runners. The musl targets link with the self-contained musl CRT via
# rust-lld, so no cross C toolchain is needed (only pure-Rust deps).
export CARGO_TARGET_I686_UNKNOWN_LINUX_MUSL_LINKER=${CARGO_TARGET_I686_UNKNOWN_LINUX_MUSL_LINKER:-rust-lld}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER:-rust-lld}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER:-qemu-aarch64-static}
# --single-threaded-gc and 256 MiB of initial guest memory: with node 20
# (V8 11.3), growing the guest's memory step by step during a long golden
# run crashed V8's garbage collector ("Fatal error ... unreachable code",
# V8_Fatal during evacuation) or segfaulted node at exit, with every printed
# hash still correct. Neither changes what the guest computes.
export CARGO_TARGET_WASM32_WASIP1_RUNNER=${CARGO_TARGET_WASM32_WASIP1_RUNNER:-node --no-warnings --single-threaded-gc $CI_DIR/wasi-runner.mjs}
export CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS=${CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS:--C link-arg=--initial-memory=268435456}

GOLDEN_RE='GOLDEN[[:space:]]+[^[:space:]]+[[:space:]]+[0-9]+[[:space:]]+(0x)?[0-9A-Fa-f]+\b'
REF_LABEL=x86_64-release
TEST_ARGS=(--nocapture --test-threads=1)

mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.log.setup "$OUT"/*.golden "$OUT"/*.want "$OUT"/*.diff

RESULTS=()   # "label|status|seconds|note"
FAILED=0

log()  { printf '\n==> %s\n' "$*"; }
warn() { printf '\n!!! WARNING: %s\n' "$*" >&2; }
record() { # label status seconds note
  RESULTS+=("$1|$2|$3|$4")
  case $2 in FAIL*|MISMATCH) FAILED=1 ;; esac
}

# ---------------------------------------------------------------- installs --

have_target() { (cd "$ROOT" && rustup target list --installed) | grep -qx "$1"; }

ensure_target() {
  have_target "$1" && return 0
  log "rustup target add $1"
  (cd "$ROOT" && rustup target add "$1")
}

ensure_qemu() {
  command -v qemu-aarch64-static >/dev/null && return 0
  log "installing qemu-user-static (apt)"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static &&
    command -v qemu-aarch64-static >/dev/null
}

ensure_node() {
  command -v node >/dev/null || { echo "node not found (needed for wasm32-wasip1)" >&2; return 1; }
  node -e 'require("node:wasi")' || { echo "this node has no node:wasi" >&2; return 1; }
}

# ----------------------------------------------------------------- helpers --

# Extract normalised, sorted GOLDEN lines from a log. libtest prints
# "test name ... " without a newline before the test's own output when run
# with --test-threads=1, so match anywhere in the line.
extract_golden() { # log -> stdout
  { grep -oE "$GOLDEN_RE" "$1" || true; } |
    awk '{ h = tolower($4); sub(/^0x/, "", h); print "GOLDEN", $2, $3, h }' | LC_ALL=C sort
}

# Compare $OUT/<label>.golden with the reference.  mode=full: identical sets;
# mode=subset: every line must match the reference line for the same
# <scene> <steps>.  Prints the diff on mismatch.  Returns 0 when equal.
compare_golden() { # label mode
  local label=$1 mode=$2 ref="$OUT/$REF_LABEL.golden" got="$OUT/$1.golden" want="$OUT/$1.want"
  if [[ $mode == subset ]]; then
    awk 'NR == FNR { k[$2 " " $3] = 1; next } ($2 " " $3) in k' "$got" "$ref" | LC_ALL=C sort >"$want"
  else
    cp "$ref" "$want"
  fi
  if diff -u --label "$REF_LABEL" --label "$label" "$want" "$got" >"$OUT/$label.diff"; then
    rm -f "$OUT/$label.diff"
    return 0
  fi
  echo "GOLDEN lines of $label differ from $REF_LABEL:"
  cat "$OUT/$label.diff"
  return 1
}

# The test binaries of `cargo test --workspace` (with WORKSPACE_FEATURES)
# named in the arguments, one "package:test executable package-dir" line
# each, building whatever is not built yet.
workspace_tests() { # package:test...
  local feats=()
  [[ -n $WORKSPACE_FEATURES ]] && feats=(--features "$WORKSPACE_FEATURES")
  (cd "$ROOT" && cargo test --workspace "${feats[@]}" --no-run --message-format=json-render-diagnostics) |
    python3 -c '
import json, os, sys
want = set(sys.argv[1:])
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    t = m.get("target") or {}
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or "test" not in t.get("kind", []):
        continue
    # The package name, out of its id: "path+file:///dir#name@1.0",
    # "path+file:///name#1.0" (a directory of its name) or "name 1.0 (...)".
    pid = m["package_id"]
    if "#" in pid:
        url, frag = pid.split("#", 1)
        pkg = frag.split("@")[0] if "@" in frag else url.rstrip("/").split("/")[-1]
    else:
        pkg = pid.split()[0]
    if pkg + ":" + t["name"] in want:
        print(pkg + ":" + t["name"], m["executable"], os.path.dirname(m["manifest_path"]))
' "$@"
}

# Run one golden test configuration. Extra cargo args follow the label;
# SELECT=workspace (in the environment of the call) runs the workspace's
# test binaries instead (see BITROOM_DEBUG_SELECT; no extra args then).
run_target() { # label cargo-args...
  local label=$1; shift
  local start=$SECONDS rc=0 logf="$OUT/$label.log" note pair
  : >"$logf"
  if [[ ${SELECT:-package} == workspace ]]; then
    local found name exe dir
    log "[$label] cargo test --workspace ${WORKSPACE_FEATURES:+--features $WORKSPACE_FEATURES} --no-run"
    found=$(workspace_tests "$PKG:$GOLDEN_TEST" "${EXTRA_GOLDEN[@]}" 2> >(tee -a "$logf" >&2)) || rc=$?
    for pair in "$PKG:$GOLDEN_TEST" "${EXTRA_GOLDEN[@]}"; do
      if ! read -r name exe dir < <(grep "^$pair " <<<"$found"); then
        echo "no test binary $pair in the workspace build" | tee -a "$logf"
        rc=1
        continue
      fi
      log "[$label] $pair: $exe (in $dir)"
      (cd "$dir" && "$exe" "${TEST_ARGS[@]}") 2>&1 | tee -a "$logf" || rc=$?
    done
  else
    for pair in "$PKG:$GOLDEN_TEST" "${EXTRA_GOLDEN[@]}"; do
      log "[$label] cargo test -p ${pair%%:*} --test ${pair#*:} $*"
      (cd "$ROOT" && cargo test -p "${pair%%:*}" --test "${pair#*:}" "$@" -- "${TEST_ARGS[@]}") 2>&1 | tee -a "$logf" || rc=$?
    done
  fi
  extract_golden "$logf" >"$OUT/$label.golden"
  local n secs
  n=$(wc -l <"$OUT/$label.golden")
  secs=$((SECONDS - start))
  if [[ $n -eq 0 ]]; then
    record "$label" FAIL "$secs" "no GOLDEN lines printed (exit $rc)"
    return
  fi
  local differ=0
  if [[ $label != "$REF_LABEL" ]] && ! compare_golden "$label" full; then
    differ=1
  fi
  if [[ $rc -ne 0 ]]; then
    note="tests failed (exit $rc)"
    [[ $differ -eq 1 ]] && note="$note; GOLDEN diff in $OUT/$label.diff"
    [[ $label == "$REF_LABEL" ]] && note="$note; the reference itself is red"
    record "$label" FAIL "$secs" "$note"
    return
  fi
  if [[ $differ -eq 1 ]]; then
    record "$label" MISMATCH "$secs" "tests passed but GOLDEN lines differ, see $OUT/$label.diff"
    return
  fi
  record "$label" PASS "$secs" "$n GOLDEN lines"
}

# The same host, built for another CPU level (RUSTFLAGS replaces the
# workspace's target-cpu=native), in a target directory of its own.
run_x86_level() { # label target-cpu
  local label=$1 cpu=$2
  if [[ $cpu == x86-64-v3 ]] && ! grep -qw avx2 /proc/cpuinfo; then
    record "$label" SKIP 0 "this CPU has no AVX2"
    return
  fi
  local had_rf=${RUSTFLAGS+set} old_rf=${RUSTFLAGS-} had_td=${CARGO_TARGET_DIR+set} old_td=${CARGO_TARGET_DIR-}
  export RUSTFLAGS="-C target-cpu=$cpu" CARGO_TARGET_DIR="$ROOT/target/xcheck-$cpu"
  run_target "$label" --release
  if [[ -n $had_rf ]]; then export RUSTFLAGS=$old_rf; else unset RUSTFLAGS; fi
  if [[ -n $had_td ]]; then export CARGO_TARGET_DIR=$old_td; else unset CARGO_TARGET_DIR; fi
}

run_cross() { # target
  local t=$1 start=$SECONDS
  if ! ensure_target "$t"; then
    record "$t" FAIL $((SECONDS - start)) "rustup target add failed"
    return
  fi
  case $t in
    aarch64-*) ensure_qemu || { record "$t" FAIL $((SECONDS - start)) "qemu-aarch64-static unavailable"; return; } ;;
    wasm32-*) ensure_node || { record "$t" FAIL $((SECONDS - start)) "node with WASI unavailable"; return; } ;;
  esac
  run_target "$t" --release --target "$t"
}

run_miri() {
  local label="s390x-miri" start=$SECONDS rc=0 logf="$OUT/s390x-miri.log"
  export MIRIFLAGS=${MIRIFLAGS:--Zmiri-disable-isolation}
  log "[$label] Miri setup (toolchain $NIGHTLY, target $MIRI_TARGET)"
  if ! rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null | grep -q '^miri' ||
     ! rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null | grep -q '^rust-src'; then
    if ! rustup component add miri rust-src --toolchain "$NIGHTLY"; then
      warn "could not install miri/rust-src on $NIGHTLY; skipping the big-endian check"
      record "$label" WARN $((SECONDS - start)) "miri component unavailable (infra), skipped"
      return
    fi
  fi
  # Builds the s390x sysroot from rust-src (cached in ~/.cache/miri).
  if ! (cd "$ROOT" && timeout -k 30 "$MIRI_TIMEOUT" cargo "+$NIGHTLY" miri setup --target "$MIRI_TARGET") 2>&1 | tee "$logf.setup"; then
    warn "cargo miri setup failed; skipping the big-endian check (see $logf.setup)"
    record "$label" WARN $((SECONDS - start)) "miri setup failed (infra), skipped"
    return
  fi
  local setup_secs=$((SECONDS - start))
  log "[$label] cargo +$NIGHTLY miri test -p $PKG --target $MIRI_TARGET --test $GOLDEN_TEST -- $MIRI_FILTER  (cap ${MIRI_TIMEOUT}s, MIRIFLAGS=$MIRIFLAGS)"
  (cd "$ROOT" && timeout -k 30 "$MIRI_TIMEOUT" \
    cargo "+$NIGHTLY" miri test -p "$PKG" --target "$MIRI_TARGET" --test "$GOLDEN_TEST" -- "$MIRI_FILTER" "${TEST_ARGS[@]}") 2>&1 | tee "$logf" || rc=$?
  local extra
  for extra in "${EXTRA_GOLDEN[@]}"; do
    [[ $rc -eq 124 || $rc -eq 137 ]] && break
    log "[$label] cargo +$NIGHTLY miri test -p ${extra%%:*} --target $MIRI_TARGET --test ${extra#*:} -- $MIRI_FILTER"
    (cd "$ROOT" && timeout -k 30 "$MIRI_TIMEOUT" \
      cargo "+$NIGHTLY" miri test -p "${extra%%:*}" --target "$MIRI_TARGET" --test "${extra#*:}" -- "$MIRI_FILTER" "${TEST_ARGS[@]}") 2>&1 | tee -a "$logf" || rc=$?
  done
  extract_golden "$logf" >"$OUT/$label.golden"
  local n secs note
  n=$(wc -l <"$OUT/$label.golden")
  secs=$((SECONDS - start))
  note="setup ${setup_secs}s"
  if [[ $n -gt 0 ]] && ! compare_golden "$label" subset; then
    record "$label" MISMATCH "$secs" "$n lines, see $OUT/$label.diff"
  elif grep -q 'test result: FAILED' "$logf" || grep -q 'Undefined Behavior' "$logf"; then
    record "$label" FAIL "$secs" "tests failed under Miri (exit $rc)"
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
    warn "Miri run hit the ${MIRI_TIMEOUT}s cap; big-endian check incomplete"
    record "$label" WARN "$secs" "timed out after ${MIRI_TIMEOUT}s ($n lines checked)"
  elif [[ $rc -ne 0 ]]; then
    warn "Miri exited $rc without a test failure (build/interpreter problem?); see $logf"
    record "$label" WARN "$secs" "miri infra error, exit $rc ($n lines checked)"
  elif [[ $n -eq 0 ]]; then
    warn "no test matching '$MIRI_FILTER' printed GOLDEN lines under Miri"
    record "$label" WARN "$secs" "no '$MIRI_FILTER' tests ran"
  else
    record "$label" PASS "$secs" "$n GOLDEN lines, $note"
  fi
}

summary() {
  printf '\n==> Cross-platform determinism summary (%s, test %s; also %s)\n' "$PKG" "$GOLDEN_TEST" "${EXTRA_GOLDEN[*]:-nothing}"
  printf '%-28s %-9s %7s  %s\n' TARGET RESULT SECONDS NOTE
  printf '%-28s %-9s %7s  %s\n' ---------------------------- --------- ------- ----
  local r label status secs note
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r label status secs note <<<"$r"
    printf '%-28s %-9s %7s  %s\n' "$label" "$status" "$secs" "$note"
  done
  printf 'logs: %s\n' "$OUT"
}

# -------------------------------------------------------------------- main --

log "cross-check: root=$ROOT pkg=$PKG test=$GOLDEN_TEST extra=${EXTRA_GOLDEN[*]:-} targets=${CROSS_TARGETS[*]} miri=$MIRI debug-select=$DEBUG_SELECT"
TOTAL_START=$SECONDS

run_target "$REF_LABEL" --release
if [[ ! -s $OUT/$REF_LABEL.golden ]]; then
  # Nothing to compare against (build error, missing test target, ...).
  for t in x86_64-debug x86_64-avx2 x86_64-scalar "${CROSS_TARGETS[@]}" s390x-miri; do
    record "$t" SKIP 0 "no x86_64 reference"
  done
else
  SELECT=$DEBUG_SELECT run_target x86_64-debug
  if [[ $(uname -m) == x86_64 ]]; then
    run_x86_level x86_64-avx2 x86-64-v3
    run_x86_level x86_64-scalar x86-64
  fi
  for t in "${CROSS_TARGETS[@]}"; do
    run_cross "$t"
  done
  if [[ $MIRI == 1 ]]; then
    run_miri
  else
    record s390x-miri SKIP 0 "BITROOM_MIRI=$MIRI"
  fi
fi

summary
printf 'total: %ss\n' $((SECONDS - TOTAL_START))
if [[ $FAILED -ne 0 ]]; then
  echo "cross-check: FAILED" >&2
  exit 1
fi
echo "cross-check: OK"
