//! The netcode on the simulated network: `ServerRoom` and `ClientSession`s
//! in-process, virtual time, seeded loss, jitter and reordering.

use bitroom_protocol::{
    encode_client_reliable, ClientConfig, ClientEvent, ClientReliable, Hello, RoomConfig,
    RoomEvent, ServerRoom, PROTOCOL_VERSION,
};
use bitroom_sim::game::bots::Bot;
use bitroom_sim::game::sandbox::PlayerInput;
use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
use bitroom_sim::game::sandbox::{SandboxBot, Strategy};
use bitroom_sim::game::Rules;
use bitroom_tests::netsim::{InputFn, LinkConfig, NetSim};

const MS: u64 = 1000;
const SEC: u64 = 1_000_000;

fn rules() -> Sandbox {
    Sandbox::new(SandboxConfig { loose_bodies: 60 })
}

fn bot(strategy: Strategy, seed: u64) -> InputFn<Sandbox> {
    let mut b = SandboxBot::new(strategy, seed);
    Box::new(move |s| match (s.game(), s.slot()) {
        (Some(g), Some(slot)) => b.next_input(g, slot),
        _ => PlayerInput::default(),
    })
}

fn player(name: &str) -> ClientConfig {
    ClientConfig {
        name: name.into(),
        ..ClientConfig::default()
    }
}

fn assert_in_sync(sim: &NetSim<Sandbox>, i: usize) -> u64 {
    let c = &sim.clients[i];
    assert_eq!(c.desyncs(), 0, "client {i} desynced: {:?}", c.events);
    sim.compare_confirmed(i).unwrap_or_else(|e| panic!("{e}"))
}

/// (a) 4 clients, 100 ms RTT, 30 ms jitter, 5 % loss, 3000 ticks: every
/// confirmed hash equals the server's, zero desyncs.
#[test]
fn four_lossy_clients_stay_in_sync_for_3000_ticks() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 1);
    let link = LinkConfig::lossy(50 * MS, 30 * MS, 5);
    let strategies = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ];
    for (i, s) in strategies.into_iter().enumerate() {
        sim.add_client(
            player(&format!("bot{i}")),
            link,
            link,
            Some(bot(s, i as u64)),
        );
    }
    sim.run_until(3000 * SEC / 60 + SEC / 2);
    assert!(sim.server.tick_number() >= 3000);
    for i in 0..4 {
        let verified = assert_in_sync(&sim, i);
        let s = sim.clients[i].session().stats();
        // Every confirmed tick after the join snapshot was hash-checked.
        assert!(
            verified > 2800,
            "client {i} verified only {verified}: {s:?}"
        );
        assert!(
            s.rollbacks > 0,
            "client {i}: loss and bots should cause rollbacks"
        );
        assert!(s.confirmed + 30 >= sim.server.tick_number(), "{s:?}");
    }
    let rs = sim.server.stats();
    assert_eq!(rs.players, 4);
    assert!(rs.resent_frames > 0, "5% loss should cause resends");
}

/// (b) forced mispredictions: the server's inputs for a slot are not what
/// the other clients predict, so they roll back and converge.
#[test]
fn mispredictions_roll_back_and_converge() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 2);
    let link = LinkConfig::delay(40 * MS);
    // A player that changes its input every few ticks: others always
    // predict "same as last" and are wrong.
    let mut t = 0u32;
    let flicker: InputFn<Sandbox> = Box::new(move |_| {
        t += 1;
        PlayerInput {
            move_x: if (t / 3).is_multiple_of(2) { 127 } else { -127 },
            buttons: if t.is_multiple_of(7) {
                PlayerInput::JUMP
            } else {
                0
            },
            ..PlayerInput::default()
        }
    });
    sim.add_client(player("flicker"), link, link, Some(flicker));
    sim.add_client(player("watcher"), link, link, Some(bot(Strategy::Idle, 0)));
    sim.run_until(10 * SEC);
    let w = sim.clients[1].session().stats();
    assert!(w.rollbacks > 50, "{w:?}");
    assert!(w.max_rollback >= 3, "{w:?}");
    // Clients report their rollbacks (cumulative, with the pings): the
    // server's sum trails the clients' by at most a ping interval.
    let r = sim.server.stats();
    let f = sim.clients[0].session().stats();
    assert!(r.rollbacks_reported <= w.rollbacks + f.rollbacks, "{r:?}");
    assert!(
        r.rollbacks_reported + 60 >= w.rollbacks + f.rollbacks,
        "{r:?}"
    );
    assert!(u64::from(r.max_rollback_reported) <= w.max_rollback.max(f.max_rollback));
    assert!(r.max_rollback_reported >= 3, "{r:?}");
    assert_in_sync(&sim, 0);
    assert_in_sync(&sim, 1);
    // Let the flicker stop: the present converges on the server's state.
    sim.clients[0]
        .session_mut()
        .set_input(PlayerInput::default());
    let tick_before = sim.server.tick_number();
    sim.run_until(11 * SEC);
    assert!(sim.server.tick_number() > tick_before + 50);
    assert_in_sync(&sim, 1);
}

