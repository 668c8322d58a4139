//! Two committed replays of the same room, recorded by a release build with
//!
//! ```sh
//! cargo run --release --bin bitroom-server -- replay record --loose-bodies 8 \
//!     --players 4 --ticks 240 --keyframe-interval 120 --room fixture \
//!     --out protocol/tests/fixtures/arena-4-bots-v4.brr
//! ```
//!
//! `arena-4-bots.brr` is replay format 3 (canonical snapshots, recorded
//! 2026-11-21) and `arena-4-bots-v4.brr` format 4 (packed snapshots): this
//! build must read both, and they must give the same hashes.
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

use bitroom_protocol::replay::{
    sandbox_rules, verify, Record, ReplayReader, VerifyOptions, VerifyReport,
};
use bitroom_sim::game::sandbox::Sandbox;
use bitroom_sim::game::GameSnapshot;

/// Format 3: canonical snapshots.
const FIXTURE_V3: &[u8] = include_bytes!("fixtures/arena-4-bots.brr");
/// Format 4: packed snapshots.
const FIXTURE: &[u8] = include_bytes!("fixtures/arena-4-bots-v4.brr");
/// Both, with the name their `GOLDEN` lines carry.
const FIXTURES: [(&str, &[u8]); 2] = [("", FIXTURE), ("-v3", FIXTURE_V3)];
/// Ticks in the fixture.
const TICKS: u64 = 240;
/// Its final state hash (also recorded in the file).
const FINAL_HASH: u64 = 0xe7826e2d8eed4691;

fn run(bytes: &[u8], synctest: Option<u32>) -> VerifyReport {
    let reader = ReplayReader::open(bytes).expect("the fixture opens");
    let opts = VerifyOptions {
        start: None,
        synctest,
    };
    verify(reader, sandbox_rules, &opts, &mut |_| {}).expect("the fixture re-simulates")
}

#[test]
fn golden_replay_fixture_verifies() {
    for (name, bytes) in FIXTURES {
        let rep = run(bytes, None);
        println!(
            "GOLDEN replay-fixture{name} {} {:016x}",
            rep.ticks_verified, rep.final_hash
        );
        assert_eq!(rep.divergence, None, "fixture{name} diverges on this build");
        assert!(rep.damage.is_none() && rep.ended_cleanly);
        assert_eq!(rep.ticks_verified, TICKS);
        assert_eq!(rep.keyframes_checked, 2);
        assert_eq!(rep.final_hash, FINAL_HASH);
    }
}

/// The two formats hold the same records; only the snapshots' encoding
/// differs (and the format-4 file is smaller for it).
#[test]
fn both_formats_hold_the_same_room() {
    let records = |bytes: &[u8]| {
        let reader = ReplayReader::open(bytes).expect("opens");
        let version = reader.header().format_version;
        let rest: Vec<Record> = reader.collect();
        (version, rest)
    };
    let (v4, new) = records(FIXTURE);
    let (v3, old) = records(FIXTURE_V3);
    assert_eq!((v3, v4), (3, 4));
    assert_eq!(new.len(), old.len());
    let mut keyframes = 0;
    for (a, b) in new.iter().zip(&old) {
        match (a, b) {
            (
                Record::Keyframe { tick, snapshot },
                Record::Keyframe {
                    tick: t,
                    snapshot: s,
                },
            ) => {
                assert_eq!(tick, t);
                let packed = GameSnapshot::<Sandbox>::from_packed(snapshot).expect("packed");
                assert_eq!(&packed.to_bytes(), s, "keyframe at tick {tick}");
                keyframes += 1;
            }
            _ => assert_eq!(a, b),
        }
    }
    assert_eq!(keyframes, 2);
    assert!(FIXTURE.len() * 2 < FIXTURE_V3.len());
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

/// Small enough for Miri: the header and the first 8 ticks, of the format-4
/// fixture (its initial state is packed, so this also decodes the packed
/// form on big-endian s390x).
#[test]
fn miri_replay_fixture_prefix() {
    const N: u64 = 8;
    let mut reader = ReplayReader::open(FIXTURE).expect("the fixture opens");
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
