//! Recording overhead and verification speed.
//!
//! - `room_tick/arena_4_bots`: the server's work for one tick of the default
//!   arena room (200 loose bodies) with four bots: their input datagrams,
//!   `ServerRoom::tick`, draining the outputs. The bots' own thinking is not
//!   timed.
//! - `record_tick/arena_4_bots`: `Recorder::record_tick` after each of those
//!   ticks, with the once-a-second `flush` to a file; `no_keyframe` never
//!   writes a keyframe, `keyframe_every_tick` writes one every tick, so the
//!   amortised cost with a keyframe every K ticks is
//!   `no_keyframe + (keyframe_every_tick − no_keyframe) / K`.
//! - `verify/arena_1000_bodies_60_ticks`: `replay::verify` of one second
//!   (60 ticks) of a 4-bot arena room with 1000 loose bodies, from an
//!   in-memory file; ticks per second = 60 / time.
//!
//! Run: `cargo bench -p bitroom-protocol --bench replay`.

use bitroom_protocol::replay::{verify, Recorder, RecordingMeta, ReplayReader};
use bitroom_protocol::*;
use bitroom_sim::game::bots::Bot;
use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
use bitroom_sim::game::sandbox::{SandboxBot, Strategy};
use bitroom_sim::game::{Game, InputSet, Rules, SlotEvent};
use criterion::{criterion_group, criterion_main, Criterion};
use std::fs::File;
use std::io::BufWriter;
use std::time::{Duration, Instant};

/// A room with four bots, `warm` ticks in.
struct BotRoom {
    room: ServerRoom<Sandbox>,
    bots: Vec<(ConnId, u8, SandboxBot)>,
}

impl BotRoom {
    fn new(warm: u64) -> BotRoom {
        let rules = Sandbox::default();
        let fp = rules.fingerprint();
        let mut room = ServerRoom::new(rules, RoomConfig::default(), 0);
        let mut bots = Vec::new();
        let strategies = [
            Strategy::Random,
            Strategy::Chaser,
            Strategy::Circle,
            Strategy::Random,
        ];
        for (i, s) in strategies.into_iter().enumerate() {
            let conn = i as ConnId + 1;
            room.handle_connect(0, conn);
            let hello = ClientReliable::Hello(Hello {
                version: PROTOCOL_VERSION,
                rules: fp,
                room: "bench".into(),
                name: format!("bot {i}"),
                spectator: false,
                reconnect: None,
                token: None,
            });
            room.handle_reliable(0, conn, &encode_client_reliable(&hello));
            bots.push((conn, i as u8, SandboxBot::new(s, conn)));
        }
        while room.poll_output().is_some() {}
        let mut r = BotRoom { room, bots };
        for _ in 0..warm {
            let d = r.datagrams();
            r.tick(&d);
        }
        r
    }

    /// The bots' input datagrams for the next tick (untimed: client work).
    fn datagrams(&mut self) -> Vec<(ConnId, Vec<u8>)> {
        let t = self.room.tick_number() + 1;
        let game = self.room.game();
        self.bots
            .iter_mut()
            .map(|(conn, slot, bot)| {
                let batch = ClientDatagram::Inputs(InputBatch {
                    slot: *slot,
                    first_tick: t as u16,
                    runs: vec![InputRun {
                        count: 1,
                        input: bot.next_input(game, *slot),
                    }],
                    ack: FrameAck {
                        through: t as u16 - 1,
                        ahead: 0,
                        recent: 0,
                    },
                });
                (*conn, encode_client_datagram(&batch))
            })
            .collect()
    }

    /// The server's work for one tick.
    fn tick(&mut self, datagrams: &[(ConnId, Vec<u8>)]) {
        let now = self.room.deadline(self.room.tick_number() + 1);
        for (conn, bytes) in datagrams {
            self.room.handle_datagram(now, *conn, bytes);
        }
        self.room.tick(now);
        while self.room.poll_output().is_some() {}
        while self.room.poll_event().is_some() {}
    }
}