/// (c) a client joining at tick 1500 of a busy room is in sync within 1 s.
#[test]
fn late_joiner_syncs_within_a_second() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 3);
    let link = LinkConfig::lossy(40 * MS, 10 * MS, 2);
    for i in 0..3 {
        sim.add_client(player("early"), link, link, Some(bot(Strategy::Random, i)));
    }
    sim.run_until(1500 * SEC / 60);
    let join_at = sim.now;
    let late = sim.add_client(player("late"), link, link, Some(bot(Strategy::Chaser, 9)));
    sim.run_until(join_at + SEC);
    let synced_at = sim.clients[late]
        .events
        .iter()
        .find(|(_, e)| matches!(e, ClientEvent::Synced { .. }))
        .map(|(t, _)| *t)
        .expect("late joiner got a snapshot");
    assert!(
        synced_at - join_at < SEC,
        "synced after {} ms",
        (synced_at - join_at) / MS
    );
    let s = sim.clients[late].session().stats();
    assert!(s.verified > 20, "{s:?}");
    assert!(sim.clients[late].session().is_playing());
    assert_in_sync(&sim, late);
    for i in 0..3 {
        assert_in_sync(&sim, i);
    }
}

/// (d) a client that drops and reconnects gets its slot back.
#[test]
fn reconnect_reclaims_the_slot() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 4);
    let link = LinkConfig::delay(30 * MS);
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Random, 1)));
    sim.add_client(player("b"), link, link, Some(bot(Strategy::Circle, 2)));
    sim.run_until(2 * SEC);
    let slot = sim.clients[1].session().slot().expect("b has a slot");
    let secret = sim.clients[1]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            ClientEvent::Welcomed { secret, .. } => Some(*secret),
            _ => None,
        })
        .expect("welcomed");
    sim.drop_connection(1);
    sim.run_until(4 * SEC);
    // While away the slot is still occupied (kept for the grace period).
    assert!(sim.server.game().slots()[usize::from(slot)].active);
    // Someone else joining does not get it.
    let c = sim.add_client(player("c"), link, link, Some(bot(Strategy::Idle, 3)));
    sim.run_until(5 * SEC);
    assert_ne!(sim.clients[c].session().slot(), Some(slot));
    sim.connect(
        1,
        ClientConfig {
            reconnect: Some(secret),
            ..player("b")
        },
    );
    sim.run_until(7 * SEC);
    assert_eq!(sim.clients[1].session().slot(), Some(slot));
    assert!(sim.room_events.iter().any(|(_, e)| matches!(
        e,
        RoomEvent::Joined {
            reconnect: true,
            ..
        }
    )));
    for i in 0..3 {
        assert_in_sync(&sim, i);
    }
}

/// (d') a dropped player's slot is freed after the grace period.
#[test]
fn dropped_slot_is_freed_after_grace() {
    let config = RoomConfig {
        reconnect_grace: 2 * SEC,
        ..RoomConfig::default()
    };
    let mut sim = NetSim::new(rules(), config, 5);
    let link = LinkConfig::delay(20 * MS);
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Idle, 1)));
    sim.add_client(player("b"), link, link, Some(bot(Strategy::Idle, 2)));
    sim.run_until(SEC);
    let slot = sim.clients[1].session().slot().unwrap();
    sim.drop_connection(1);
    sim.run_until(4 * SEC);
    assert!(!sim.server.game().slots()[usize::from(slot)].active);
    assert_in_sync(&sim, 0);
}

