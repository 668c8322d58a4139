//! Replay files: record → verify round trips over a real `ServerRoom`,
//! damaged files (every truncation, every flipped byte, bad headers,
//! random bytes), perturbed re-simulations caught at the right tick with the
//! right body.

use bitroom_protocol::replay::*;
use bitroom_protocol::*;
use bitroom_sim::game::bots::Bot;
use bitroom_sim::game::diff::Field;
use bitroom_sim::game::sandbox::PlayerInput;
use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig, AVATAR_TAG};
use bitroom_sim::game::sandbox::{SandboxBot, Strategy};
use bitroom_sim::game::{Game, GameSnapshot, InputSet, Rules, SlotEvent};
use bitroom_sim::{fx, Scalar, Vec2};
use proptest::prelude::*;
use std::io::{self, Cursor, Write};

/// The replay types for the sandbox's input.
type Record = bitroom_protocol::replay::Record<PlayerInput>;
type ReplayIndex = bitroom_protocol::replay::ReplayIndex<PlayerInput>;
type ReplayReader<Rd> = bitroom_protocol::replay::ReplayReader<Rd, PlayerInput>;

fn rules(loose: u32) -> Sandbox {
    Sandbox::new(SandboxConfig {
        loose_bodies: loose,
    })
}

fn meta(interval: u32) -> RecordingMeta {
    RecordingMeta {
        keyframe_interval: interval,
        ..RecordingMeta::new("sandbox", "test room", "arena", 60)
    }
}

/// The sandbox rules for a recording (see `Sandbox::for_replay`).
fn sandbox_rules(header: &Header, initial: &GameSnapshot<Sandbox>) -> Result<Sandbox, ResimError> {
    Ok(Sandbox::replaying(initial, header.rules_fingerprint))
}

fn hello(fingerprint: u64) -> Vec<u8> {
    encode_client_reliable(&ClientReliable::Hello(Hello {
        version: PROTOCOL_VERSION,
        rules: fingerprint,
        room: "test room".into(),
        name: "bot".into(),
        spectator: false,
        reconnect: None,
        token: None,
    }))
}

/// A recording of a real room: four bots join at tick 0, the fourth leaves
/// at tick 100, a fifth joins at tick 120; each sends its input for the
/// next tick as a datagram before the tick. Returns the file and the room's
/// final hash.
fn record_room(ticks: u64, interval: u32, loose: u32) -> (Vec<u8>, u64) {
    let r = rules(loose);
    let mut room = ServerRoom::new(r.clone(), RoomConfig::default(), 0);
    let mut rec = Recorder::new(Vec::new(), room.game(), meta(interval)).expect("recorder");
    let mut conns: Vec<(ConnId, u8, SandboxBot)> = Vec::new();
    let strategies = [Strategy::Random, Strategy::Chaser, Strategy::Circle];
    let join =
        |room: &mut ServerRoom<Sandbox>, conns: &mut Vec<(ConnId, u8, SandboxBot)>, conn, now| {
            room.handle_connect(now, conn);
            room.handle_reliable(now, conn, &hello(r.fingerprint()));
            let mut slot = None;
            while let Some(ev) = room.poll_event() {
                if let RoomEvent::Joined { slot: s, .. } = ev {
                    slot = s;
                }
            }
            let slot = slot.expect("a seat");
            let bot = SandboxBot::new(strategies[conn as usize % 3], conn);
            conns.push((conn, slot, bot));
        };
    for c in 1..=4 {
        join(&mut room, &mut conns, c, 0);
    }
    for _ in 0..ticks {
        let t = room.tick_number() + 1;
        let now = room.deadline(t);
        if t == 100 {
            room.handle_reliable(now, 4, &encode_client_reliable(&ClientReliable::Leave));
            conns.retain(|c| c.0 != 4);
        }
        if t == 120 {
            join(&mut room, &mut conns, 5, now);
        }
        for (conn, slot, bot) in &mut conns {
            let input = bot.next_input(room.game(), *slot);
            let batch = ClientDatagram::Inputs(InputBatch {
                slot: *slot,
                first_tick: t as u16,
                runs: vec![InputRun { count: 1, input }],
                ack: FrameAck::default(),
            });
            room.handle_datagram(now, *conn, &encode_client_datagram(&batch));
        }
        room.tick(now);
        while room.poll_output().is_some() {}
        while room.poll_event().is_some() {}
        assert_eq!(room.last_hash(), room.game().state_hash());
        rec.record_tick(room.game(), room.last_inputs(), room.last_hash())
            .expect("record");
        if t % 60 == 0 {
            rec.flush().expect("flush");
        }
    }
    let hash = room.game().state_hash();
    (rec.finish().expect("finish"), hash)
}

