//! `ServerRoom` admission: token grants and seats, reconnect secrets bound
//! to the seat's user, desync reports bounded in size and rate, datagrams
//! before the hello (issue 22).

use bitroom_protocol::token::TokenError;
use bitroom_protocol::*;
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxConfig};
use bitroom_sim::game::Rules;

const SEC: u64 = 1_000_000;

fn rules() -> Sandbox {
    Sandbox::new(SandboxConfig { loose_bodies: 10 })
}

fn room_with(config: RoomConfig) -> ServerRoom<Sandbox> {
    ServerRoom::new(rules(), config, 0)
}

fn hello(reconnect: Option<ReconnectSecret>) -> Vec<u8> {
    encode_client_reliable(&ClientReliable::Hello(Hello {
        version: PROTOCOL_VERSION,
        rules: rules().fingerprint(),
        room: "r".into(),
        name: "n".into(),
        spectator: false,
        reconnect,
        token: None,
    }))
}

fn grant(user: &str, seat: Option<u8>) -> Grant {
    Grant {
        user: user.as_bytes().to_vec(),
        seat,
    }
}

/// What the room told `conn` (drains every output).
#[derive(Debug, Default)]
struct Told {
    welcome: Option<Welcome>,
    kicks: Vec<KickReason>,
    closed: bool,
    snapshots: usize,
}

fn told(room: &mut ServerRoom<Sandbox>, conn: ConnId) -> Told {
    let mut t = Told::default();
    while let Some(o) = room.poll_output() {
        match o {
            Output::Reliable { conn: c, bytes } if c == conn => {
                match decode_server_reliable(&bytes) {
                    Ok(ServerReliable::Welcome(w)) => t.welcome = Some(w),
                    Ok(ServerReliable::Kick(r)) => t.kicks.push(r),
                    _ => {}
                }
            }
            Output::Snapshot { conn: c, .. } if c == conn => t.snapshots += 1,
            Output::Close { conn: c, .. } if c == conn => t.closed = true,
            _ => {}
        }
    }
    t
}

/// Connects `conn` and says hello with `grant`: what it was told.
fn join(
    room: &mut ServerRoom<Sandbox>,
    conn: ConnId,
    now: u64,
    reconnect: Option<ReconnectSecret>,
    grant: Option<Grant>,
) -> Told {
    room.handle_connect(now, conn);
    match grant {
        Some(g) => room.handle_hello(now, conn, &hello(reconnect), g),
        None => room.handle_reliable(now, conn, &hello(reconnect)),
    }
    told(room, conn)
}

fn run_ticks(room: &mut ServerRoom<Sandbox>, n: u64) {
    for _ in 0..n {
        let t = room.deadline(room.tick_number() + 1);
        room.tick(t);
    }
}

#[test]
fn reconnect_secrets_are_distinct_and_depend_on_the_seed() {
    let secrets = |seed: [u8; 32]| {
        let mut r = room_with(RoomConfig {
            secret_seed: seed,
            ..RoomConfig::default()
        });
        (1..=8)
            .map(|c| {
                join(&mut r, c, 0, None, None)
                    .welcome
                    .expect("welcomed")
                    .secret
            })
            .collect::<Vec<_>>()
    };
    let a = secrets([1; 32]);
    for (i, x) in a.iter().enumerate() {
        assert!(a[i + 1..].iter().all(|y| y != x), "secret {i} repeats");
    }
    let b = secrets([2; 32]);
    assert!(
        a.iter().all(|x| !b.contains(x)),
        "another seed, other secrets"
    );
    assert_eq!(a, secrets([1; 32]), "the same seed, the same secrets");
}

#[test]
fn a_room_that_requires_tokens_refuses_a_hello_without_one() {
    let mut r = room_with(RoomConfig {
        tokens_required: true,
        ..RoomConfig::default()
    });
    let t = join(&mut r, 1, 0, None, None);
    assert!(t.closed);
    assert_eq!(t.kicks, vec![KickReason::Token(TokenError::Missing)]);
    assert_eq!(t.kicks[0].to_string(), "no token: this server requires one");
    assert_eq!(t.kicks[0].label(), "token_missing");
    assert_eq!(r.connection_count(), 0);
    let t = join(&mut r, 2, 0, None, Some(grant("ann", None)));
    assert_eq!(t.welcome.map(|w| w.slot), Some(Some(0)));
}

