//! A client short of CPU, in the simulated network: every tick it
//! simulates (stepped or re-simulated) costs it virtual time, during which
//! datagrams wait for it and its timers fire late (`NetSim::set_step_cost`),
//! as on a browser page whose wasm steps a world a few times slower than
//! native code on a loaded machine.
//!
//! Four players whose inputs change every tick (so nearly every frame
//! proves a prediction wrong); player 0 is short of CPU and, a quarter of
//! the way in, loses 300 ms to a hiccup (a long frame, a collection). It
//! must ride that out: stay in sync, never be started over, verify ≥ 95 %
//! of its ticks, and keep its rollbacks shallow.

use bitroom_protocol::{ClientConfig, ClientEvent, RoomConfig};
use bitroom_sim::game::bots::Bot;
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxBot, Strategy};
use bitroom_tests::netsim::{InputFn, LinkConfig, NetSim};

const MS: u64 = 1000;
const SEC: u64 = 1_000_000;
const PLAYERS: usize = 4;

fn rules() -> Sandbox {
    Sandbox::with_world("empty", &(), bitroom_sim::World::default())
}

fn bot(seed: u64) -> InputFn<Sandbox> {
    let mut b = SandboxBot::new(Strategy::Circle, seed);
    Box::new(move |s| match (s.game(), s.slot()) {
        (Some(g), Some(slot)) => b.next_input(g, slot),
        _ => PlayerInput::default(),
    })
}

#[derive(Debug)]
struct Outcome {
    ticks: u64,
    verified: u64,
    snapshots: u64,
    desyncs: usize,
    rollbacks: u64,
    resimulated: u64,
    max_rollback: u64,
    rtt: u64,
}

fn run(cost: u64, link: LinkConfig, length: u64, seed: u64) -> Vec<Outcome> {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), seed);
    for i in 0..PLAYERS {
        sim.add_client(
            ClientConfig {
                name: format!("bot{i}"),
                ..ClientConfig::default()
            },
            link,
            link,
            Some(bot(seed.wrapping_add(i as u64))),
        );
    }
    sim.set_step_cost(0, cost);
    sim.run_until(length / 4);
    sim.hiccup(0, 300 * MS);
    sim.run_until(length);
    (0..PLAYERS)
        .map(|i| {
            let c = &sim.clients[i];
            let s = c.session().stats();
            let joined = c
                .events
                .iter()
                .find_map(|(_, e)| match e {
                    ClientEvent::Synced { tick } => Some(*tick),
                    _ => None,
                })
                .unwrap_or(0);
            Outcome {
                ticks: sim.server.tick_number() - joined,
                verified: s.verified,
                snapshots: s.snapshots,
                desyncs: c.desyncs(),
                rollbacks: s.rollbacks,
                resimulated: s.resimulated,
                max_rollback: s.max_rollback,
                rtt: s.rtt,
            }
        })
        .collect()
}

fn check(name: &str, cost: u64, link: LinkConfig) {
    let out = run(cost, link, 60 * SEC, 5);
    for (i, o) in out.iter().enumerate() {
        println!(
            "{name}, bot{i}: verified {}/{}, snapshots {}, desyncs {}, rollbacks {} (mean depth {:.1}, deepest {}), rtt {} ms",
            o.verified,
            o.ticks,
            o.snapshots,
            o.desyncs,
            o.rollbacks,
            o.resimulated as f64 / o.rollbacks.max(1) as f64,
            o.max_rollback,
            o.rtt / MS
        );
    }
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o.desyncs, 0, "{name}: bot{i} {o:?}");
        assert_eq!(o.snapshots, 1, "{name}: bot{i} started over: {o:?}");
        assert!(o.verified * 100 >= o.ticks * 95, "{name}: bot{i} {o:?}");
    }
    // The slow client's prediction stays shallow: its rollbacks are at
    // most 4 ticks deeper on average than the others' (the ticks it is
    // behind), not the prediction window's 47.
    let depth = |o: &Outcome| o.resimulated as f64 / o.rollbacks.max(1) as f64;
    let others = out[1..].iter().map(depth).sum::<f64>() / (out.len() - 1) as f64;
    assert!(
        depth(&out[0]) <= others + 4.0,
        "{name}: the slow client's rollbacks average {:.1} ticks deep, the others' {others:.1}",
        depth(&out[0])
    );
}

/// A loopback link; each tick the slow client simulates costs 1.5 ms
/// (about what the default arena's step costs in wasm on a loaded
/// machine). Before the rollbacks were coalesced it verified half its
/// ticks and was started over twice after the hiccup.
#[test]
fn slow_client_on_loopback_rides_out_a_hiccup() {
    check(
        "1.5 ms a tick, 3 ms one way",
        1500,
        LinkConfig::delay(3 * MS),
    );
}

/// As above, at twice the cost (a fifth of the tick period per tick).
#[test]
fn slower_client_on_loopback_rides_out_a_hiccup() {
    check("3 ms a tick, 3 ms one way", 3000, LinkConfig::delay(3 * MS));
}

/// A 60 ms round trip with 10 % loss each way and 2 ms a tick.
#[test]
fn slow_client_on_a_lossy_link_rides_out_a_hiccup() {
    check(
        "2 ms a tick, 30 ± 10 ms, 10 % loss",
        2000,
        LinkConfig::lossy(30 * MS, 10 * MS, 10),
    );
}