/// A game loop with bots; `nudge` moves one loose body right after the
/// given tick (before its hash and record), like a server whose state was
/// disturbed outside the inputs. Returns the file and the nudged body.
fn record_game(
    ticks: u64,
    interval: u32,
    loose: u32,
    nudge: Option<u64>,
) -> (Vec<u8>, Option<u32>) {
    let mut game = Game::new(rules(loose), 3);
    let mut rec = Recorder::new(Vec::new(), &game, meta(interval)).expect("recorder");
    let mut bots: Vec<SandboxBot> = (0..3)
        .map(|i| SandboxBot::new(Strategy::Random, 40 + i))
        .collect();
    let mut nudged = None;
    for t in 1..=ticks {
        let mut set = InputSet::with_inputs(
            bots.iter_mut()
                .enumerate()
                .map(|(i, b)| b.next_input(&game, i as u8))
                .collect(),
        );
        if t <= 3 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        game.step(&set);
        if nudge == Some(t) {
            let body = game
                .world()
                .bodies()
                .filter(|&b| game.world().user_data(b) == Ok(0))
                .nth(6)
                .expect("a loose body");
            let xf = game.world().transform(body).expect("live");
            game.world_mut()
                .set_transform(
                    body,
                    xf.p + Vec2::new(Scalar::from_bits(1 << 20), fx(0)),
                    xf.q,
                )
                .expect("in bounds");
            nudged = Some(body.index);
        }
        rec.record_tick(&game, &set, game.state_hash())
            .expect("record");
    }
    (rec.finish().expect("finish"), nudged)
}

