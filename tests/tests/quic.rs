//! End to end over real QUIC (quinn) on loopback: the server's rooms, the
//! client library, bots, the link conditioner, shutdown, and clients that
//! misbehave. Ports come from `127.0.0.1:0`.
//!
//! Time here is wall-clock time (real sockets); every wait has a generous
//! limit that only guards against hangs.

use bitroom_client::bots::{BotFleet, BotSpec};
use bitroom_client::conditioner::ConditionerConfig;
use bitroom_client::{connect, ConnectError, ConnectOptions, Disconnect, Event};
use bitroom_protocol::{
    encode_client_datagram, ClientDatagram, FrameAck, InputBatch, InputRun, KickReason, RoomConfig,
    ServerReliable, StreamFramer, MAX_RELIABLE,
};
use bitroom_sim::game::sandbox::Strategy;
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxConfig, SandboxPlayer};
use bitroom_sim::game::{Rules, Slot};
use bitroom_sim::World;
use bitroom_tests::loopback::{wait_for, RawClient, TestServer};
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn rules() -> Sandbox {
    Sandbox::new(SandboxConfig { loose_bodies: 60 })
}

fn bot(name: &str, room: &str, strategy: Strategy, seed: u64) -> BotSpec<Strategy> {
    BotSpec {
        name: name.into(),
        room: room.into(),
        strategy,
        seed,
        predict: true,
        conditioner: None,
        load: false,
        token: None,
    }
}

/// Four bots play 600 ticks; every confirmed tick's hash matches the
/// server's. Runs at 120 Hz (the server's `--tick-rate`) to halve the wall
/// time: 600 ticks in 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_bots_play_600_ticks_in_sync() {
    let mut server = TestServer::start(rules(), |c| {
        c.room = RoomConfig {
            tick_rate: 120,
            ..RoomConfig::default()
        };
    });
    let mut fleet = BotFleet::new(server.addr, rules(), server.pin);
    let strategies = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ];
    for (i, s) in strategies.into_iter().enumerate() {
        fleet.spawn(bot(&format!("bot{i}"), "four", s, i as u64));
    }
    wait_for("4 bots connected", 10 * SEC, || {
        fleet.status().connected == 4
    })
    .await;
    let start = server.ticks();
    wait_for("600 ticks", 30 * SEC, || server.ticks() >= start + 600).await;
    let report = fleet.finish().await;
    for b in &report.bots {
        let s = b.stats.expect("stats").session;
        assert_eq!(b.desyncs, 0, "{}: {s:?}", b.name);
        assert!(b.error.is_none(), "{}: {:?}", b.name, b.error);
        // Every confirmed tick after the join was hash-checked.
        assert!(
            s.verified >= 550,
            "{} verified only {}: {s:?}",
            b.name,
            s.verified
        );
        assert!(s.bytes_in > 0 && s.bytes_out > 0);
    }
    let rollbacks: u64 = report
        .bots
        .iter()
        .map(|b| b.stats.map_or(0, |s| s.session.rollbacks))
        .sum();
    assert!(rollbacks > 0, "bots that change inputs cause rollbacks");
    let room = server.monitor.snapshot().room_stats["four"];
    assert_eq!(room.desyncs, 0);
    server.shutdown().await;
}

