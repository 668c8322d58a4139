//! Connect tokens and seats over real QUIC on loopback (issue 22): a
//! server that requires tokens refuses every hello whose token fails a
//! check, with a reason the client prints and a metric label, and leaves
//! nothing behind (no room, no seat); reconnects reclaim only the seat of
//! the same user. In each test an honest player with a valid token (the
//! *witness*) must keep its seat and its sync, and the server's memory
//! stays bounded. One test at a time ([`serial`]).

use bitroom_client::{connect, ConnectError, ConnectOptions};
use bitroom_protocol::token::{Claims, TokenError, CLOCK_SKEW};
use bitroom_protocol::{KickReason, ServerReliable};
use bitroom_sim::game::Rules;
use bitroom_tests::loopback::TestServer;
use bitroom_tests::raw::{hello, hello_bytes, RawPeer};
use bitroom_tests::witness::{
    assert_unharmed, claims, now, rules, serial, spectator_claims, stranger_key, test_key, token,
    token_config, witness, Handle, MemoryWatch,
};
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);
const MIB: u64 = 1 << 20;

/// A server that requires tokens, with the witness in room "home" (user
/// "witness").
async fn start() -> (TestServer, Handle, MemoryWatch) {
    let server = TestServer::start(rules(), |c| c.tokens = Some(token_config()));
    let w = witness(
        &server,
        "home",
        Some(token(&test_key(), &claims("home", "witness"))),
    )
    .await;
    let mem = MemoryWatch::start();
    (server, w, mem)
}

/// Joins `room` with `token` through the client library.
async fn join(
    server: &TestServer,
    room: &str,
    token: Option<Vec<u8>>,
    spectator: bool,
) -> Result<Handle, ConnectError> {
    let mut options = ConnectOptions::new(rules(), server.pin);
    options.token = token;
    options.spectator = spectator;
    connect(server.addr, room, options).await
}

/// The hello is refused with `expected`, which the client prints as
/// `message`, counted under the reason's label; no room was opened for it
/// and the witness plays on.
async fn assert_refused(
    server: &TestServer,
    w: &Handle,
    refused: Result<Handle, ConnectError>,
    expected: KickReason,
    message: &str,
) {
    let rooms = server.monitor.snapshot().rooms;
    match refused {
        Err(ConnectError::Refused(r)) => {
            assert_eq!(r, expected);
            let printed = ConnectError::Refused(r).to_string();
            eprintln!("{printed}");
            assert_eq!(printed, format!("refused by the server: {message}"));
        }
        Err(e) => panic!("expected a refusal ({expected}), got {e}"),
        Ok(_) => panic!("expected a refusal ({expected}), got in"),
    }
    let s = server.monitor.snapshot();
    assert_eq!(s.refused.get(expected.label()), Some(&1), "{:?}", s.refused);
    assert_eq!(s.rooms, rooms, "a refused hello left a room");
    assert_unharmed(w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_without_a_token_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let r = join(&server, "elsewhere", None, false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::Missing),
        "no token: this server requires one",
    )
    .await;
    assert_eq!(server.monitor.snapshot().rooms, 1);
    mem.assert_grew_less_than(32 * MIB, "no token");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    // Expired longer ago than the clock skew allows.
    let t = now() - 200;
    let c = Claims {
        issued_at: t - 100,
        expires_at: t - CLOCK_SKEW,
        ..claims("home", "late")
    };
    let r = join(&server, "home", Some(token(&test_key(), &c)), false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::Expired),
        "token expired",
    )
    .await;
    mem.assert_grew_less_than(32 * MIB, "an expired token");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_room_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let r = join(
        &server,
        "squat",
        Some(token(&test_key(), &claims("a", "ann"))),
        false,
    )
    .await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::WrongRoom("a".into())),
        "token is for room \"a\"",
    )
    .await;
    mem.assert_grew_less_than(32 * MIB, "a token for another room");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_server_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let c = Claims {
        server_id: "eu-2".into(),
        ..claims("home", "ann")
    };
    let r = join(&server, "home", Some(token(&test_key(), &c)), false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::WrongServer("eu-2".into())),
        "token is for server \"eu-2\"",
    )
    .await;
    mem.assert_grew_less_than(32 * MIB, "a token for another server");
    server.shutdown().await;
}

