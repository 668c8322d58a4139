//! The allocations of a room's tick, counted: a default-arena room with
//! eight players, each sending an input datagram every tick (as the load
//! clients do), ticked in-process.
//!
//! A server ticks many rooms sixty times a second; every allocation there
//! is paid per room per tick. This pins the count so a change that adds
//! allocations to the tick (a vector grown from empty per datagram, a heap
//! stack per broad-phase query, a clone per client) fails here instead of
//! going unnoticed in the noise of the room-cost runs.
//!
//! This test binary alone counts allocations (`allocation-counter`
//! replaces its global allocator).

use bitroom_protocol::*;
use bitroom_sim::game::bots::BotRules;
use bitroom_sim::game::sandbox::Sandbox;
use bitroom_sim::game::Rules;

/// SplitMix64: the players' random bits.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const PLAYERS: u8 = 8;

/// Each player's input datagram for tick `t` (inputs held 5 to 44 ticks).
fn datagrams(
    rules: &Sandbox,
    rng: &mut u64,
    held: &mut [(u64, <Sandbox as Rules>::Input)],
    t: u64,
) -> Vec<(ConnId, Vec<u8>)> {
    (0u8..)
        .zip(held.iter_mut())
        .map(|(slot, (left, input))| {
            if *left == 0 {
                *input = rules.random_input(next(rng));
                *left = 5 + next(rng) % 40;
            }
            *left -= 1;
            let batch = ClientDatagram::Inputs(InputBatch {
                slot,
                first_tick: t as u16,
                runs: vec![InputRun {
                    count: 1,
                    input: *input,
                }],
                ack: FrameAck {
                    through: t as u16 - 1,
                    ahead: 0,
                    recent: 0,
                },
            });
            (ConnId::from(slot) + 1, encode_client_datagram(&batch))
        })
        .collect()
}

#[test]
fn a_room_tick_allocates_a_bounded_number_of_times() {
    let rules = Sandbox::for_scene("arena", |s| Err(format!("{s}: no such scene"))).expect("arena");
    let mut room = ServerRoom::new(rules.clone(), RoomConfig::default(), 0);
    for i in 0..PLAYERS {
        let conn = ConnId::from(i) + 1;
        room.handle_connect(0, conn);
        let hello = ClientReliable::Hello(Hello {
            version: PROTOCOL_VERSION,
            rules: rules.fingerprint(),
            room: "alloc".into(),
            name: format!("player {i}"),
            spectator: false,
            reconnect: None,
            token: None,
        });
        room.handle_reliable(0, conn, &encode_client_reliable(&hello));
    }
    while room.poll_output().is_some() {}
    let mut rng = 7u64;
    let mut held = vec![(0u64, <Sandbox as Rules>::Input::default()); usize::from(PLAYERS)];
    let mut counted = 0u64;
    let mut datagrams_out = 0u64;
    const WARM: u64 = 120;
    const COUNTED: u64 = 120;
    for _ in 0..WARM + COUNTED {
        let t = room.tick_number() + 1;
        let inputs = datagrams(&rules, &mut rng, &mut held, t);
        let now = room.deadline(t);
        let mut outputs = Vec::with_capacity(64);
        let info = allocation_counter::measure(|| {
            for (conn, bytes) in &inputs {
                room.handle_datagram(now, *conn, bytes);
            }
            room.tick(now);
            while let Some(o) = room.poll_output() {
                // Kept (not dropped) inside the count: what the room hands
                // the server to send.
                outputs.push(o);
            }
            while room.poll_event().is_some() {}
        });
        if t > WARM {
            counted += info.count_total;
            datagrams_out += outputs
                .iter()
                .filter(|o| matches!(o, Output::Datagram { .. }))
                .count() as u64;
        }
    }
    // Every player got its bundle every tick.
    assert_eq!(datagrams_out, COUNTED * u64::from(PLAYERS));
    let per_tick = counted / COUNTED;
    eprintln!("allocations per room tick: {per_tick} ({counted} over {COUNTED} ticks)");
    // 98 in release and 99 in debug when this was written (2026-11-27).
    // With the trees' query stack on the heap again it was 136; with
    // messages encoded by `encode_to_vec` again, 108 (both tried). Raise
    // the bound deliberately if a change needs more, and say why.
    assert!(
        per_tick <= 105,
        "a room tick allocates {per_tick} times (bound 105): \
         something in the tick allocates per client or per query again"
    );
}
