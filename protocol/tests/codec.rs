//! Every message type from arbitrary bytes: an error or a valid message,
//! never a panic, never an allocation past the limit.

use bitroom_protocol::*;
use bitroom_sim::game::sandbox::PlayerInput;
use bitroom_sim::game::{Input, SlotEvent, MAX_SLOTS};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// Encoded samples per message type: client reliable, client datagram,
/// server reliable, server datagram.
type Samples = (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<Vec<u8>>);

fn samples() -> Samples {
    let cr = vec![
        encode_client_reliable(&ClientReliable::Hello(Hello {
            version: PROTOCOL_VERSION,
            rules: 42,
            room: "lobby".into(),
            name: "ann".into(),
            spectator: false,
            reconnect: Some(ReconnectSecret([7; 16])),
            token: Some(vec![0x42; 120]),
        })),
        encode_client_reliable(&ClientReliable::Desync(DesyncReport {
            tick: 9,
            client_hash: 1,
            server_hash: 2,
            state: vec![1, 2, 3],
        })),
        encode_client_reliable(&ClientReliable::Leave),
    ];
    let cd = vec![
        encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
            slot: 3,
            first_tick: 100,
            runs: vec![
                InputRun {
                    count: 3,
                    input: PlayerInput::default(),
                },
                InputRun {
                    count: 2,
                    input: PlayerInput {
                        move_x: -5,
                        aim: 300,
                        ..PlayerInput::default()
                    },
                },
            ],
            ack: FrameAck {
                through: 90,
                ahead: 5,
                recent: 5,
            },
        })),
        encode_client_datagram(&ClientDatagram::<PlayerInput>::Ping {
            time: 5,
            rollbacks: 7,
            max_rollback: 3,
        }),
        encode_client_datagram(&ClientDatagram::<PlayerInput>::Ack(FrameAck::default())),
    ];
    let sr = vec![
        encode_server_reliable(&ServerReliable::Welcome(Welcome {
            version: PROTOCOL_VERSION,
            slot: Some(1),
            slots: 8,
            tick: 5,
            tick_rate: 60,
            secret: ReconnectSecret([3; 16]),
        })),
        encode_server_reliable(&ServerReliable::Snapshot(SnapshotChunk {
            tick: 5,
            state_hash: 1,
            total_len: 10,
            bytes_hash: 2,
            offset: 0,
            data: vec![0; 10],
        })),
        encode_server_reliable(&ServerReliable::Kick(KickReason::RulesMismatch {
            server: 1,
            client: 2,
        })),
    ];
    let sd = vec![
        encode_server_datagram(&ServerDatagram::Frames(FrameBundle {
            tick: 5,
            input_ack: -1,
            input_lead: -3,
            frames: vec![
                TickData {
                    back: 0,
                    hash: 77,
                    changes: Some(InputChanges {
                        mask: 0b101,
                        inputs: vec![PlayerInput::default(); 2],
                    }),
                    events: Some(vec![SlotEvent::Join(2)]),
                },
                TickData {
                    back: 1,
                    hash: 0xffff_fff0,
                    changes: None,
                    events: None,
                },
            ],
        })),
        encode_server_datagram(&ServerDatagram::<PlayerInput>::Pong { time: 1 }),
    ];
    (cr, cd, sr, sd)
}

fn decode_all(bytes: &[u8]) {
    let _ = decode_client_reliable(bytes);
    let _ = decode_client_datagram::<PlayerInput>(bytes);
    let _ = decode_server_reliable(bytes);
    let _ = decode_server_datagram::<PlayerInput>(bytes);
}

#[test]
fn messages_round_trip() {
    let (cr, cd, sr, sd) = samples();
    for b in &cr {
        assert_eq!(
            &encode_client_reliable(&decode_client_reliable(b).unwrap()),
            b
        );
    }
    for b in &cd {
        assert_eq!(
            &encode_client_datagram(&decode_client_datagram::<PlayerInput>(b).unwrap()),
            b
        );
    }
    for b in &sr {
        assert_eq!(
            &encode_server_reliable(&decode_server_reliable(b).unwrap()),
            b
        );
    }
    for b in &sd {
        assert_eq!(
            &encode_server_datagram(&decode_server_datagram::<PlayerInput>(b).unwrap()),
            b
        );
    }
}

