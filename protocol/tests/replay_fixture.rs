//! A committed replay, recorded by a release build with
//!
//! ```sh
//! cargo run --release --bin bitroom-server -- replay record --loose-bodies 8 \
//!     --players 4 --ticks 240 --keyframe-interval 120 --room fixture \
//!     --out protocol/tests/fixtures/arena-4-bots-v15.brr
//! ```
//!
//! (replay format 15; recorded 2026-11-30 for protocol 21, whose contact
//! solver colours its contacts in windows of 8 192.)
//!
//! It must verify in every build (debug tests included) and on every
//! platform: `.ci/cross-check.sh` runs this file on each target and diffs
//! the printed `GOLDEN` lines; the `miri_` test re-simulates a short prefix
//! on big-endian s390x under Miri.
//!
//! A deliberate simulation change that re-blesses the golden hashes
//! (`shared/tests/golden.rs`) makes this fixture diverge: re-record it with
//! the command above and update the constants below, saying why in the
//! commit message.

use bitroom_protocol::replay::{verify, Record, ReplayReader, VerifyOptions, VerifyReport};
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox};

/// Format 15.
const FIXTURE: &[u8] = include_bytes!("fixtures/arena-4-bots-v15.brr");
/// Ticks in the fixture.
const TICKS: u64 = 240;
/// Its final state hash (also recorded in the file).
const FINAL_HASH: u64 = 0xbafd3fde2e8a425d;

fn run(bytes: &[u8], synctest: Option<u32>) -> VerifyReport {
    let reader = ReplayReader::open(bytes).expect("the fixture opens");
    let opts = VerifyOptions {
        start: None,
        synctest,
    };
    verify(
        reader,
        |h, i| Ok(Sandbox::replaying(i, h.rules_fingerprint)),
        &opts,
        &mut |_| {},
    )
    .expect("the fixture re-simulates")
}

#[test]
fn golden_replay_fixture_verifies() {
    let rep = run(FIXTURE, None);
    println!(
        "GOLDEN replay-fixture {} {:016x}",
        rep.ticks_verified, rep.final_hash
    );
    assert_eq!(rep.divergence, None, "the fixture diverges on this build");
    assert!(rep.damage.is_none() && rep.ended_cleanly);
    assert_eq!(rep.ticks_verified, TICKS);
    assert_eq!(rep.keyframes_checked, 2);
    assert_eq!(rep.final_hash, FINAL_HASH);
}

#[test]
fn golden_replay_fixture_sync_test() {
    let rep = run(FIXTURE, Some(3));
    let st = rep.synctest.expect("sync test ran");
    println!(
        "GOLDEN replay-fixture-synctest {} {:016x}",
        st.checked, rep.final_hash
    );
    assert_eq!(rep.divergence, None);
    assert_eq!(rep.ticks_verified, TICKS);
    assert!(st.mismatches.is_empty());
}

/// Small enough for Miri: the header and the first 8 ticks of the fixture
/// (its initial state is packed and its contact geometry recomputed, so
/// this also decodes the packed form on big-endian s390x).
#[test]
fn miri_replay_fixture_prefix() {
    const N: u64 = 8;
    let mut reader = ReplayReader::<_, PlayerInput>::open(FIXTURE).expect("the fixture opens");
    let mut recorded = 0;
    let mut end = 0;
    while let Some(rec) = reader.next() {
        if let Record::Tick { tick, hash, .. } = rec {
            recorded = hash;
            end = reader.offset() as usize;
            if tick == N {
                break;
            }
        }
    }
    let rep = run(&FIXTURE[..end], None);
    println!(
        "GOLDEN replay-fixture-miri {} {:016x}",
        rep.ticks_verified, rep.final_hash
    );
    assert_eq!(rep.divergence, None);
    assert!(rep.damage.is_none());
    assert_eq!(rep.ticks_verified, N);
    assert_eq!(rep.final_hash, recorded);
}