/// Verifies on one thread and on three (keyframe intervals in parallel);
/// both must report the same.
fn verify_bytes(bytes: &[u8], opts: VerifyOptions) -> Result<VerifyReport, ResimError> {
    let one = verify(
        ReplayReader::open(bytes)?,
        sandbox_rules,
        &opts,
        &mut |_| {},
    );
    let three = verify_parallel(
        ReplayReader::open(bytes)?,
        sandbox_rules,
        &opts,
        3,
        &mut |_| {},
    );
    match (&one, &three) {
        (Ok(a), Ok(b)) => {
            let key = |r: &VerifyReport| {
                (
                    r.start_tick,
                    r.ticks_verified,
                    r.last_verified,
                    r.final_hash,
                    r.keyframes_checked,
                    r.divergence,
                    r.synctest.as_ref().map(|s| s.mismatches.len()),
                )
            };
            assert_eq!(key(a), key(b), "one thread and three disagree");
            // How far the file is read after a divergence differs.
            if a.divergence.is_none() {
                let rest = |r: &VerifyReport| {
                    (
                        r.ticks_read,
                        r.bytes_read,
                        r.damage.as_ref().map(ToString::to_string),
                        r.ended_cleanly,
                    )
                };
                assert_eq!(rest(a), rest(b), "one thread and three disagree");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("one thread and three disagree: {one:?} / {three:?}"),
    }
    one
}

/// Decodes every record of a file (with its byte range).
fn records(bytes: &[u8]) -> (Header, Vec<(usize, usize, Record)>) {
    let mut reader = ReplayReader::open(bytes).expect("valid");
    let header = reader.header().clone();
    let mut out = Vec::new();
    while let Some(rec) = reader.next() {
        out.push((
            reader.record_offset() as usize,
            reader.offset() as usize,
            rec,
        ));
    }
    assert!(reader.stop_reason().is_none());
    (header, out)
}

/// Re-encodes a file from its records.
fn rebuild(header: &Header, recs: &[Record]) -> Vec<u8> {
    let mut out = encode_header(header);
    for r in recs {
        encode_record(r, &mut out);
    }
    out
}

struct Opened {
    index: ReplayIndex,
    src: Cursor<Vec<u8>>,
    initial: GameSnapshot<Sandbox>,
    rules: Sandbox,
}

fn open(bytes: Vec<u8>) -> Opened {
    let index = ReplayIndex::build(ReplayReader::open(&bytes[..]).expect("valid"));
    let initial = decode_initial::<Sandbox>(&index.header).expect("initial");
    let rules = sandbox_rules(&index.header, &initial).expect("rules");
    Opened {
        index,
        src: Cursor::new(bytes),
        initial,
        rules,
    }
}

impl Opened {
    fn side(&mut self) -> Side<'_, Sandbox, Cursor<Vec<u8>>> {
        Side {
            index: &self.index,
            src: &mut self.src,
            initial: &self.initial,
            rules: &self.rules,
        }
    }
}

#[test]
fn a_recorded_room_verifies() {
    let (bytes, final_hash) = record_room(300, 50, 30);
    let rep = verify_bytes(&bytes, VerifyOptions::default()).expect("verifies");
    assert_eq!(rep.divergence, None);
    assert!(rep.damage.is_none(), "{:?}", rep.damage);
    assert!(rep.ended_cleanly);
    assert_eq!(rep.ticks_read, 300);
    assert_eq!(rep.ticks_verified, 300);
    assert_eq!(rep.keyframes_checked, 6);
    assert_eq!(rep.final_hash, final_hash);
    assert_eq!(rep.bytes_read, bytes.len() as u64);
    // The joins and the leave are in the file.
    let (_, recs) = records(&bytes);
    let events: Vec<SlotEvent> = recs
        .iter()
        .filter_map(|r| match &r.2 {
            Record::Tick { inputs, .. } => Some(inputs.events.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        events,
        vec![
            SlotEvent::Join(0),
            SlotEvent::Join(1),
            SlotEvent::Join(2),
            SlotEvent::Join(3),
            SlotEvent::Leave(3),
            SlotEvent::Join(3),
        ]
    );
}

#[test]
fn verification_can_start_at_a_keyframe_and_run_a_sync_test() {
    let (bytes, final_hash) = record_room(300, 50, 30);
    let from = |start| VerifyOptions {
        start: Some(start),
        synctest: None,
    };
    let rep = verify_bytes(&bytes, from(StartAt::AtOrBefore(170))).expect("verifies");
    assert_eq!((rep.start_tick, rep.ticks_verified), (150, 150));
    assert_eq!(rep.final_hash, final_hash);
    let rep = verify_bytes(&bytes, from(StartAt::AtOrBefore(150))).expect("verifies");
    assert_eq!((rep.start_tick, rep.ticks_verified), (150, 150));
    let rep = verify_bytes(&bytes, from(StartAt::AtOrBefore(20))).expect("verifies");
    assert_eq!((rep.start_tick, rep.ticks_verified), (0, 300));
    let rep = verify_bytes(&bytes, from(StartAt::Latest)).expect("verifies");
    assert_eq!((rep.start_tick, rep.ticks_verified), (300, 0));
    assert_eq!(rep.final_hash, final_hash);

    let rep = verify_bytes(
        &bytes,
        VerifyOptions {
            start: None,
            synctest: Some(5),
        },
    )
    .expect("verifies");
    assert_eq!(rep.divergence, None);
    assert_eq!(rep.ticks_verified, 300);
    let st = rep.synctest.expect("sync test ran");
    assert_eq!(st.ticks, 300);
    assert!(st.rollbacks >= 295 && st.mismatches.is_empty(), "{st:?}");
}

/// A small file (about 15 KB): tiny arena, 24 ticks, keyframes every 10.
fn small() -> Vec<u8> {
    record_game(24, 10, 1, None).0
}

#[test]
fn every_truncation_gives_an_error_or_a_verified_prefix() {
    let bytes = small();
    let (header, recs) = records(&bytes);
    let header_end = recs[0].0;
    // Ends of records, with the ticks intact up to there.
    let mut boundaries = vec![(header_end, 0u64)];
    let mut ticks = 0;
    for (_, end, r) in &recs {
        if matches!(r, Record::Tick { .. }) {
            ticks += 1;
        }
        boundaries.push((*end, ticks));
    }
    assert_eq!(header.start_tick, 0);
    let mut prev = 0;
    for len in 0..=bytes.len() {
        let cut = &bytes[..len];
        match verify_bytes(cut, VerifyOptions::default()) {
            Err(e) => {
                assert!(len < header_end, "cut at {len}: {e}");
                if len < 8 {
                    assert!(
                        matches!(e, ResimError::Format(ReplayError::BadMagic)),
                        "{e}"
                    );
                } else {
                    assert!(
                        matches!(
                            e,
                            ResimError::Format(ReplayError::Truncated { offset: 8, .. })
                        ),
                        "cut at {len}: {e}"
                    );
                }
            }
            Ok(rep) => {
                assert!(len >= header_end);
                // The readable prefix ends at the last whole record.
                let &(end, want) = boundaries
                    .iter()
                    .rev()
                    .find(|b| b.0 <= len)
                    .expect("after the header");
                assert_eq!(rep.bytes_read, end as u64, "cut at {len}");
                assert_eq!(rep.ticks_read, want, "cut at {len}");
                assert_eq!(rep.ticks_verified, want, "cut at {len}");
                assert_eq!(rep.divergence, None);
                assert!(
                    rep.ticks_read >= prev,
                    "fewer ticks with more bytes at {len}"
                );
                prev = rep.ticks_read;
                // A cut is always a cut tail (a warning), never corruption.
                match &rep.damage {
                    None => assert_eq!(end, len),
                    Some(ReplayError::Truncated { offset, .. }) => {
                        assert_eq!(*offset, end as u64);
                        assert!(end < len);
                    }
                    Some(e) => panic!("cut at {len}: {e}"),
                }
                assert_eq!(rep.ended_cleanly, len == bytes.len());
            }
        }
    }
    assert_eq!(prev, 24);
}

/// A flipped byte in any record but the last is damage in the middle: an
/// error naming the damaged record's offset and the intact record after
/// it. In the last record it is a damaged tail (a warning).
#[test]
fn a_flipped_byte_is_caught_by_the_crc() {
    let bytes = small();
    let (_, recs) = records(&bytes);
    let header_end = recs[0].0;
    let mut ticks_before = Vec::new();
    let mut n = 0;
    for (_, _, r) in &recs {
        ticks_before.push(n);
        if matches!(r, Record::Tick { .. }) {
            n += 1;
        }
    }
    for pos in 0..bytes.len() {
        let mut b = bytes.clone();
        b[pos] ^= 0x10;
        let res = verify_bytes(&b, VerifyOptions::default());
        if pos < header_end {
            let e = res.expect_err("header damage is an error");
            assert!(
                matches!(
                    e,
                    ResimError::Format(
                        ReplayError::BadMagic
                            | ReplayError::Crc { offset: 8, .. }
                            | ReplayError::Truncated { offset: 8, .. }
                            | ReplayError::TooLarge { offset: 8, .. }
                    )
                ),
                "flip at {pos}: {e}"
            );
            continue;
        }
        let rep = res.expect("a verified prefix");
        let i = recs
            .iter()
            .position(|r| r.0 <= pos && pos < r.1)
            .expect("in a record");
        let (start, _, _) = recs[i];
        assert_eq!(rep.divergence, None, "flip at {pos}");
        assert_eq!(rep.ticks_read, ticks_before[i], "flip at {pos}");
        assert_eq!(rep.ticks_verified, ticks_before[i], "flip at {pos}");
        let damage = rep.damage.expect("damage reported");
        assert_eq!(
            damage.offset(),
            Some(start as u64),
            "flip at {pos}: {damage}"
        );
        if pos >= start + FRAME_HEADER {
            assert!(
                matches!(damage.cause(), ReplayError::Crc { .. }),
                "flip at {pos}: {damage}"
            );
        }
        match recs.get(i + 1) {
            Some(&(next, _, _)) => {
                assert!(damage.is_corrupt(), "flip at {pos}: {damage}");
                assert!(
                    matches!(damage, ReplayError::Damaged { next: Some(n), .. } if n == next as u64),
                    "flip at {pos}: {damage}"
                );
                let msg = damage.to_string();
                assert!(msg.contains(&format!("record at byte {start}")), "{msg}");
                assert!(msg.contains("damaged in the middle"), "{msg}");
            }
            None => assert!(!damage.is_corrupt(), "flip at {pos}: {damage}"),
        }
    }
}

/// Bytes appended to a recording: after its end record they are
/// corruption; after a crash's cut (no end record) garbage or zeros are a
/// damaged tail, unless an intact record follows them.
#[test]
fn appended_bytes_are_told_apart() {
    let bytes = small();
    let (header, recs) = records(&bytes);
    let end_at = recs.last().expect("records").0;
    for junk in [&[0u8; 1][..], &[0; 300], &[0xA5; 77], b"garbage appended"] {
        // After the end record.
        let mut b = bytes.clone();
        b.extend_from_slice(junk);
        let rep = verify_bytes(&b, VerifyOptions::default()).expect("prefix");
        assert_eq!(rep.ticks_verified, 24);
        assert!(
            matches!(rep.damage, Some(ReplayError::AfterEnd { offset }) if offset == bytes.len() as u64),
            "{:?}",
            rep.damage
        );
        assert!(rep.damage.as_ref().is_some_and(ReplayError::is_corrupt));
        // A crash's file (cut after a record) with junk after it.
        let mut b = bytes[..end_at].to_vec();
        b.extend_from_slice(junk);
        let rep = verify_bytes(&b, VerifyOptions::default()).expect("prefix");
        assert_eq!(rep.ticks_verified, 24);
        let damage = rep.damage.expect("damage");
        assert!(!damage.is_corrupt(), "{damage}");
        assert_eq!(damage.offset(), Some(end_at as u64));
        // The same junk with an intact record after it: corruption.
        encode_record(&Record::End { tick: 24 }, &mut b);
        let rep = verify_bytes(&b, VerifyOptions::default()).expect("prefix");
        let damage = rep.damage.expect("damage");
        assert!(
            matches!(damage, ReplayError::Damaged { next: Some(n), .. } if n == (end_at + junk.len()) as u64),
            "{damage}"
        );
    }
    // Index and reader agree.
    let mut b = bytes.clone();
    b.push(0);
    let index = ReplayIndex::build(ReplayReader::open(&b[..]).expect("valid"));
    assert!(index.damage.as_ref().is_some_and(ReplayError::is_corrupt));
    let _ = header;
}

#[test]
fn altered_inputs_are_caught_at_their_tick_with_the_avatar_named() {
    let (bytes, _) = record_game(120, 20, 20, None);
    let (header, recs) = records(&bytes);
    let altered_tick = 57;
    let mut recs: Vec<Record> = recs.into_iter().map(|r| r.2).collect();
    for r in &mut recs {
        if let Record::Tick { tick, inputs, .. } = r {
            if *tick == altered_tick {
                inputs.inputs[1] = PlayerInput {
                    move_x: if inputs.inputs[1].move_x > 0 {
                        -127
                    } else {
                        127
                    },
                    ..inputs.inputs[1]
                };
            }
        }
    }
    let bad = rebuild(&header, &recs);
    let rep = verify_bytes(&bad, VerifyOptions::default()).expect("readable");
    let d = rep.divergence.expect("diverges");
    assert!(matches!(d, Divergence::Hash { .. }), "{d}");
    assert_eq!(d.tick(), altered_tick);
    assert_eq!(rep.ticks_verified, altered_tick - 1);

    let mut a = open(bad);
    let rep = diff_against_resim(a.side()).expect("diff");
    assert_eq!(rep.divergence, Some(altered_tick));
    // The recorded state at 57 cannot be rebuilt (the file's inputs are
    // not the ones that made its hashes): compared at the next keyframe.
    assert_eq!(rep.comparison, Some(Comparison::Keyframe));
    assert_eq!(rep.compared_at, Some(60));
    let diff = rep.diff.expect("a field diff");
    let avatar = diff
        .bodies
        .iter()
        .find(|b| b.a.is_some_and(|f| f.user_data == AVATAR_TAG | 1))
        .expect("slot 1's avatar is named");
    assert!(avatar.fields.contains(&Field::LinearVelocity), "{avatar:?}");
}

#[test]
fn a_nudged_world_is_caught_at_its_tick_with_the_body_named() {
    // Nudged at a keyframe tick: the state there is known exactly.
    let (clean, _) = record_game(100, 20, 20, None);
    let (bytes, body) = record_game(100, 20, 20, Some(40));
    let body = body.expect("nudged");
    let rep = verify_bytes(&bytes, VerifyOptions::default()).expect("readable");
    assert_eq!(rep.divergence.map(|d| d.tick()), Some(40));
    let mut a = open(bytes.clone());
    let rep = diff_against_resim(a.side()).expect("diff");
    assert_eq!(rep.divergence, Some(40));
    assert_eq!(rep.comparison, Some(Comparison::Reconstructed));
    assert_eq!(rep.compared_at, Some(40));
    let diff = rep.diff.expect("a field diff");
    assert_eq!(diff.bodies.len(), 1, "{diff:?}");
    assert_eq!(diff.bodies[0].index, body);
    assert!(diff.bodies[0].fields.contains(&Field::Position));
    let table = diff_table(&diff, ("recorded", "re-simulated"));
    assert!(table.contains(&format!("  {body} ")), "{table}");
    assert!(table.contains("position x"), "{table}");

    // Two files: the clean run against the nudged one.
    let (mut c, mut n) = (open(clean), open(bytes));
    let rep = diff_replays(c.side(), n.side()).expect("diff");
    assert_eq!(rep.divergence, Some(40));
    assert_eq!(rep.inputs_differ_at, None);
    assert_eq!(rep.comparison, Some(Comparison::Reconstructed));
    let diff = rep.diff.expect("a field diff");
    assert_eq!(diff.bodies.len(), 1, "{diff:?}");
    assert_eq!(diff.bodies[0].index, body);
    let json = diff_json(&diff);
    assert_eq!(json["bodies"][0]["index"], body);
    assert_eq!(json["bodies"][0]["fields"][0], "position");

    // Nudged between keyframes: caught at its tick, compared at the next
    // keyframe, where the body still differs.
    let (bytes, body) = record_game(100, 20, 20, Some(33));
    let mut a = open(bytes);
    let rep = diff_against_resim(a.side()).expect("diff");
    assert_eq!(rep.divergence, Some(33));
    assert_eq!(rep.comparison, Some(Comparison::Keyframe));
    assert_eq!(rep.compared_at, Some(40));
    let diff = rep.diff.expect("a field diff");
    assert!(
        diff.bodies.iter().any(|b| Some(b.index) == body),
        "{diff:?}"
    );
}

#[test]
fn identical_replays_do_not_diverge() {
    let (bytes, _) = record_game(60, 20, 10, None);
    let (mut a, mut b) = (
        open(bytes.clone()),
        open(bytes[..bytes.len() - 200].to_vec()),
    );
    let rep = diff_replays(a.side(), b.side()).expect("diff");
    assert_eq!(rep.divergence, None);
    assert!(rep.ticks_compared > 50);
    let rep = diff_against_resim(a.side()).expect("diff");
    assert_eq!(rep.divergence, None);
    assert_eq!(rep.ticks_compared, 60);
}

fn header_of(bytes: &[u8]) -> Header {
    ReplayReader::open(bytes).expect("valid").header().clone()
}

#[test]
fn bad_headers_are_errors() {
    let bytes = small();
    let (header, recs) = records(&bytes);
    let rest: Vec<Record> = recs.into_iter().map(|r| r.2).collect();
    let open_err = |b: &[u8]| ReplayReader::open(b).expect_err("refused");

    assert!(matches!(
        open_err(b"BRREPLAX........"),
        ReplayError::BadMagic
    ));
    assert!(matches!(open_err(b""), ReplayError::BadMagic));
    assert!(matches!(
        open_err(b"BRREPLAY"),
        ReplayError::Truncated { offset: 8, .. }
    ));

    let mut v2 = header.clone();
    v2.format_version = FORMAT_VERSION + 1;
    let e = open_err(&rebuild(&v2, &rest));
    assert!(
        matches!(
            e,
            ReplayError::UnsupportedVersion {
                found,
                supported: FORMAT_VERSION
            } if found == FORMAT_VERSION + 1
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains(&format!("version {}", FORMAT_VERSION + 1)),
        "{e}"
    );
    // The format before the oldest this build reads.
    let mut old = header.clone();
    old.format_version = OLDEST_FORMAT_VERSION - 1;
    let e = open_err(&rebuild(&old, &rest));
    assert!(
        matches!(e, ReplayError::UnsupportedVersion { found, .. } if found == OLDEST_FORMAT_VERSION - 1),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains(&if OLDEST_FORMAT_VERSION == FORMAT_VERSION {
                format!("this build reads version {FORMAT_VERSION})")
            } else {
                format!("this build reads versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION})")
            }),
        "{e}"
    );

    let mut huge = bytes.clone();
    huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        open_err(&huge),
        ReplayError::TooLarge { offset: 8, .. }
    ));

    // A tick record first.
    let mut first_tick = MAGIC.to_vec();
    encode_record(&rest[0], &mut first_tick);
    assert!(matches!(
        open_err(&first_tick),
        ReplayError::Invalid { offset: 8, .. }
    ));

    for (what, h) in [
        (
            "seats",
            Header {
                slots: 0,
                ..header.clone()
            },
        ),
        (
            "tick rate",
            Header {
                tick_rate: 0,
                ..header.clone()
            },
        ),
        (
            "keyframe interval",
            Header {
                keyframe_interval: 0,
                ..header.clone()
            },
        ),
        (
            "initial state",
            Header {
                initial: Vec::new(),
                ..header.clone()
            },
        ),
        (
            "text",
            Header {
                room: "r".repeat(5000),
                ..header.clone()
            },
        ),
    ] {
        let e = open_err(&rebuild(&h, &rest));
        assert!(
            matches!(e, ReplayError::Invalid { offset: 8, .. }),
            "{what}: {e}"
        );
    }

    // Well-framed but undecodable initial state; a start tick the state
    // does not have; rules this build does not know.
    let garbage = Header {
        initial: vec![1, 2, 3, 4, 5],
        ..header.clone()
    };
    let e = verify_bytes(&rebuild(&garbage, &rest), VerifyOptions::default()).expect_err("bad");
    assert!(matches!(e, ResimError::Initial(_)), "{e}");
    let shifted = Header {
        start_tick: 5,
        ..header.clone()
    };
    let e = verify_bytes(&rebuild(&shifted, &rest), VerifyOptions::default()).expect_err("bad");
    assert!(matches!(e, ResimError::InitialMismatch { .. }), "{e}");
    // Rules of another fingerprint than the recorded one are refused.
    let other = Header {
        rules_fingerprint: header.rules_fingerprint ^ 1,
        ..header.clone()
    };
    let fp = header.rules_fingerprint;
    let e = verify(
        ReplayReader::open(&rebuild(&other, &rest)[..]).expect("opens"),
        |_, i| Ok(Sandbox::replaying(i, fp)),
        &VerifyOptions::default(),
        &mut |_| {},
    )
    .expect_err("bad");
    assert!(matches!(e, ResimError::Fingerprint { .. }), "{e}");
    assert_eq!(header_of(&bytes), header);
}

#[test]
fn records_out_of_order_end_the_readable_prefix() {
    let bytes = small();
    let (header, recs) = records(&bytes);
    let mut rest: Vec<Record> = recs.into_iter().map(|r| r.2).collect();
    // Swap ticks 3 and 4 (records 2 and 3: no keyframe before tick 10).
    rest.swap(2, 3);
    let rep = verify_bytes(&rebuild(&header, &rest), VerifyOptions::default()).expect("prefix");
    assert_eq!(rep.ticks_verified, 2);
    // Well-formed records after it: corruption, not a cut tail.
    let damage = rep.damage.expect("damage");
    assert!(damage.is_corrupt(), "{damage}");
    assert!(
        matches!(
            damage.cause(),
            ReplayError::Invalid {
                what: "tick out of sequence",
                ..
            }
        ),
        "{damage}"
    );
    // A record after the end record.
    let (_, recs) = records(&bytes);
    let mut rest: Vec<Record> = recs.into_iter().map(|r| r.2).collect();
    rest.push(Record::End { tick: 24 });
    let rep = verify_bytes(&rebuild(&header, &rest), VerifyOptions::default()).expect("prefix");
    assert_eq!(rep.ticks_verified, 24);
    assert!(matches!(rep.damage, Some(ReplayError::AfterEnd { .. })));
    // A keyframe whose state is not the recorded one.
    let (_, recs) = records(&bytes);
    let mut rest: Vec<Record> = recs.into_iter().map(|r| r.2).collect();
    let k10 = rest
        .iter()
        .position(|r| matches!(r, Record::Keyframe { tick: 10, .. }))
        .expect("keyframe 10");
    let k20 = rest
        .iter()
        .position(|r| matches!(r, Record::Keyframe { tick: 20, .. }))
        .expect("keyframe 20");
    let Record::Keyframe { snapshot, .. } = rest[k10].clone() else {
        unreachable!()
    };
    rest[k20] = Record::Keyframe { tick: 20, snapshot };
    let rep = verify_bytes(&rebuild(&header, &rest), VerifyOptions::default()).expect("prefix");
    assert!(
        matches!(rep.divergence, Some(Divergence::Keyframe { tick: 20, .. })),
        "{:?}",
        rep.divergence
    );
}

/// A writer that fails after `ok` bytes.
struct Failing {
    ok: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.ok);
        self.ok -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn recorders_and_state_jobs_can_move_to_other_threads() {
    fn send<T: Send>() {}
    send::<Recorder<std::io::BufWriter<std::fs::File>, Sandbox>>();
    send::<StateJob<Sandbox>>();
    send::<GameSnapshot<Sandbox>>();
}

#[test]
fn the_recorder_refuses_gaps_and_stops_after_a_write_error() {
    let mut game = Game::new(rules(4), 2);
    let mut rec = Recorder::new(Vec::new(), &game, meta(10)).expect("recorder");
    game.step(&InputSet::join(2, 0));
    game.step(&InputSet::default());
    let e = rec
        .record_tick(&game, &InputSet::default(), game.state_hash())
        .expect_err("tick 1 is missing");
    assert!(
        matches!(e, RecordError::OutOfOrder { last: 0, got: 2 }),
        "{e}"
    );

    let game = Game::new(rules(4), 2);
    let header_len = encode_header(&Header {
        format_version: FORMAT_VERSION,
        bitroom_version: env!("CARGO_PKG_VERSION").into(),
        rules: "sandbox".into(),
        tick_rate: 60,
        rules_fingerprint: game.rules().fingerprint(),
        room: "test room".into(),
        scene: "arena".into(),
        slots: 2,
        keyframe_interval: 10,
        start_tick: 0,
        initial: game.snapshot().to_packed(),
    })
    .len();
    let mut game = game;
    let mut rec = Recorder::new(
        Failing {
            ok: header_len + 10,
        },
        &game,
        meta(10),
    )
    .expect("header fits");
    game.step(&InputSet::join(2, 0));
    rec.record_tick(&game, &InputSet::join(2, 0), game.state_hash())
        .expect("buffered");
    assert!(matches!(rec.flush(), Err(RecordError::Io(_))));
    game.step(&InputSet::default());
    assert!(matches!(
        rec.record_tick(&game, &InputSet::default(), game.state_hash()),
        Err(RecordError::Stopped)
    ));
    assert!(matches!(rec.flush(), Err(RecordError::Stopped)));

    let bad = RecordingMeta {
        keyframe_interval: 0,
        ..meta(1)
    };
    assert!(matches!(
        Recorder::new(Vec::new(), &game, bad),
        Err(RecordError::Invalid(_))
    ));
}

/// A recorder fed a tick's parts from another thread (as the server's
/// recording thread is) writes the very bytes `record_tick` writes, and
/// refuses a keyframe that is missing, not due, or of another tick.
#[test]
fn a_recorder_fed_parts_on_another_thread_writes_the_same_bytes() {
    let mut game = Game::new(rules(6), 2);
    let mut direct = Recorder::new(Vec::new(), &game, meta(5)).expect("recorder");
    let parts = Recorder::new(Vec::new(), &game, meta(5)).expect("recorder");
    let (to, from) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut rec = parts;
        for (tick, inputs, hash, keyframe) in from {
            rec.record_parts(tick, &inputs, hash, keyframe)
                .expect("recorded");
        }
        rec.finish().expect("finished")
    });
    for t in 1..=12u64 {
        let set = if t == 1 {
            InputSet::join(2, 0)
        } else {
            InputSet::default()
        };
        game.step(&set);
        let hash = game.state_hash();
        direct.record_tick(&game, &set, hash).expect("recorded");
        let keyframe = direct.keyframe_due(t).then(|| game.snapshot());
        to.send((t, set, hash, keyframe)).expect("thread alive");
    }
    drop(to);
    let from_parts = writer.join().expect("writer");
    let direct = direct.finish().expect("finished");
    assert_eq!(from_parts, direct);
    let rep = verify_bytes(
        &direct,
        VerifyOptions {
            start: None,
            synctest: None,
        },
    )
    .expect("verifies");
    assert_eq!(rep.divergence, None);
    assert_eq!(rep.keyframes_checked, 2, "{rep:?}");

    // Keyframes are checked against the interval and the tick.
    let mut game = Game::new(rules(4), 2);
    let mut rec = Recorder::new(Vec::new(), &game, meta(2)).expect("recorder");
    game.step(&InputSet::join(2, 0));
    let snap = game.snapshot();
    let e = rec
        .record_parts(1, &InputSet::join(2, 0), game.state_hash(), Some(snap))
        .expect_err("tick 1 takes no keyframe");
    assert!(matches!(e, RecordError::Keyframe { tick: 1 }), "{e}");
    rec.record_parts(1, &InputSet::join(2, 0), game.state_hash(), None)
        .expect("recorded");
    let old = game.snapshot();
    game.step(&InputSet::default());
    let e = rec
        .record_parts(2, &InputSet::default(), game.state_hash(), None)
        .expect_err("tick 2 needs a keyframe");
    assert!(matches!(e, RecordError::Keyframe { tick: 2 }), "{e}");
    let e = rec
        .record_parts(2, &InputSet::default(), game.state_hash(), Some(old))
        .expect_err("the keyframe is of tick 1");
    assert!(matches!(e, RecordError::Keyframe { tick: 2 }), "{e}");
    rec.record_parts(
        2,
        &InputSet::default(),
        game.state_hash(),
        Some(game.snapshot()),
    )
    .expect("recorded");
}