#[test]
fn every_truncation_is_an_error() {
    let (cr, cd, sr, sd) = samples();
    for b in &cr {
        for n in 0..b.len() {
            assert!(decode_client_reliable(&b[..n]).is_err(), "{n}");
        }
    }
    for b in &cd {
        for n in 0..b.len() {
            assert!(
                decode_client_datagram::<PlayerInput>(&b[..n]).is_err(),
                "{n}"
            );
        }
    }
    for b in &sr {
        for n in 0..b.len() {
            assert!(decode_server_reliable(&b[..n]).is_err(), "{n}");
        }
    }
    for b in &sd {
        for n in 0..b.len() {
            assert!(
                decode_server_datagram::<PlayerInput>(&b[..n]).is_err(),
                "{n}"
            );
        }
    }
}

#[test]
fn trailing_bytes_and_oversize_are_refused() {
    let (_, cd, _, _) = samples();
    let mut b = cd[1].clone();
    b.push(0);
    assert!(matches!(
        decode_client_datagram::<PlayerInput>(&b),
        Err(CodecError::Trailing(1))
    ));
    let big = vec![0u8; MAX_DATAGRAM + 1];
    assert!(matches!(
        decode_client_datagram::<PlayerInput>(&big),
        Err(CodecError::TooLarge { .. })
    ));
}

#[test]
fn huge_declared_lengths_do_not_allocate() {
    // A Hello whose room string claims 2^60 bytes.
    let mut b = vec![0, 0, 0, 0]; // variant Hello
    b.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    b.extend_from_slice(&42u64.to_le_bytes());
    b.extend_from_slice(&(1u64 << 60).to_le_bytes());
    b.extend_from_slice(b"abc");
    assert!(decode_client_reliable(&b).is_err());
    // An input batch whose runs claim u64::MAX bytes (variant, slot,
    // first tick, then a varint u64 length).
    let mut d = vec![0, 1, 5, 253];
    d.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(decode_client_datagram::<PlayerInput>(&d).is_err());
}

#[test]
fn invalid_fields_are_named() {
    let long = "x".repeat(MAX_NAME + 1);
    let b = encode_client_reliable(&ClientReliable::Hello(Hello {
        version: 1,
        rules: 0,
        room: long,
        name: "a".into(),
        spectator: false,
        reconnect: None,
        token: None,
    }));
    let e = decode_client_reliable(&b).unwrap_err();
    assert!(e.to_string().contains("room name"), "{e}");
    let b = encode_client_reliable(&ClientReliable::Hello(Hello {
        version: 1,
        rules: 0,
        room: "a".into(),
        name: "a".into(),
        spectator: false,
        reconnect: None,
        token: Some(vec![0; token::MAX_TOKEN_LEN + 1]),
    }));
    let e = decode_client_reliable(&b).unwrap_err();
    assert!(e.to_string().contains("token too long"), "{e}");
    let batch = |runs: Vec<InputRun<PlayerInput>>| {
        encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
            slot: 0,
            first_tick: 0,
            runs,
            ack: FrameAck::default(),
        }))
    };
    let run = |count| InputRun {
        count,
        input: PlayerInput::default(),
    };
    let e = decode_client_datagram::<PlayerInput>(&batch(vec![run(MAX_BATCH_TICKS as u8 + 1)]));
    assert!(e.unwrap_err().to_string().contains("too many inputs"));
    let e = decode_client_datagram::<PlayerInput>(&batch(vec![run(2), run(0)]));
    assert!(e.unwrap_err().to_string().contains("empty run"));
    let tick = |back, changes| TickData {
        back,
        hash: 0,
        changes,
        events: None,
    };
    let bundle = |frames| {
        encode_server_datagram(&ServerDatagram::Frames(FrameBundle {
            tick: 1,
            input_ack: 0,
            input_lead: 0,
            frames,
        }))
    };
    let b = bundle(vec![tick(
        0,
        Some(InputChanges {
            mask: 0b11,
            inputs: vec![PlayerInput::default()],
        }),
    )]);
    let e = decode_server_datagram::<PlayerInput>(&b).unwrap_err();
    assert!(e.to_string().contains("mask"), "{e}");
    // Entries may not reach back further than ticks on the wire can name.
    let b = bundle(vec![tick(0, None), tick(MAX_BUNDLE_SPAN as u32, None)]);
    let e = decode_server_datagram::<PlayerInput>(&b).unwrap_err();
    assert!(e.to_string().contains("span"), "{e}");
    let b = bundle(vec![tick(0, None), tick(1, None)]);
    let ok = decode_server_datagram::<PlayerInput>(&b).unwrap();
    let ServerDatagram::Frames(ok) = ok else {
        unreachable!()
    };
    // Room tick 1: the entries are ticks 1, then (skipping 0) none.
    let ticks: Vec<u64> = ok.ticks(1).map(|(t, _)| t).collect();
    assert_eq!(ticks, vec![1]);
    let ticks: Vec<u64> = ok.ticks(70_000).map(|(t, _)| t).collect();
    assert_eq!(ticks, vec![70_000, 69_998]);
    let b = encode_server_reliable(&ServerReliable::Snapshot(SnapshotChunk {
        tick: 0,
        state_hash: 0,
        total_len: 4,
        bytes_hash: 0,
        offset: 2,
        data: vec![0; 3],
    }));
    assert!(decode_server_reliable(&b).is_err());
}

