//! `serve --agones` without a cluster: a server (the library, configured
//! as the CLI's `--agones` configures it) talks to a fake Agones SDK
//! sidecar (`bitroom_tests::agones_sdk`, tonic serving stubs generated
//! from the protos the `agones` crate is built from), and the test
//! asserts what it said: Ready, Health while the rooms tick and none
//! while one is stalled, the Counters on join and leave and allocations,
//! Shutdown once allocated and idle.
//!
//! Needs the `agones` feature (`cargo test -p bitroom-tests --features
//! agones`, which needs protoc). Without it, one test says it was skipped,
//! and fails when `CI` is set. Every wait has a generous limit that only
//! guards against hangs.

#[cfg(not(feature = "agones"))]
#[test]
fn agones_tests_need_the_agones_feature() {
    let why = "skipped: the Agones tests need `--features bitroom-tests/agones` (and protoc)";
    assert!(std::env::var_os("CI").is_none(), "{why}; CI is set");
    eprintln!("{why}");
}

#[cfg(feature = "agones")]
mod with_agones {
    use bitroom_client::{connect, ConnectError, ConnectOptions};
    use bitroom_protocol::{KickReason, RoomConfig};
    use bitroom_server::tls::Identity;
    use bitroom_server::{AgonesConfig, Server, ServerConfig};
    use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxConfig, SandboxPlayer};
    use bitroom_sim::game::{Rules, Slot};
    use bitroom_sim::World;
    use bitroom_tests::agones_sdk::{Call, FakeSdk};
    use bitroom_tests::loopback::wait_for;
    use bitroom_transport::CertPin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    const SEC: Duration = Duration::from_secs(1);

    /// Sandbox rules whose step blocks while `stall` is set: a room's
    /// tick loop stuck (the clients' copy has its own flag, never set).
    #[derive(Clone, Debug)]
    struct Stalling {
        inner: Sandbox,
        stall: Arc<AtomicBool>,
    }

    impl Stalling {
        fn new() -> Stalling {
            Stalling {
                inner: Sandbox::new(SandboxConfig { loose_bodies: 20 }),
                stall: Arc::default(),
            }
        }
    }

    impl Rules for Stalling {
        type Input = PlayerInput;
        type Player = SandboxPlayer;
        type State = ();
        fn fingerprint(&self) -> u64 {
            self.inner.fingerprint()
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
            self.inner.apply_input(world, state, slot, input)
        }
        fn post_step(
            &self,
            _world: &mut World,
            _state: &mut (),
            _slots: &mut [Slot<SandboxPlayer, PlayerInput>],
        ) {
            // Blocks this worker thread, as a stuck step would (bounded:
            // a test that forgets to clear the flag still ends).
            for _ in 0..3000 {
                if !self.stall.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// A server as the Fleet runs it (4 rooms of 8 seats, no load
    /// shedding), reporting to `sdk` fast enough for a test; shut down
    /// after `idle_shutdown` allocated and empty, if given.
    fn fleet_server(
        sdk: &FakeSdk,
        rules: Stalling,
        reservation_ttl: Duration,
        idle_shutdown: Option<Duration>,
    ) -> ServerConfig<Stalling> {
        let mut config = ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            rules,
            Identity::self_signed().unwrap(),
        );
        config.shed_lateness = None;
        config.max_rooms = 4;
        config.room = RoomConfig {
            max_players: 8,
            ..RoomConfig::default()
        };
        config.agones = Some(AgonesConfig {
            port: Some(sdk.addr.port()),
            connect_timeout: 30 * SEC,
            server_id: None,
            health_every: Duration::from_millis(100),
            stall: Duration::from_millis(500),
            idle_shutdown,
            reservation_ttl,
        });
        config
    }

    fn counter_diffs(sdk: &FakeSdk, counter: &str) -> Vec<i64> {
        sdk.state()
            .calls
            .iter()
            .filter_map(|c| match c {
                Call::UpdateCounter {
                    name,
                    diff,
                    count: None,
                    capacity: None,
                } if name == counter => Some(*diff),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn ready_health_counters_and_shutdown_when_allocated_and_idle() {
        let sdk = FakeSdk::start("bitroom-fleet-x7k2p", &["rooms", "players"]).await;
        let rules = Stalling::new();
        let stall = rules.stall.clone();
        let after = Duration::from_millis(1500);
        let mut config = fleet_server(&sdk, rules, after, Some(after));
        config.room_idle = Duration::from_millis(300);
        let server = Server::bind(config).unwrap();
        let addr = server.local_addr();
        let fingerprint = server.fingerprint();
        let pin = CertPin::Sha256(fingerprint);
        let stop = server.shutdown_handle();
        let mut serving = tokio::spawn(server.run());
        let client = || ConnectOptions::new(Stalling::new(), pin);

        // Set up, then Ready: the server id (the GameServer's name by
        // default) on the record, the Counters' capacities from the limits.
        wait_for("Ready", 30 * SEC, || sdk.called(&Call::Ready)).await;
        {
            let s = sdk.state();
            let ready_at = s.calls.iter().position(|c| *c == Call::Ready).unwrap();
            let id = (
                "bitroom-server-id".to_string(),
                "bitroom-fleet-x7k2p".to_string(),
            );
            let before = &s.calls[..ready_at];
            assert!(before.contains(&Call::SetAnnotation(id.0.clone(), id.1.clone())));
            assert!(before.contains(&Call::SetLabel(id.0, id.1)));
            let fp = bitroom_transport::fingerprint_hex(&fingerprint);
            assert!(before.contains(&Call::SetAnnotation("bitroom-cert-sha256".into(), fp)));
            assert_eq!(
                s.counters["rooms"],
                (0, 4),
                "rooms: count, capacity = --max-rooms"
            );
            assert_eq!(s.counters["players"], (0, 32), "players: 4 rooms × 8 seats");
        }

        // Health with no rooms (the tick timer wakes the reports).
        let p = sdk.health_pings();
        wait_for("health pings", 10 * SEC, || sdk.health_pings() >= p + 3).await;

        // A player opens a room: both Counters follow, health goes on.
        let a = connect(addr, "r1", client()).await.expect("join r1");
        wait_for("rooms 1, players 1", 10 * SEC, || {
            sdk.count("rooms") == 1 && sdk.count("players") == 1
        })
        .await;
        assert_eq!(
            counter_diffs(&sdk, "rooms"),
            [1],
            "a room opened without an allocation"
        );
        let p = sdk.health_pings();
        wait_for("health pings while ticking", 10 * SEC, || {
            sdk.health_pings() >= p + 3
        })
        .await;

        // The room's tick loop is stuck: health stops; it resumes once
        // the room ticks again.
        stall.store(true, Ordering::Relaxed);
        tokio::time::sleep(SEC).await; // past the 0.5 s stall limit
        let during = sdk.health_pings();
        tokio::time::sleep(SEC).await;
        let after = sdk.health_pings();
        stall.store(false, Ordering::Relaxed);
        assert_eq!(after, during, "health reported while a room was stalled");
        wait_for("health after the stall", 10 * SEC, || {
            sdk.health_pings() > after
        })
        .await;

        // The player leaves; the room closes when idle.
        let _ = a.leave(2 * SEC).await;
        wait_for("players 0, rooms 0", 10 * SEC, || {
            sdk.count("rooms") == 0 && sdk.count("players") == 0
        })
        .await;
        assert_eq!(counter_diffs(&sdk, "rooms"), [1, -1]);

        // An allocation reserves a room (Counter +1, as the
        // GameServerAllocation's counter action does); the player it was
        // for opens it: the reservation is used, not counted twice.
        sdk.allocate(1);
        assert_eq!(sdk.count("rooms"), 1);
        let b = connect(addr, "r2", client()).await.expect("join r2");
        wait_for("players 1", 10 * SEC, || sdk.count("players") == 1).await;
        tokio::time::sleep(SEC / 2).await;
        assert_eq!(sdk.count("rooms"), 1, "the reserved room was counted twice");
        assert_eq!(counter_diffs(&sdk, "rooms"), [1, -1]);
        let _ = b.leave(2 * SEC).await;
        wait_for("rooms 0 after r2", 10 * SEC, || sdk.count("rooms") == 0).await;
        assert_eq!(counter_diffs(&sdk, "rooms"), [1, -1, -1]);
        assert!(!sdk.called(&Call::Shutdown), "shut down while playing");

        // A reservation nobody uses keeps the server from shutting down
        // until it expires; then, allocated and empty for 1.5 s: Shutdown,
        // and the server stops on its own.
        sdk.allocate(1);
        wait_for("Shutdown", 20 * SEC, || sdk.called(&Call::Shutdown)).await;
        assert_eq!(
            counter_diffs(&sdk, "rooms"),
            [1, -1, -1, -1],
            "the unused reservation was not given back before Shutdown"
        );
        assert_eq!(sdk.count("rooms"), 0);
        tokio::time::timeout(10 * SEC, &mut serving)
            .await
            .expect("the server did not stop after Shutdown")
            .unwrap();
        assert_eq!(stop.failure(), None);
    }

    /// `--cpu-budget`: the Counters' capacities follow the capacity the
    /// server measures. With a budget of 0 % (the library's; the CLI takes
    /// 1 to 100), once a room has been measured the server takes no room
    /// beyond those open: `rooms` capacity falls to its count (never below
    /// it, or Agones would cut the count), `players` to that × seats, a
    /// join that would open a room is refused, and the open room still
    /// takes players. A room an allocation reserved before the capacity
    /// fell is still opened.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn measured_capacity_becomes_the_counters_capacity() {
        let sdk = FakeSdk::start("bitroom-fleet-c4p4c", &["rooms", "players"]).await;
        let mut config = fleet_server(&sdk, Stalling::new(), 60 * SEC, None);
        config.cpu_budget = Some(0);
        let server = Server::bind(config).unwrap();
        let addr = server.local_addr();
        let pin = CertPin::Sha256(server.fingerprint());
        let stop = server.shutdown_handle();
        let serving = tokio::spawn(server.run());
        let client = || ConnectOptions::new(Stalling::new(), pin);

        wait_for("Ready", 30 * SEC, || sdk.called(&Call::Ready)).await;
        assert_eq!(
            sdk.state().counters["rooms"],
            (0, 4),
            "--max-rooms until measured"
        );
        // Two rooms allocated before anything was measured; the first
        // player opens one of them.
        sdk.allocate(2);
        let a = connect(addr, "r1", client()).await.expect("join r1");
        wait_for("rooms (2, 2) and players (1, 16)", 15 * SEC, || {
            let s = sdk.state();
            s.counters["rooms"] == (2, 2) && s.counters["players"] == (1, 16)
        })
        .await;
        // The other reserved room opens past the measured capacity (the
        // one room open then); after it, no room more.
        let b = connect(addr, "r2", client())
            .await
            .expect("the reserved room opens");
        match connect(addr, "r3", client()).await {
            Err(ConnectError::Refused(KickReason::TooManyRooms)) => {}
            other => panic!("a room past the measured capacity: {other:?}"),
        }
        let c = connect(addr, "r1", client())
            .await
            .expect("an open room still takes players");
        assert_eq!(c.slot(), Some(1));
        wait_for("rooms (2, 2) and players (3, 16)", 15 * SEC, || {
            let s = sdk.state();
            s.counters["rooms"] == (2, 2) && s.counters["players"] == (3, 16)
        })
        .await;
        drop((a, b, c));
        stop.shutdown();
        tokio::time::timeout(10 * SEC, serving)
            .await
            .expect("the server did not stop")
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_sidecar_fails_the_server_and_sigterm_says_shutdown() {
        let sdk = FakeSdk::start("gs-2", &[]).await;
        let mut config = ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            Stalling::new(),
            Identity::self_signed().unwrap(),
        );
        config.agones = Some(AgonesConfig {
            port: Some(sdk.addr.port()),
            server_id: Some("eu-west-1/a b".into()),
            ..AgonesConfig::default()
        });
        let server = Server::bind(config).unwrap();
        let stop = server.shutdown_handle();
        let serving = tokio::spawn(server.run());
        wait_for("Ready", 30 * SEC, || sdk.called(&Call::Ready)).await;
        {
            let s = sdk.state();
            assert!(s.calls.contains(&Call::SetAnnotation(
                "bitroom-server-id".into(),
                "eu-west-1/a b".into()
            )));
            assert!(
                !s.calls.iter().any(|c| matches!(c, Call::SetLabel(..))),
                "an id that is not a label value was set as a label"
            );
        }
        // Without declared Counters the server runs, health only.
        let p = sdk.health_pings();
        wait_for("health pings", 10 * SEC, || sdk.health_pings() >= p + 2).await;
        // SIGTERM's path: the server stops and tells Agones.
        stop.shutdown();
        tokio::time::timeout(10 * SEC, serving)
            .await
            .expect("the server did not stop")
            .unwrap();
        assert!(sdk.called(&Call::Shutdown));
        assert_eq!(stop.failure(), None);

        // Nobody listening: the server fails instead of serving unseen.
        drop(sdk);
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut config = ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            Stalling::new(),
            Identity::self_signed().unwrap(),
        );
        config.agones = Some(AgonesConfig {
            port: Some(port),
            connect_timeout: 2 * SEC,
            ..AgonesConfig::default()
        });
        let server = Server::bind(config).unwrap();
        let stop = server.shutdown_handle();
        tokio::time::timeout(30 * SEC, server.run())
            .await
            .expect("the server kept running without its sidecar");
        let why = stop.failure().expect("no failure reported");
        assert!(why.contains("cannot reach the sdk sidecar"), "{why}");
    }

    /// The protos the fake sidecar is generated from are the ones of the
    /// `agones` crate that cargo resolved for this build.
    #[test]
    fn vendored_protos_are_the_agones_crates() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--offline"])
            .args(["--features", "bitroom-tests/agones"])
            // Only this build's platform: dependencies of other targets
            // (e.g. curve25519-dalek's fiat-crypto backend) are not
            // downloaded, and `--offline` would fail on them.
            .args(["--filter-platform", env!("BITROOM_TESTS_HOST")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let agones = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "agones")
            .expect("the agones package");
        let dir = std::path::Path::new(agones["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .join("proto");
        let ours = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/agones");
        for f in [
            "sdk/sdk.proto",
            "sdk/beta/beta.proto",
            "googleapis/google/api/annotations.proto",
            "googleapis/google/api/http.proto",
            "googleapis/google/api/client.proto",
            "googleapis/google/api/field_behavior.proto",
            "googleapis/google/api/resource.proto",
            "googleapis/google/api/launch_stage.proto",
            "grpc-gateway/protoc-gen-openapiv2/options/annotations.proto",
            "grpc-gateway/protoc-gen-openapiv2/options/openapiv2.proto",
        ] {
            let theirs = std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            let mine = std::fs::read(ours.join(f)).unwrap();
            assert!(
                theirs == mine,
                "{f} differs from agones {}: copy the crate's protos to tests/proto/agones",
                agones["version"]
            );
        }
    }
}