/// A bot behind the link conditioner (100 ms each way, 10 % loss) with a
/// bot on a clean link: both stay in sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditioned_bot_stays_in_sync() {
    let mut server = TestServer::start(rules(), |_| {});
    let mut fleet = BotFleet::new(server.addr, rules(), server.pin);
    fleet.spawn(bot("clean", "lossy", Strategy::Random, 1));
    fleet.spawn(BotSpec {
        conditioner: Some(ConditionerConfig {
            latency: Duration::from_millis(100),
            jitter: Duration::from_millis(10),
            loss_ppm: 100_000,
            seed: 5,
            ..ConditionerConfig::default()
        }),
        ..bot("lossy", "lossy", Strategy::Chaser, 2)
    });
    wait_for("2 bots connected", 15 * SEC, || {
        fleet.status().connected == 2
    })
    .await;
    let start = server.ticks();
    wait_for("480 ticks", 30 * SEC, || server.ticks() >= start + 480).await;
    let report = fleet.finish().await;
    for b in &report.bots {
        let s = b.stats.expect("stats").session;
        assert_eq!(b.desyncs, 0, "{}: {s:?}", b.name);
        assert!(b.time_to_sync.is_some(), "{} never synced: {s:?}", b.name);
        assert!(
            s.verified >= 300,
            "{} verified only {}: {s:?}",
            b.name,
            s.verified
        );
    }
    let lossy = &report.bots[1];
    let s = lossy.stats.expect("stats");
    assert!(s.rtt() >= Duration::from_millis(200), "rtt {:?}", s.rtt());
    server.shutdown().await;
}

/// A player who drops its connection gets its slot back with its secret; a
/// player who leaves frees its slot for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_leave_and_reconnect_to_the_same_slot() {
    let mut server = TestServer::start(rules(), |_| {});
    let options = || ConnectOptions::new(rules(), server.pin);
    let a = connect(server.addr, "seats", options())
        .await
        .expect("a joins");
    let b = connect(server.addr, "seats", options())
        .await
        .expect("b joins");
    assert_eq!((a.slot(), b.slot()), (Some(0), Some(1)));
    let secret = a.reconnect_secret();
    // A's connection drops without a goodbye: the seat waits for it.
    a.close().await;
    let c = connect(server.addr, "seats", options())
        .await
        .expect("c joins");
    assert_eq!(c.slot(), Some(2), "a dropped seat is kept for its owner");
    let mut again = options();
    again.reconnect = Some(secret);
    let mut a2 = connect(server.addr, "seats", again)
        .await
        .expect("a reconnects");
    assert_eq!(a2.slot(), Some(0), "the secret reclaims the seat");
    assert_eq!(a2.reconnect_secret(), secret);
    wait_for_synced(&mut a2).await;
    // B leaves for good: its seat is free for the next player.
    let left = b.leave(2 * SEC).await;
    assert_eq!(left, Some(Disconnect::Kicked(KickReason::Left)));
    let d = connect(server.addr, "seats", options())
        .await
        .expect("d joins");
    assert_eq!(d.slot(), Some(1), "a left seat is reused");
    assert_ne!(d.reconnect_secret(), secret);
    // The reconnected player is in sync with the room.
    let verified = a2.stats().session.verified;
    wait_for("a2 verifies frames", 10 * SEC, || {
        a2.stats().session.verified > verified + 30
    })
    .await;
    assert_eq!(a2.stats().session.desyncs, 0);
    server.shutdown().await;
}