/// The widest input a hosted game may have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Widest([u8; MAX_INPUT_BYTES]);

impl Input for Widest {
    const MAX_ENCODED: usize = MAX_INPUT_BYTES;
}

/// An input whose stated size is smaller than its encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Understated(u64);

impl Input for Understated {
    const MAX_ENCODED: usize = 4;
}

#[test]
fn largest_datagrams_fit() {
    let widest = Widest([0xff; MAX_INPUT_BYTES]);
    assert_eq!(widest.encoded_len(), MAX_INPUT_BYTES);
    // The largest tick, alone in a bundle with the widest header fields.
    let bundle = ServerDatagram::Frames(FrameBundle {
        tick: u16::MAX,
        input_ack: i32::MIN,
        input_lead: i16::MIN,
        frames: vec![TickData {
            back: 0,
            hash: u32::MAX,
            changes: Some(InputChanges {
                mask: u32::MAX,
                inputs: vec![widest; usize::from(MAX_SLOTS)],
            }),
            events: Some(vec![SlotEvent::Leave(31); MAX_FRAME_EVENTS]),
        }],
    });
    let n = encode_server_datagram(&bundle).len();
    assert_eq!(
        n,
        153 + 32 * MAX_INPUT_BYTES,
        "the bound in MAX_INPUT_BYTES's docs"
    );
    assert!(n <= MAX_DATAGRAM, "{n} bytes");
    assert!(decode_server_datagram::<Widest>(&encode_server_datagram(&bundle)).is_ok());
    // A batch of 44 runs of distinct widest inputs and the widest ack
    // fits (a sender puts in the newest runs that fit).
    let batch = ClientDatagram::Inputs(InputBatch {
        slot: 31,
        first_tick: u16::MAX,
        runs: vec![
            InputRun {
                count: 1,
                input: widest,
            };
            44
        ],
        ack: FrameAck {
            through: u16::MAX,
            ahead: u32::MAX,
            recent: u32::MAX,
        },
    });
    let n = encode_client_datagram(&batch).len();
    assert_eq!(n, 19 + 44 * (1 + MAX_INPUT_BYTES));
    assert!(n <= MAX_DATAGRAM, "{n} bytes");
}