#[test]
fn a_token_seat_is_taken_if_free_and_refused_if_not() {
    let mut r = room_with(RoomConfig::default());
    let t = join(&mut r, 1, 0, None, Some(grant("ann", Some(5))));
    assert_eq!(t.welcome.expect("welcomed").slot, Some(5));
    let t = join(&mut r, 2, 0, None, Some(grant("bob", Some(5))));
    assert!(t.closed);
    assert_eq!(t.kicks, vec![KickReason::SeatTaken(5)]);
    assert_eq!(t.kicks[0].to_string(), "seat 5 is taken");
    // Without a seat in the token: the first free one.
    let t = join(&mut r, 3, 0, None, Some(grant("cat", None)));
    assert_eq!(t.welcome.expect("welcomed").slot, Some(0));
    assert_eq!(r.stats().players, 2);
}

#[test]
fn a_reconnect_reclaims_only_a_seat_of_the_same_user() {
    let mut r = room_with(RoomConfig::default());
    let ann = join(&mut r, 1, 0, None, Some(grant("ann", None)))
        .welcome
        .expect("welcomed");
    let bob = join(&mut r, 2, 0, None, Some(grant("bob", None)))
        .welcome
        .expect("welcomed");
    r.handle_disconnect(SEC, 1);
    // Bob's token with Ann's secret: refused, Ann's seat stays reserved.
    let t = join(&mut r, 3, SEC, Some(ann.secret), Some(grant("bob", None)));
    assert!(t.closed);
    assert_eq!(t.kicks, vec![KickReason::SeatNotGranted(0)]);
    // Ann's token naming another seat: refused too.
    let t = join(
        &mut r,
        4,
        SEC,
        Some(ann.secret),
        Some(grant("ann", Some(3))),
    );
    assert_eq!(t.kicks, vec![KickReason::SeatNotGranted(0)]);
    // No token on a seat taken with one: refused.
    let t = join(&mut r, 5, SEC, Some(ann.secret), None);
    assert_eq!(t.kicks, vec![KickReason::SeatNotGranted(0)]);
    // Ann herself: her seat, her secret.
    let t = join(
        &mut r,
        6,
        SEC,
        Some(ann.secret),
        Some(grant("ann", Some(0))),
    );
    let w = t.welcome.expect("ann reconnects");
    assert_eq!((w.slot, w.secret), (Some(0), ann.secret));
    // While Bob is connected, Ann cannot take his seat with his secret.
    let t = join(&mut r, 7, SEC, Some(bob.secret), Some(grant("ann", None)));
    assert_eq!(t.kicks, vec![KickReason::SeatNotGranted(1)]);
    assert_eq!(told(&mut r, 2).kicks, vec![], "bob was not touched");
    assert_eq!(r.stats().players, 2);
}

#[test]
fn a_secret_that_matches_no_seat_takes_a_fresh_one() {
    let mut r = room_with(RoomConfig::default());
    join(&mut r, 1, 0, None, None).welcome.expect("welcomed");
    let t = join(&mut r, 2, 0, Some(ReconnectSecret([9; 16])), None);
    assert_eq!(t.welcome.expect("welcomed").slot, Some(1));
}

fn report(state_len: usize) -> Vec<u8> {
    encode_client_reliable(&ClientReliable::Desync(DesyncReport {
        tick: 1,
        client_hash: 1,
        server_hash: 2,
        state: vec![0; state_len],
    }))
}

fn desync_events(r: &mut ServerRoom<Sandbox>) -> usize {
    let mut n = 0;
    while let Some(e) = r.poll_event() {
        n += usize::from(matches!(e, RoomEvent::Desync { .. }));
    }
    n
}