/// The witness's own token, presented again by someone who copied it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_token_is_refused() {
    let _serial = serial().await;
    let mut server = TestServer::start(rules(), |c| c.tokens = Some(token_config()));
    let used = token(&test_key(), &claims("home", "witness"));
    let w = witness(&server, "home", Some(used.clone())).await;
    let mem = MemoryWatch::start();
    let r = join(&server, "home", Some(used.clone()), false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::AlreadyUsed),
        "token already used",
    )
    .await;
    // Also in a raw hello, any number of times: still spent.
    let peer = RawPeer::connect(server.addr, server.pin)
        .await
        .expect("connects");
    let mut s = peer.open_stream(5 * SEC).await.expect("a stream");
    let mut h = hello("home", rules().fingerprint());
    h.token = Some(used);
    assert!(s.frame(&hello_bytes(&h)).await);
    assert!(matches!(
        s.next(5 * SEC).await,
        Some(ServerReliable::Kick(KickReason::Token(
            TokenError::AlreadyUsed
        )))
    ));
    assert_eq!(server.monitor.snapshot().rooms, 1);
    mem.assert_grew_less_than(32 * MIB, "a replayed token");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_with_a_bad_signature_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    // A claim changed after signing: the user id's last byte.
    let mut forged = token(&test_key(), &claims("home", "ann"));
    let user_end = 52 + "home".len() + "ann".len() - 1;
    forged[user_end] = b'x';
    let r = join(&server, "home", Some(forged), false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::BadSignature),
        "bad token signature",
    )
    .await;
    // Signed by a key the server does not trust.
    let stranger = token(&stranger_key(), &claims("home", "bob"));
    let r = join(&server, "home", Some(stranger), false).await;
    match r {
        Err(ConnectError::Refused(KickReason::Token(TokenError::UnknownKey(_)))) => {}
        other => panic!("expected an unknown key, got {:?}", other.err()),
    }
    assert_unharmed(&w).await;
    mem.assert_grew_less_than(32 * MIB, "forged tokens");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_token_cannot_play() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let r = join(
        &server,
        "home",
        Some(token(&test_key(), &spectator_claims("home", "eve"))),
        false,
    )
    .await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::Token(TokenError::SpectatorAsPlayer),
        "spectator token used as a player",
    )
    .await;
    // As a spectator it is welcome (a fresh token: the first was spent).
    let s = join(
        &server,
        "home",
        Some(token(&test_key(), &spectator_claims("home", "eve"))),
        true,
    )
    .await
    .expect("a spectator watches");
    assert_eq!(s.slot(), None);
    assert_unharmed(&w).await;
    mem.assert_grew_less_than(32 * MIB, "a spectator token as a player");
    server.shutdown().await;
}

/// A token naming the witness's seat: the seat is taken, the hello is
/// refused, the witness keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_a_taken_seat_is_refused() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let seat = w.slot().expect("the witness plays");
    let c = Claims {
        seat: Some(seat),
        ..claims("home", "mallory")
    };
    let r = join(&server, "home", Some(token(&test_key(), &c)), false).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::SeatTaken(seat),
        &format!("seat {seat} is taken"),
    )
    .await;
    // A seat the room does not have.
    let c = Claims {
        seat: Some(20),
        ..claims("home", "mallory")
    };
    match join(&server, "home", Some(token(&test_key(), &c)), false).await {
        Err(ConnectError::Refused(r)) => assert_eq!(
            r.to_string(),
            "token is for seat 20, but the room has 8 seats"
        ),
        other => panic!("expected a refusal, got {:?}", other.err()),
    }
    // A free seat the token names is given.
    let c = Claims {
        seat: Some(5),
        ..claims("home", "carol")
    };
    let carol = join(&server, "home", Some(token(&test_key(), &c)), false)
        .await
        .expect("carol takes seat 5");
    assert_eq!(carol.slot(), Some(5));
    assert_unharmed(&w).await;
    mem.assert_grew_less_than(32 * MIB, "a token for a taken seat");
    server.shutdown().await;
}