#[test]
fn inputs_over_the_stated_size_are_refused() {
    let big = Understated(u64::MAX);
    assert!(!big.fits());
    let batch = encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
        slot: 0,
        first_tick: 1,
        runs: vec![InputRun {
            count: 1,
            input: big,
        }],
        ack: FrameAck::default(),
    }));
    assert!(matches!(
        decode_client_datagram::<Understated>(&batch),
        Err(CodecError::Invalid(_))
    ));
    let bundle = encode_server_datagram(&ServerDatagram::Frames(FrameBundle {
        tick: 1,
        input_ack: 3,
        input_lead: 4,
        frames: vec![TickData {
            back: 0,
            hash: 2,
            changes: Some(InputChanges {
                mask: 1,
                inputs: vec![big],
            }),
            events: None,
        }],
    }));
    assert!(matches!(
        decode_server_datagram::<Understated>(&bundle),
        Err(CodecError::Invalid(_))
    ));
}

/// A tick in which no input changed costs 4 bytes right after the entry
/// before (its kind, 3 hash bytes), 5 further back (and its position); a
/// bundle of one, 10.
#[test]
fn idle_ticks_are_small() {
    let idle = |back| TickData::<PlayerInput> {
        back,
        hash: 0xdead_beef,
        changes: None,
        events: None,
    };
    let bundle = |frames| {
        encode_server_datagram(&ServerDatagram::Frames(FrameBundle {
            tick: 36_000,
            input_ack: 3,
            input_lead: 40,
            frames,
        }))
        .len()
    };
    assert_eq!(bundle(vec![idle(0)]), 10);
    assert_eq!(bundle(vec![idle(0), idle(0)]), 14);
    assert_eq!(bundle(vec![idle(0), idle(2)]), 15);
    // An input batch of one held input: 15 bytes.
    let batch = encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
        slot: 2,
        first_tick: 36_003,
        runs: vec![InputRun {
            count: 20,
            input: PlayerInput::default(),
        }],
        ack: FrameAck {
            through: 35_990,
            ahead: 0,
            recent: 0,
        },
    }));
    assert_eq!(batch.len(), 1 + 1 + 2 + 1 + 6 + 2 + 1 + 1);
}

#[test]
fn stream_framer_checks_lengths_before_buffering() {
    let mut f = StreamFramer::default();
    let a = StreamFramer::frame(b"hello");
    let b = StreamFramer::frame(b"");
    let mut all = a.clone();
    all.extend_from_slice(&b);
    // Byte by byte.
    for byte in &all {
        f.push(std::slice::from_ref(byte));
    }
    assert_eq!(f.next_message().unwrap().unwrap(), b"hello");
    assert_eq!(f.next_message().unwrap().unwrap(), b"");
    assert!(f.next_message().unwrap().is_none());
    let mut g = StreamFramer::default();
    g.push(&((MAX_RELIABLE as u32) + 1).to_le_bytes());
    assert!(g.next_message().is_err());
}

/// A frame ack names what the receiver holds: everything up to the first
/// gap, the newest frame, and the 32 before the newest (older ones beyond
/// a long gap are simply not named).
#[test]
fn frame_acks_name_the_newest_and_those_before_it() {
    let held = [13u64, 14, 60, 62, 70];
    let a = FrameAck::new(11, held.iter().copied());
    assert_eq!((a.through, a.ahead), (11, 59));
    let (through, newest) = (11, 70);
    for t in 0..=80u64 {
        let want = t <= 11 || t == 60 || t == 62 || t == 70;
        assert_eq!(a.holds(t, through, newest), want, "tick {t}");
    }
    // Nothing after the gap: newest is through.
    let b = FrameAck::new(20, std::iter::empty());
    assert_eq!((b.through, b.ahead, b.recent), (20, 0, 0));
    assert!(b.holds(20, 20, 20) && !b.holds(21, 20, 20));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1400)) {
        decode_all(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(which in 0usize..11, pos in any::<usize>(), val in any::<u8>(), cut in any::<usize>()) {
        let (cr, cd, sr, sd) = samples();
        let all: Vec<Vec<u8>> = cr.into_iter().chain(cd).chain(sr).chain(sd).collect();
        let mut b = all[which % all.len()].clone();
        let i = pos % b.len();
        b[i] = val;
        b.truncate(cut % (b.len() + 1));
        decode_all(&b);
    }
}