#[test]
fn the_recorder_rebuilds_recent_states_for_desync_reports() {
    let mut game = Game::new(rules(10), 2);
    let mut rec = Recorder::new(Vec::new(), &game, meta(10)).expect("recorder");
    let mut hashes = vec![game.state_hash()];
    let mut bot = SandboxBot::new(Strategy::Random, 3);
    for t in 1..=45u64 {
        let mut set = InputSet::with_inputs(vec![bot.next_input(&game, 0)]);
        if t == 1 {
            set.events.push(SlotEvent::Join(0));
        }
        game.step(&set);
        hashes.push(game.state_hash());
        rec.record_tick(&game, &set, game.state_hash())
            .expect("record");
    }
    // Keyframes 30 and 40 are kept: ticks 30..=45 can be rebuilt.
    for t in 0..=50u64 {
        let job = rec.state_job(t);
        if (30..=45).contains(&t) {
            let job = job.expect("kept");
            assert_eq!(job.tick(), t);
            assert_eq!(job.run().state_hash(), hashes[t as usize], "tick {t}");
        } else {
            assert!(job.is_none(), "tick {t}");
        }
    }
    assert_eq!(rec.stats().keyframes, 4);
    assert_eq!(rec.last_tick(), 45);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random bytes after the magic: an error or a (short) prefix.
    #[test]
    fn random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&tail);
        let _ = verify_bytes(&bytes, VerifyOptions::default());
        if let Ok(r) = ReplayReader::open(&bytes[..]) {
            let _ = ReplayIndex::build(r);
        }
    }

    /// A valid file with bytes overwritten (CRCs fixed up or not): an error,
    /// a prefix, or a divergence — never a panic.
    #[test]
    fn mutated_files_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        fix_crc in any::<bool>(),
    ) {
        let bytes = small_cached();
        let mut b = bytes.to_vec();
        for (pos, v) in &edits {
            let i = pos % b.len();
            b[i] = *v;
        }
        if fix_crc {
            fix_crcs(&mut b);
        }
        let _ = verify_bytes(&b, VerifyOptions { start: None, synctest: Some(2) });
        if let Ok(r) = ReplayReader::open(&b[..]) {
            let _ = ReplayIndex::build(r);
        }
    }
}

fn small_cached() -> &'static [u8] {
    static SMALL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SMALL.get_or_init(small)
}

/// Recomputes every frame's CRC, so mutations reach the decoder.
fn fix_crcs(b: &mut [u8]) {
    let mut at = MAGIC.len();
    while at + FRAME_HEADER <= b.len() {
        let len = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize;
        let Some(end) = (at + FRAME_HEADER)
            .checked_add(len)
            .filter(|&e| e <= b.len())
        else {
            return;
        };
        let crc = crc32(&b[at + FRAME_HEADER..end]);
        b[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

/// CRC-32 (IEEE), bit by bit: an independent check of the writer's.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &byte in data {
        c ^= u32::from(byte);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[test]
fn frames_carry_the_standard_crc32() {
    let bytes = small();
    let (_, recs) = records(&bytes);
    for (start, end, _) in recs.iter().take(5) {
        let stored = u32::from_le_bytes(bytes[start + 4..start + 8].try_into().unwrap());
        assert_eq!(stored, crc32(&bytes[start + FRAME_HEADER..*end]));
    }
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}