/// Seat hijack with a leaked secret: another user presents the witness's
/// real reconnect secret with a valid token of their own. The seat belongs
/// to the witness's user id: refused, the witness keeps it. The witness's
/// user reconnects with the same secret and a fresh token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_secret_does_not_give_another_user_the_seat() {
    let _serial = serial().await;
    let (mut server, w, mem) = start().await;
    let seat = w.slot().expect("the witness plays");
    let mut options = ConnectOptions::new(rules(), server.pin);
    options.token = Some(token(&test_key(), &claims("home", "mallory")));
    options.reconnect = Some(w.reconnect_secret());
    let r = connect(server.addr, "home", options).await;
    assert_refused(
        &server,
        &w,
        r,
        KickReason::SeatNotGranted(seat),
        &format!("the token does not grant seat {seat}"),
    )
    .await;
    // The witness's connection drops; its user reconnects to its seat.
    let secret = w.reconnect_secret();
    w.close().await;
    let mut options = ConnectOptions::new(rules(), server.pin);
    options.token = Some(token(&test_key(), &claims("home", "witness")));
    options.reconnect = Some(secret);
    let back = connect(server.addr, "home", options)
        .await
        .expect("the witness's user reconnects");
    assert_eq!(back.slot(), Some(seat));
    mem.assert_grew_less_than(32 * MIB, "a leaked secret");
    server.shutdown().await;
}

/// Keys rotate: a server trusting two keys admits tokens of both; rooms
/// created per user are limited whatever the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_admit_and_room_creation_is_limited_per_user() {
    let _serial = serial().await;
    let mut server = TestServer::start(rules(), |c| {
        let mut t = token_config();
        t.keys.push(stranger_key().verifying_key());
        c.tokens = Some(t);
        c.limits.room_creations_per_minute = 2;
    });
    let w = witness(
        &server,
        "home",
        Some(token(&test_key(), &claims("home", "witness"))),
    )
    .await;
    let mem = MemoryWatch::start();
    let _a = join(
        &server,
        "home",
        Some(token(&stranger_key(), &claims("home", "ann"))),
        false,
    )
    .await
    .expect("the second key's token");
    // User "rex" creates two rooms from two addresses, then no more.
    for (i, bind) in ["127.0.0.2:0", "127.0.0.3:0", "127.0.0.4:0"]
        .iter()
        .enumerate()
    {
        let room = format!("rex{i}");
        let peer = RawPeer::connect_from(bind.parse().unwrap(), server.addr, server.pin)
            .await
            .expect("connects");
        let mut s = peer.open_stream(5 * SEC).await.expect("a stream");
        let mut h = hello(&room, rules().fingerprint());
        h.token = Some(token(&test_key(), &claims(&room, "rex")));
        assert!(s.frame(&hello_bytes(&h)).await);
        match (i, s.next(5 * SEC).await) {
            (0 | 1, Some(ServerReliable::Welcome(_))) => {}
            (2, Some(ServerReliable::Kick(KickReason::TooManyRoomsCreated))) => {}
            (_, other) => panic!("room {room}: {other:?}"),
        }
    }
    assert_eq!(
        server.monitor.snapshot().refused.get("room_creation_limit"),
        Some(&1)
    );
    assert_unharmed(&w).await;
    mem.assert_grew_less_than(32 * MIB, "rooms created per user");
    server.shutdown().await;
}
