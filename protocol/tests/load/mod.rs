//! One default-arena room and its players' load, as `bitroom-client bots
//! --load` makes it: each player sends the sandbox game's random inputs,
//! each held for 5 to 44 ticks, in one input datagram per tick. Shared by
//! `examples/room_load.rs` (which times the tick) and
//! `tests/room_allocations.rs` (which counts its allocations), so both
//! measure the same work.

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

/// One room and its players' random inputs.
pub struct Load {
    pub room: ServerRoom<Sandbox>,
    rng: u64,
    held: Vec<(u64, <Sandbox as Rules>::Input)>,
}

impl Load {
    /// A room with `players` seated, their inputs drawn from `seed`.
    pub fn new(rules: &Sandbox, players: u8, seed: u64) -> Load {
        let mut room = ServerRoom::new(rules.clone(), RoomConfig::default(), 0);
        for i in 0..players {
            let conn = ConnId::from(i) + 1;
            room.handle_connect(0, conn);
            let hello = ClientReliable::Hello(Hello {
                version: PROTOCOL_VERSION,
                rules: rules.fingerprint(),
                room: "load".into(),
                name: format!("load {i}"),
                spectator: false,
                reconnect: None,
                token: None,
            });
            room.handle_reliable(0, conn, &encode_client_reliable(&hello));
        }
        while room.poll_output().is_some() {}
        let held = (0..players).map(|_| (0u64, Default::default())).collect();
        Load {
            room,
            rng: seed,
            held,
        }
    }

    /// Every player's input datagram for the next tick.
    pub fn datagrams(&mut self, rules: &Sandbox) -> Vec<(ConnId, Vec<u8>)> {
        let t = self.room.tick_number() + 1;
        (0u8..)
            .zip(&mut self.held)
            .map(|(slot, (left, input))| {
                if *left == 0 {
                    let bits = next(&mut self.rng);
                    *input = rules.random_input(bits);
                    *left = 5 + next(&mut self.rng) % 40;
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

    /// The server's work for the next tick: `datagrams` in, the tick,
    /// every output handed to `out` (what the server sends), the events
    /// drained.
    pub fn tick(&mut self, datagrams: &[(ConnId, Vec<u8>)], mut out: impl FnMut(Output)) {
        let room = &mut self.room;
        let now = room.deadline(room.tick_number() + 1);
        for (conn, bytes) in datagrams {
            room.handle_datagram(now, *conn, bytes);
        }
        room.tick(now);
        while let Some(o) = room.poll_output() {
            out(o);
        }
        while room.poll_event().is_some() {}
    }
}