/// (e) a client whose world is corrupted on purpose is detected at the
/// first divergent tick and resynced.
#[test]
fn corrupted_client_is_detected_and_resynced() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 6);
    let link = LinkConfig::delay(30 * MS);
    // Idle players: their inputs never change, so no rollback comes to
    // re-simulate b's present from a clean saved state and undo the
    // corruption (with moving players one did or did not, by chance).
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Idle, 1)));
    sim.add_client(player("b"), link, link, Some(bot(Strategy::Idle, 2)));
    sim.run_until(2 * SEC);
    // Nudge one loose body in client b's present world.
    let tl = sim.clients[1].session_mut().timeline_mut().unwrap();
    let corrupt_tick = tl.tick();
    let confirmed = tl.confirmed_tick();
    let world = tl.game_mut().world_mut();
    let body = world.bodies().nth(10).unwrap();
    let p = world.position(body).unwrap();
    world
        .set_transform(
            body,
            p + bitroom_sim::Vec2::from_ints(0, 1),
            bitroom_sim::Rot::IDENTITY,
        )
        .unwrap();
    sim.run_until(4 * SEC);
    let desync = sim.clients[1]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            ClientEvent::Desync { tick, .. } => Some(*tick),
            _ => None,
        })
        .expect("desync detected");
    // The corruption happened after `corrupt_tick`; it shows in the first
    // confirmed tick after it that the client did not re-simulate from a
    // clean state... which is the tick right after it (or the confirmed one
    // if the corrupted state was rolled over).
    assert!(
        desync > confirmed && desync <= corrupt_tick + 1,
        "desync at {desync}, corrupted after {corrupt_tick}"
    );
    assert!(sim.room_events.iter().any(|(_, e)| matches!(e, RoomEvent::Desync { report, .. } if report.tick == desync && !report.state.is_empty())));
    let synced = sim.clients[1]
        .events
        .iter()
        .filter(|(_, e)| matches!(e, ClientEvent::Synced { .. }))
        .count();
    assert_eq!(synced, 2, "join snapshot and the resync snapshot");
    assert_eq!(sim.clients[1].desyncs(), 1);
    assert!(sim.clients[1].session().is_playing());
    sim.compare_confirmed(1).unwrap();
    assert_in_sync(&sim, 0);
}

/// (f) a client 500 ms behind (a stalled process) recovers.
#[test]
fn stalled_client_recovers() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 7);
    let link = LinkConfig::lossy(40 * MS, 10 * MS, 1);
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Random, 1)));
    sim.add_client(player("b"), link, link, Some(bot(Strategy::Chaser, 2)));
    sim.run_until(3 * SEC);
    sim.freeze(1, 500 * MS);
    sim.run_until(3 * SEC + 500 * MS);
    let before = sim.clients[1].session().stats();
    sim.run_until(5 * SEC);
    let after = sim.clients[1].session().stats();
    assert!(
        after.verified > before.verified + 60,
        "{before:?} -> {after:?}"
    );
    assert!(sim.clients[1].session().is_playing());
    assert_in_sync(&sim, 1);
    assert_in_sync(&sim, 0);
    // Its inputs arrive on time again: the reported lead is positive.
    assert!(after.input_lead > 0, "{after:?}");
    assert!(
        after.confirmed + 20 >= sim.server.tick_number(),
        "{after:?}"
    );
}

/// A client silent for longer than the frame history is started over
/// from a snapshot and recovers.
#[test]
fn a_long_silent_client_recovers_from_a_snapshot() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 9);
    let link = LinkConfig::delay(30 * MS);
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Random, 1)));
    sim.add_client(player("b"), link, link, Some(bot(Strategy::Chaser, 2)));
    sim.run_until(2 * SEC);
    assert_eq!(sim.server.stats().snapshots, 2, "the joins");
    // History is 240 ticks (4 s): frozen for 9 s, b falls out of it.
    sim.freeze(1, 9 * SEC);
    sim.run_until(11 * SEC);
    assert!(sim.server.stats().snapshots > 2, "b is started over");
    sim.run_until(14 * SEC);
    assert!(sim.clients[1].session().is_playing());
    assert_in_sync(&sim, 1);
    assert_in_sync(&sim, 0);
    let s = sim.clients[1].session().stats();
    assert!(s.confirmed + 20 >= sim.server.tick_number(), "{s:?}");
}

/// A room catching up on late ticks (the server stalled) sends a client
/// that has not answered its snapshot no further snapshot until the retry
/// interval has passed, however many ticks it steps.
#[test]
fn a_catching_up_room_does_not_repeat_snapshots() {
    let mut room = ServerRoom::new(rules(), RoomConfig::default(), 0);
    room.handle_connect(0, 1);
    let hello = encode_client_reliable(&ClientReliable::Hello(Hello {
        version: PROTOCOL_VERSION,
        rules: rules().fingerprint(),
        room: "r".into(),
        name: "silent".into(),
        spectator: false,
        reconnect: None,
        token: None,
    }));
    room.handle_reliable(0, 1, &hello);
    assert_eq!(room.stats().snapshots, 1);
    // 1000 ticks (four times the frame history) at one instant.
    for _ in 0..1000 {
        room.tick(1_000);
    }
    assert_eq!(room.stats().snapshots, 1, "no repeat within the interval");
    // Once the interval has passed, the silent client is tried again.
    room.tick(2_100_000);
    assert_eq!(room.stats().snapshots, 2);
}