#[test]
fn desync_reports_are_bounded_in_rate() {
    let mut r = room_with(RoomConfig::default());
    join(&mut r, 1, 0, None, None);
    join(&mut r, 2, 0, None, None);
    desync_events(&mut r);
    // Three reports a few seconds apart: each gets its resync, one event.
    for i in 0..MAX_REPORTS as u64 {
        r.handle_reliable((i + 1) * 2 * SEC, 2, &report(10));
        let t = told(&mut r, 2);
        assert_eq!((t.snapshots, t.closed), (1, false), "report {i}");
    }
    assert_eq!(desync_events(&mut r), 1, "one event per window");
    // The next within the period: kicked.
    r.handle_reliable(8 * SEC, 2, &report(10));
    let t = told(&mut r, 2);
    assert!(t.closed);
    assert_eq!(t.kicks, vec![KickReason::TooManyReports]);
    assert_eq!(t.kicks[0].to_string(), "too many desync reports");
    assert_eq!(r.stats().desyncs, MAX_REPORTS as u64);
    assert_eq!(r.stats().players, 1, "the other player stays");
    // Reports spread over time are fine: a window apart each.
    join(&mut r, 3, 8 * SEC, None, None);
    for i in 0..6 {
        let now = 8 * SEC + (i + 1) * (REPORT_PERIOD / 3 + SEC);
        r.handle_reliable(now, 3, &report(10));
        assert!(!told(&mut r, 3).closed, "report {i}");
        assert_eq!(desync_events(&mut r), 1, "report {i}");
    }
}

#[test]
fn desync_reports_are_bounded_by_the_rooms_state() {
    let mut r = room_with(RoomConfig::default());
    join(&mut r, 1, 0, None, None);
    // Before any snapshot is packed, the bound is the margin.
    assert_eq!(r.max_report_state(), 64 << 10);
    // Pack the join snapshot as the shell would, then tick.
    r.handle_connect(0, 2);
    r.handle_reliable(0, 2, &hello(None));
    let mut packed = 0;
    while let Some(o) = r.poll_output() {
        if let Output::Snapshot { job, .. } = o {
            packed = job.messages().iter().map(Vec::len).sum();
        }
    }
    assert!(packed > 0);
    run_ticks(&mut r, 1);
    assert_eq!(r.max_report_state(), 2 * packed + (64 << 10));
    assert!(r.max_client_message() > r.max_report_state());
    let limit = r.max_report_state();
    r.handle_reliable(SEC, 2, &report(limit));
    assert!(!told(&mut r, 2).closed, "a report at the bound is taken");
    r.handle_reliable(2 * SEC, 2, &report(limit + 1));
    let t = told(&mut r, 2);
    assert!(t.closed);
    assert_eq!(
        t.kicks,
        vec![KickReason::ReportTooLarge {
            len: limit as u32 + 1,
            limit: limit as u32
        }]
    );
}

#[test]
fn datagrams_before_the_hello_are_dropped_not_charged() {
    let mut r = room_with(RoomConfig::default());
    join(&mut r, 1, 0, None, None);
    r.handle_connect(0, 2);
    let ack = encode_client_datagram(&ClientDatagram::<PlayerInput>::Ack(FrameAck::default()));
    for _ in 0..2000 {
        r.handle_datagram(0, 2, &ack);
    }
    assert_eq!(r.stats().early_datagrams, 2000);
    assert_eq!(r.stats().rate_limited, 0);
    r.handle_reliable(SEC / 10, 2, &hello(None));
    told(&mut r, 2);
    // An honest client from here: one ack per tick for 3 s.
    for _ in 0..180 {
        run_ticks(&mut r, 1);
        let now = r.deadline(r.tick_number());
        r.handle_datagram(now, 2, &ack);
        assert!(
            !told(&mut r, 2).closed,
            "kicked at tick {}",
            r.tick_number()
        );
    }
    assert_eq!(r.stats().rate_limited, 0);
    assert_eq!(r.stats().players, 2);
}
