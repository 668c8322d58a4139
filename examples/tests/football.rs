//! The football example through the real server and client libraries on
//! loopback QUIC for ten seconds: no client desyncs, goals are scored (the
//! score lives in the rules' state, which every checked state hash
//! covers), and every bot verified at least 95 % of the ticks it could
//! check.

use bitroom_examples::football::play_match;
use std::time::Duration;

#[test]
fn a_ten_second_match_has_goals_and_no_desyncs() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let report = runtime
        .block_on(play_match(4, Duration::from_secs(10), 1))
        .expect("the match runs");
    println!("{}", report.table());
    assert_eq!(report.desyncs(), 0, "{}", report.table());
    assert_eq!(report.players.len(), 4);
    for p in &report.players {
        assert!(p.error.is_none(), "{}: {:?}", p.name, p.error);
        assert!(p.slot.is_some(), "{} never got a seat", p.name);
        // Ten seconds at 60 Hz, less joining: several hundred ticks.
        assert!(p.checkable > 300, "{}: only {} ticks", p.name, p.checkable);
        assert!(
            p.verified * 100 >= p.checkable * 95,
            "{} verified {} of {} ticks",
            p.name,
            p.verified,
            p.checkable
        );
    }
    assert!(report.spectator_verified > 300, "{}", report.table());
    let goals = report.score[0] + report.score[1];
    assert!(goals > 0, "no goal in ten seconds: {}", report.table());
}