/// The clock keeps inputs arriving just ahead of need, and the tick rate
/// adjustment stays within ±10 %.
#[test]
fn clock_sync_keeps_a_small_positive_lead() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 8);
    let link = LinkConfig::lossy(60 * MS, 20 * MS, 0);
    sim.add_client(player("a"), link, link, Some(bot(Strategy::Random, 1)));
    let mut late_samples = Vec::new();
    for k in 1..=20 {
        sim.run_until(k * SEC / 2);
        let s = sim.clients[0].session().stats();
        assert!(s.rate_adjust.abs() <= 100, "{s:?}");
        if k > 8 {
            late_samples.push(s.input_lead);
        }
    }
    let lead_ms: Vec<i64> = late_samples.iter().map(|l| l / 1000).collect();
    assert!(
        lead_ms.iter().all(|&l| (0..=80).contains(&l)),
        "lead {lead_ms:?} ms"
    );
    let late = sim.server.stats().late_inputs;
    let ticks = sim.server.tick_number();
    assert!(late * 20 < ticks, "{late} late inputs in {ticks} ticks");
}

/// A spectator receives frames, stays in sync, and sends no inputs.
#[test]
fn spectators_watch_in_sync() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 9);
    let link = LinkConfig::lossy(30 * MS, 10 * MS, 3);
    sim.add_client(player("p"), link, link, Some(bot(Strategy::Random, 1)));
    sim.add_client(
        ClientConfig {
            spectator: true,
            ..player("s")
        },
        link,
        link,
        None,
    );
    sim.run_until(5 * SEC);
    assert_eq!(sim.clients[1].session().slot(), None);
    assert!(assert_in_sync(&sim, 1) > 200);
    let rs = sim.server.stats();
    assert_eq!((rs.players, rs.spectators), (1, 1));
    assert_eq!(rs.wrong_slot, 0);
}

/// A full room refuses the next player with a clear reason.
#[test]
fn full_room_refuses() {
    let config = RoomConfig {
        max_players: 2,
        ..RoomConfig::default()
    };
    let mut sim = NetSim::new(rules(), config, 10);
    let link = LinkConfig::delay(10 * MS);
    for _ in 0..3 {
        sim.add_client(player("p"), link, link, None);
    }
    sim.run_until(SEC);
    assert!(sim.clients[2].events.iter().any(|(_, e)| matches!(
        e,
        ClientEvent::Kicked(bitroom_protocol::KickReason::RoomFull)
    )));
    assert!(sim.clients[0].session().is_playing());
}

/// Without prediction the client shows the confirmed game and stays in sync.
#[test]
fn no_predict_mode_stays_in_sync() {
    let mut sim = NetSim::new(rules(), RoomConfig::default(), 11);
    let link = LinkConfig::lossy(40 * MS, 10 * MS, 3);
    sim.add_client(
        ClientConfig {
            predict: false,
            ..player("np")
        },
        link,
        link,
        Some(bot(Strategy::Random, 1)),
    );
    sim.add_client(player("p"), link, link, Some(bot(Strategy::Random, 2)));
    sim.run_until(5 * SEC);
    let s = sim.clients[0].session().stats();
    assert_eq!(s.rollbacks, 0);
    assert_eq!(s.tick, s.confirmed);
    assert!(assert_in_sync(&sim, 0) > 200);
}

/// Downstream bandwidth for 8 players depends on players, not bodies:
/// measured on message payloads in steady state.
#[test]
fn downstream_is_input_driven() {
    let measure = |bodies: u32| {
        let rules = Sandbox::new(SandboxConfig {
            loose_bodies: bodies,
        });
        let mut sim = NetSim::new(rules, RoomConfig::default(), 12);
        let link = LinkConfig::delay(30 * MS);
        for i in 0..8 {
            sim.add_client(player("p"), link, link, Some(bot(Strategy::Random, i)));
        }
        sim.run_until(5 * SEC);
        let before: Vec<u64> = sim.clients.iter().map(|c| c.bytes_down()).collect();
        sim.run_until(15 * SEC);
        let per_client: Vec<u64> = sim
            .clients
            .iter()
            .zip(&before)
            .map(|(c, b)| (c.bytes_down() - b) * 8 / 10)
            .collect();
        per_client.iter().sum::<u64>() / 8
    };
    let few = measure(20);
    let many = measure(400);
    println!("downstream per client: {few} bit/s (20 bodies), {many} bit/s (400 bodies)");
    assert!(few <= 16_000, "{few} bit/s");
    assert!(many <= 16_000, "{many} bit/s");
    assert!(many.abs_diff(few) * 10 < few, "{few} vs {many}");
}