fn room_tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("room_tick");
    group.sample_size(20);
    let mut r = BotRoom::new(300);
    group.bench_function("arena_4_bots", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let d = r.datagrams();
                let t = Instant::now();
                r.tick(&d);
                total += t.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn record_tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("record_tick");
    group.sample_size(20);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join("bench-record.brr");
    for (name, interval) in [("no_keyframe", u32::MAX), ("keyframe_every_tick", 1)] {
        let mut r = BotRoom::new(300);
        let file = File::create(&path).expect("bench file");
        let meta = RecordingMeta {
            keyframe_interval: interval,
            ..RecordingMeta::new("sandbox", "bench", "arena", 60)
        };
        let mut rec = Recorder::new(BufWriter::new(file), r.room.game(), meta).expect("recorder");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let d = r.datagrams();
                    r.tick(&d);
                    let t = Instant::now();
                    rec.record_tick(r.room.game(), r.room.last_inputs(), r.room.last_hash())
                        .expect("record");
                    if r.room.tick_number().is_multiple_of(60) {
                        rec.flush().expect("flush");
                    }
                    total += t.elapsed();
                }
                total
            })
        });
        // Keep the bench file small between runs.
        let _ = rec.finish();
    }
    // What the room's tick pays at a keyframe tick when a thread of its
    // own records (as the server does): the tick's parts and a copy of the
    // state handed over a channel; packing and writing happen on the other
    // thread. A keyframe every 10 ticks, so the writer keeps up and the
    // channel never pushes back; only the keyframe ticks are timed.
    let mut r = BotRoom::new(300);
    let file = File::create(&path).expect("bench file");
    let meta = RecordingMeta {
        keyframe_interval: 10,
        ..RecordingMeta::new("sandbox", "bench", "arena", 60)
    };
    let mut rec = Recorder::new(BufWriter::new(file), r.room.game(), meta).expect("recorder");
    let (to, from) = std::sync::mpsc::sync_channel(4096);
    let writer = std::thread::spawn(move || {
        for (tick, inputs, hash, keyframe) in from {
            rec.record_parts(tick, &inputs, hash, keyframe)
                .expect("record");
        }
        rec
    });
    group.bench_function("handoff_at_a_keyframe", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut timed = 0;
            while timed < iters {
                let d = r.datagrams();
                r.tick(&d);
                let t = Instant::now();
                let game = r.room.game();
                let keyframe = game.tick().is_multiple_of(10).then(|| game.snapshot());
                let is_keyframe = keyframe.is_some();
                let parts = (
                    game.tick(),
                    r.room.last_inputs().clone(),
                    r.room.last_hash(),
                    keyframe,
                );
                to.send(parts).expect("writer alive");
                if is_keyframe {
                    total += t.elapsed();
                    timed += 1;
                }
            }
            total
        })
    });
    drop(to);
    let _ = writer.join().expect("writer").finish();
    let _ = std::fs::remove_file(&path);
    group.finish();
}

fn verify_1000(c: &mut Criterion) {
    // 4 bots in an arena of 1000 loose bodies, 300 ticks in (the bodies
    // have landed), then one recorded second.
    let mut game = Game::new(Sandbox::new(SandboxConfig { loose_bodies: 1000 }), 4);
    let mut bots: Vec<SandboxBot> = (0..4)
        .map(|i| SandboxBot::new(Strategy::Random, 9 + i))
        .collect();
    let mut step = |game: &mut Game<Sandbox>, t: u64| {
        let mut set = InputSet::with_inputs(
            bots.iter_mut()
                .enumerate()
                .map(|(i, b)| b.next_input(game, i as u8))
                .collect(),
        );
        if t <= 4 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        game.step(&set);
        set
    };
    for t in 1..=300 {
        step(&mut game, t);
    }
    let meta = RecordingMeta {
        keyframe_interval: 600,
        ..RecordingMeta::new("sandbox", "bench", "arena", 60)
    };
    let mut rec = Recorder::new(Vec::new(), &game, meta).expect("recorder");
    for t in 301..=360 {
        let set = step(&mut game, t);
        rec.record_tick(&game, &set, game.state_hash())
            .expect("record");
    }
    let bytes = rec.finish().expect("finish");
    let mut group = c.benchmark_group("verify");
    group.sample_size(10);
    group.bench_function("arena_1000_bodies_60_ticks", |b| {
        b.iter(|| {
            let reader = ReplayReader::open(&bytes[..]).expect("valid");
            let rep = verify(
                reader,
                |h, i| Ok(Sandbox::replaying(i, h.rules_fingerprint)),
                &Default::default(),
                &mut |_| {},
            )
            .expect("verifies");
            assert_eq!(rep.ticks_verified, 60);
            assert!(rep.divergence.is_none());
        })
    });
    group.finish();
}

criterion_group!(benches, room_tick, record_tick, verify_1000);
criterion_main!(benches);