async fn wait_for_synced<R: bitroom_protocol::NetRules>(h: &mut bitroom_client::ClientHandle<R>) {
    let synced = tokio::time::timeout(10 * SEC, async {
        while let Some(e) = h.next_event().await {
            if matches!(e, Event::Synced { .. }) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(synced, Ok(true), "no snapshot");
}

/// Shutting the server down tells every client why, and the server's run
/// returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_shutdown_reaches_clients() {
    let mut server = TestServer::start(rules(), |_| {});
    let mut clients = Vec::new();
    for room in ["one", "one", "two"] {
        let mut c = join(&server, room).await.expect("join");
        wait_for_synced(&mut c).await;
        clients.push(c);
    }
    // A connection still in its hello phase is told too.
    let raw = RawClient::connect(server.addr, server.pin).await;
    server.shutdown().await;
    for mut c in clients {
        let end = tokio::time::timeout(5 * SEC, async {
            loop {
                match c.next_event().await {
                    Some(Event::Disconnected(d)) => return Some(d),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await
        .expect("disconnect event");
        assert_eq!(end, Some(Disconnect::Kicked(KickReason::ServerShutdown)));
    }
    assert_eq!(raw.kicked(5 * SEC).await, KickReason::ServerShutdown);
}

/// A room whose step panics is closed (its clients are told why); the
/// other rooms carry on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_room_closes_alone() {
    let mut server = TestServer::start(
        Fragile {
            inner: rules(),
            armed: true,
        },
        |_| {},
    );
    let options = || {
        ConnectOptions::new(
            Fragile {
                inner: rules(),
                armed: false,
            },
            server.pin,
        )
    };
    let mut doomed = connect(server.addr, "doomed", options())
        .await
        .expect("join");
    let mut safe = connect(server.addr, "safe", options()).await.expect("join");
    wait_for_synced(&mut doomed).await;
    wait_for_synced(&mut safe).await;
    doomed.set_input(PlayerInput {
        aim: Fragile::POISON,
        ..PlayerInput::default()
    });
    let end = tokio::time::timeout(10 * SEC, async {
        loop {
            match doomed.next_event().await {
                Some(Event::Disconnected(d)) => return d,
                Some(_) => {}
                None => panic!("no disconnect event"),
            }
        }
    })
    .await
    .expect("the doomed room closes");
    match end {
        Disconnect::Kicked(KickReason::RoomClosed(why)) => {
            assert!(why.contains("poisoned input"), "{why}")
        }
        other => panic!("expected RoomClosed, got {other:?}"),
    }
    let verified = safe.stats().session.verified;
    wait_for("the safe room goes on", 10 * SEC, || {
        safe.stats().session.verified > verified + 60
    })
    .await;
    assert!(safe.disconnected().is_none());
    assert_eq!(server.monitor.snapshot().room_panics, 1);
    assert!(!server.monitor.snapshot().room_stats.contains_key("doomed"));
    server.shutdown().await;
}

/// Sandbox rules that panic on the server when a player's aim is
/// `POISON` (the clients' copy is not armed, so only the room panics).
#[derive(Clone, Debug)]
struct Fragile {
    inner: Sandbox,
    armed: bool,
}

impl Fragile {
    const POISON: u16 = 0xDEAD;
}

impl Rules for Fragile {
    type Input = PlayerInput;
    type Player = SandboxPlayer;
    type State = ();
    fn fingerprint(&self) -> u64 {
        self.inner.fingerprint() ^ 0xF7A6
    }
    fn build_world(&self) -> World {
        self.inner.build_world()
    }
    fn join(&self, world: &mut World, state: &mut (), slot: u8) -> SandboxPlayer {
        self.inner.join(world, state, slot)
    }
    fn leave(&self, world: &mut World, state: &mut (), slot: u8, p: &mut SandboxPlayer) {
        self.inner.leave(world, state, slot, p)
    }
    fn apply_input(
        &self,
        world: &mut World,
        state: &mut (),
        slot: &mut Slot<SandboxPlayer, PlayerInput>,
        input: PlayerInput,
    ) {
        if self.armed && input.aim == Fragile::POISON {
            panic!("poisoned input");
        }
        self.inner.apply_input(world, state, slot, input)
    }
}

/// A default player joining `room` on `server`.
async fn join(
    server: &TestServer,
    room: &str,
) -> Result<bitroom_client::ClientHandle<Sandbox>, ConnectError> {
    connect(server.addr, room, ConnectOptions::new(rules(), server.pin)).await
}

/// A well-behaved player in `room`, synced; the bad-client tests check it
/// keeps verifying frames while others misbehave.
async fn witness(server: &TestServer, room: &str) -> bitroom_client::ClientHandle<Sandbox> {
    let mut w = join(server, room).await.expect("witness joins");
    wait_for_synced(&mut w).await;
    w
}

async fn assert_room_goes_on(w: &bitroom_client::ClientHandle<Sandbox>) {
    let verified = w.stats().session.verified;
    wait_for("the room goes on for the witness", 10 * SEC, || {
        w.stats().session.verified > verified + 30
    })
    .await;
    let s = w.stats().session;
    assert_eq!(s.desyncs, 0, "{s:?}");
    assert!(w.disconnected().is_none());
}

/// Wrong protocol version and wrong rules are refused with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mismatched_clients_are_refused_with_the_reason() {
    let mut server = TestServer::start(rules(), |_| {});
    let w = witness(&server, "strict").await;
    let mut old = RawClient::connect(server.addr, server.pin).await;
    old.send_message(&RawClient::hello("strict", rules().fingerprint(), 99))
        .await;
    let mut framer = StreamFramer::default();
    assert_eq!(
        old.next_message(&mut framer).await,
        Some(ServerReliable::Kick(KickReason::VersionMismatch {
            server: bitroom_protocol::PROTOCOL_VERSION,
            client: 99
        }))
    );
    assert!(matches!(
        old.kicked(5 * SEC).await,
        KickReason::VersionMismatch { client: 99, .. }
    ));
    let other = Sandbox::new(SandboxConfig { loose_bodies: 10 });
    match connect(
        server.addr,
        "strict",
        ConnectOptions::new(other, server.pin),
    )
    .await
    {
        Err(ConnectError::Refused(KickReason::RulesMismatch { server: s, client })) => {
            assert_eq!(s, rules().fingerprint());
            assert_ne!(client, s);
        }
        other => panic!("expected a rules mismatch, got {other:?}"),
    }
    // A certificate other than the pinned one fails the handshake.
    let wrong_pin = bitroom_transport::CertPin::Sha256([7; 32]);
    assert!(matches!(
        connect(
            server.addr,
            "strict",
            ConnectOptions::new(rules(), wrong_pin)
        )
        .await,
        Err(ConnectError::Connection(_))
    ));
    assert_room_goes_on(&w).await;
    server.shutdown().await;
}

/// Garbage datagrams are counted and dropped; inputs for another slot are
/// refused; the room carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_foreign_inputs_are_dropped() {
    let mut server = TestServer::start(rules(), |_| {});
    let w = witness(&server, "noisy").await;
    let mut raw = RawClient::connect(server.addr, server.pin).await;
    raw.join("noisy", rules().fingerprint()).await;
    let mut framer = StreamFramer::default();
    let slot = match raw.next_message(&mut framer).await {
        Some(ServerReliable::Welcome(wel)) => wel.slot.expect("a player slot"),
        other => panic!("expected a welcome, got {other:?}"),
    };
    for i in 0..40u8 {
        let junk = vec![0xA5 ^ i; 20 + usize::from(i)];
        raw.connection.send_datagram(junk.into()).expect("datagram");
        // Inputs for the witness's slot.
        let foreign = encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
            slot: w.slot().expect("witness slot"),
            first_tick: 1,
            runs: vec![InputRun {
                count: 1,
                input: PlayerInput::default(),
            }],
            ack: FrameAck::default(),
        }));
        raw.connection
            .send_datagram(foreign.into())
            .expect("datagram");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_ne!(slot, w.slot().expect("witness slot"));
    wait_for("rejections counted", 5 * SEC, || {
        let r = server.monitor.snapshot().room_stats["noisy"];
        r.malformed >= 30 && r.wrong_slot >= 30
    })
    .await;
    assert!(
        raw.connection.close_reason().is_none(),
        "dropped, not kicked"
    );
    assert_room_goes_on(&w).await;
    server.shutdown().await;
}

/// A stream message longer than the protocol allows, before or after the
/// hello, closes that connection with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_stream_messages_close_the_connection() {
    let mut server = TestServer::start(rules(), |_| {});
    let w = witness(&server, "big").await;
    // Before the hello: the hello limit is a few KiB.
    let mut early = RawClient::connect(server.addr, server.pin).await;
    early.send_raw(&(1u32 << 20).to_le_bytes()).await;
    match early.kicked(5 * SEC).await {
        KickReason::BadMessage(m) => assert!(m.contains("exceeds the limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    // After joining: the reliable-message limit.
    let mut late = RawClient::connect(server.addr, server.pin).await;
    late.join("big", rules().fingerprint()).await;
    let too_big = (MAX_RELIABLE as u32 + 1).to_le_bytes();
    late.send_raw(&too_big).await;
    match late.kicked(5 * SEC).await {
        KickReason::BadMessage(m) => assert!(m.contains("exceeds the limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A first message that is not a hello.
    let mut rude = RawClient::connect(server.addr, server.pin).await;
    rude.send_message(&bitroom_protocol::encode_client_reliable(
        &bitroom_protocol::ClientReliable::Leave,
    ))
    .await;
    match rude.kicked(5 * SEC).await {
        KickReason::BadMessage(m) => assert!(m.contains("hello"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_room_goes_on(&w).await;
    server.shutdown().await;
}

/// A client that floods datagrams is rate limited, then kicked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_flood_is_kicked() {
    let mut server = TestServer::start(rules(), |_| {});
    let w = witness(&server, "flood").await;
    let mut raw = RawClient::connect(server.addr, server.pin).await;
    raw.join("flood", rules().fingerprint()).await;
    let mut framer = StreamFramer::default();
    let slot = match raw.next_message(&mut framer).await {
        Some(ServerReliable::Welcome(wel)) => wel.slot.expect("a player slot"),
        other => panic!("expected a welcome, got {other:?}"),
    };
    let ping = encode_client_datagram(&ClientDatagram::Inputs(InputBatch {
        slot,
        first_tick: 1,
        runs: vec![InputRun {
            count: 1,
            input: PlayerInput::default(),
        }],
        ack: FrameAck::default(),
    }));
    // ~2000 datagrams per second for up to 5 s: far over 3× the tick rate.
    let flood = async {
        for _ in 0..10_000 {
            if raw.connection.send_datagram(ping.clone().into()).is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    };
    let _ = tokio::time::timeout(5 * SEC, flood).await;
    assert_eq!(raw.kicked(5 * SEC).await, KickReason::Flood);
    let r = server.monitor.snapshot().room_stats["flood"];
    assert!(r.rate_limited > 0, "{r:?}");
    assert_room_goes_on(&w).await;
    server.shutdown().await;
}

/// A client that never says hello is dropped after the hello timeout;
/// stray UDP that is not QUIC is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_says_hello_is_dropped() {
    let mut server = TestServer::start(rules(), |c| {
        c.hello_timeout = Duration::from_millis(700);
    });
    let w = witness(&server, "patient").await;
    // QUIC handshake done, stream opened, hello never sent.
    let silent = RawClient::connect(server.addr, server.pin).await;
    // Half a hello.
    let mut half = RawClient::connect(server.addr, server.pin).await;
    let hello = RawClient::hello("patient", rules().fingerprint(), 1);
    let framed = StreamFramer::frame(&hello);
    half.send_raw(&framed[..framed.len() / 2]).await;
    // Not QUIC at all.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    for i in 0..50u8 {
        udp.send_to(&[i; 64], server.addr).expect("send");
    }
    assert_eq!(silent.kicked(5 * SEC).await, KickReason::HandshakeTimeout);
    assert_eq!(half.kicked(5 * SEC).await, KickReason::HandshakeTimeout);
    assert_room_goes_on(&w).await;
    assert_eq!(
        server.monitor.snapshot().refused.get("hello_timeout"),
        Some(&2)
    );
    server.shutdown().await;
}

/// A QUIC handshake that never completes (the client's first packet
/// arrives, nothing after it) is dropped after the hello timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_quic_handshake_is_dropped() {
    let mut server = TestServer::start(rules(), |c| {
        c.hello_timeout = Duration::from_millis(700);
    });
    let w = witness(&server, "stalled").await;
    // A relay that passes the client's first datagram (its Initial) to the
    // server and drops everything else, both ways.
    let relay = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("udp");
    let relay_addr = relay.local_addr().expect("addr");
    let server_addr = server.addr;
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        let Ok((n, _)) = relay.recv_from(&mut buf).await else {
            return;
        };
        let _ = relay.send_to(&buf[..n], server_addr).await;
        while relay.recv_from(&mut buf).await.is_ok() {}
    });
    let endpoint =
        quinn::Endpoint::client("127.0.0.1:0".parse().expect("address literal")).expect("socket");
    let connecting = endpoint
        .connect_with(
            bitroom_transport::client_config(server.pin).expect("tls"),
            relay_addr,
            bitroom_transport::SERVER_NAME,
        )
        .expect("connect");
    // Never completes; keep it alive meanwhile.
    let stalled = tokio::spawn(connecting);
    wait_for("the stalled handshake is dropped", 10 * SEC, || {
        server.monitor.snapshot().refused.get("handshake_timeout") == Some(&1)
    })
    .await;
    assert_eq!(server.monitor.snapshot().connections, 1, "only the witness");
    stalled.abort();
    assert_room_goes_on(&w).await;
    server.shutdown().await;
}

/// `serve --record`: a real room over QUIC is recorded, and the replay
/// verifies tick for tick (and names its players' joins and leaves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_room_verifies() {
    use bitroom_protocol::replay::{verify, ReplayReader, VerifyOptions};
    let dir = std::env::temp_dir().join(format!("bitroom-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let record_dir = dir.clone();
    let mut server = TestServer::start(rules(), move |c| {
        c.record = Some(bitroom_server::RecordConfig {
            rules: "sandbox".into(),
            dir: record_dir,
            scene: "arena60".into(),
            keyframe_interval: 60,
            quota: bitroom_server::DEFAULT_RECORD_QUOTA,
        });
    });
    let mut fleet = BotFleet::new(server.addr, rules(), server.pin);
    fleet.spawn(bot("a", "rec", Strategy::Random, 1));
    fleet.spawn(bot("b", "rec", Strategy::Chaser, 2));
    wait_for("2 bots connected", 10 * SEC, || {
        fleet.status().connected == 2
    })
    .await;
    let start = server.ticks();
    wait_for("200 ticks", 20 * SEC, || server.ticks() >= start + 200).await;
    let report = fleet.finish().await;
    assert!(report.bots.iter().all(|b| b.desyncs == 0));
    server.shutdown().await;
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("record dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let bytes = std::fs::read(&files[0]).expect("replay");
    let reader = ReplayReader::open(&bytes[..]).expect("header");
    let opts = VerifyOptions {
        start: None,
        synctest: None,
    };
    let rep = verify(
        reader,
        |h, i| Ok(Sandbox::replaying(i, h.rules_fingerprint)),
        &opts,
        &mut |_| {},
    )
    .expect("re-simulates");
    assert_eq!(rep.divergence, None);
    assert!(rep.damage.is_none(), "{:?}", rep.damage);
    assert!(rep.ticks_verified >= 200, "{rep:?}");
    assert!(rep.keyframes_checked >= 3, "{rep:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Load clients (traffic without simulation) get slots, receive frames,
/// acknowledge them (so the room barely resends) and send inputs the room
/// uses; a real bot in the same room stays in sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_clients_play_without_simulating() {
    let mut server = TestServer::start(rules(), |_| {});
    let mut fleet = BotFleet::new(server.addr, rules(), server.pin);
    fleet.spawn(bot("real", "load", Strategy::Chaser, 1));
    for i in 0..6 {
        fleet.spawn(BotSpec {
            load: true,
            ..bot(&format!("load{i}"), "load", Strategy::Random, 10 + i)
        });
    }
    wait_for("7 clients connected", 10 * SEC, || {
        fleet.status().connected == 7
    })
    .await;
    let start = server.ticks();
    wait_for("300 ticks", 30 * SEC, || server.ticks() >= start + 300).await;
    let room = server.monitor.snapshot().room_stats["load"];
    let report = fleet.finish().await;
    for b in &report.bots {
        assert!(b.error.is_none(), "{}: {:?}", b.name, b.error);
        let s = b.stats.expect("stats").session;
        assert!(s.frames >= 250, "{}: {s:?}", b.name);
    }
    let real = report.bots[0].stats.expect("stats").session;
    assert_eq!(report.bots[0].desyncs, 0);
    assert!(real.verified >= 250, "{real:?}");
    // Load clients' inputs arrive in time and their acks stop resends.
    assert_eq!(room.players, 7, "{room:?}");
    assert!(room.resent_frames < room.ticks, "{room:?}");
    assert!(room.missing_inputs < room.ticks * 7 / 4, "{room:?}");
    server.shutdown().await;
}

/// Load shedding: once a room ticks later than `shed_lateness` (here any
/// lateness at all), new joins are refused as overloaded while the room
/// already running goes on; with shedding off the same join gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_are_refused_while_rooms_run_late() {
    let mut server = TestServer::start(rules(), |c| c.shed_lateness = Some(Duration::ZERO));
    let first = join(&server, "busy")
        .await
        .expect("the first join comes before any tick");
    // Let the room tick: every tick is at least 0 late.
    let start = first.stats().session.frames;
    tokio::time::sleep(Duration::from_millis(200)).await;
    match join(&server, "busy").await {
        Err(ConnectError::Refused(KickReason::Overloaded)) => {}
        other => panic!("expected an overloaded refusal, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        first.stats().session.frames > start + 10,
        "the running room stopped: {:?}",
        first.stats()
    );
    assert_eq!(
        server.monitor.snapshot().refused.get("overloaded"),
        Some(&1)
    );
    server.shutdown().await;

    let mut server = TestServer::start(rules(), |_| {});
    let _a = join(&server, "calm").await.expect("first");
    tokio::time::sleep(Duration::from_millis(200)).await;
    join(&server, "calm")
        .await
        .expect("without shedding the second join gets in");
    server.shutdown().await;
}

/// With a CPU budget (`serve --cpu-budget`), the server measures what a
/// room costs and refuses a room that would not fit: at a budget of 0 %
/// (the library's; the CLI takes 1 to 100) no room beyond those open,
/// once a room has been measured (a sample a second, over at least five
/// room-seconds). Before that the limit
/// is `max_rooms`; an open room still takes players.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_past_the_measured_capacity_is_refused() {
    let mut server = TestServer::start(rules(), |c| {
        c.max_rooms = 8;
        c.cpu_budget = Some(0);
    });
    let _a = join(&server, "first").await.expect("first room");
    let _b = join(&server, "second")
        .await
        .expect("no room measured yet: max_rooms decides");
    // A sample a second; a room's cost is measured over at least five
    // room-seconds.
    tokio::time::sleep(Duration::from_secs(4)).await;
    match join(&server, "third").await {
        Err(ConnectError::Refused(KickReason::TooManyRooms)) => {}
        other => panic!("expected too many rooms, got {other:?}"),
    }
    let c = join(&server, "first")
        .await
        .expect("an open room still takes players");
    assert_eq!(c.slot(), Some(1));
    server.shutdown().await;
}

/// Past `max_rooms`, a join that would create a room is refused with the
/// reason; joins to existing rooms still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_rooms_is_refused() {
    let mut server = TestServer::start(rules(), |c| c.max_rooms = 1);
    let _a = join(&server, "only").await.expect("first room");
    match join(&server, "second").await {
        Err(ConnectError::Refused(KickReason::TooManyRooms)) => {}
        other => panic!("expected too many rooms, got {other:?}"),
    }
    let b = join(&server, "only")
        .await
        .expect("an existing room still takes players");
    assert_eq!(b.slot(), Some(1));
    server.shutdown().await;
}
