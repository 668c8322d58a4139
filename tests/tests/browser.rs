//! The page in a real browser: headless Chromium, driven through
//! chromedriver (WebDriver), joins a room that three native bots play, as
//! a player and as a spectator, for 20 s each (one after the other). Each page must
//! end with 0 desyncs, at least 95 % of the ticks it confirmed verified
//! against the server's hashes, and no page errors (uncaught exceptions,
//! rejected promises, `console.error`); a screenshot of the player's page
//! is saved under the target folder (`browser-artefacts/`).
//!
//! The server requires connect tokens: the bots and the player's page carry
//! one minted by the test (the player's in its link, `&token=`), the
//! spectator's page asks the server's `/api/token` (as on `demo --web`).
//!
//! Needs `chromium` and `chromedriver` on the PATH (Debian: `apt-get install
//! chromium chromium-driver`) and the built page in web/dist (committed;
//! `web/build.sh`). Without Chromium the test says it was skipped and
//! passes, unless env `CI` is set: then a skip is a failure.
//!
//! The transport is the WebSocket path by default; set
//! `BITROOM_BROWSER_TRANSPORT=webtransport` to run the same test over
//! WebTransport (see docs/web.md for what headless Chromium needs there).

use bitroom_client::bots::{BotFleet, BotSpec};
use bitroom_protocol::token::{Claims, Token};
use bitroom_protocol::RoomConfig;
use bitroom_server::{TokenMint, WebConfig};
use bitroom_sim::game::sandbox::{Sandbox, Strategy};
use bitroom_tests::loopback::TestServer;
use bitroom_tests::witness::{claims, spectator_claims, test_key, token, token_config};
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROOM: &str = "browser";

/// A token's text form (what a link carries), minted by the tests' key.
fn token_text(claims: &Claims) -> String {
    Token::decode(&token(&test_key(), claims))
        .expect("a token just minted")
        .to_text()
}
/// The scene (`BITROOM_BROWSER_SCENE` to change): the default arena (210
/// bodies). Until the client session coalesced its rollbacks, a
/// predicting page on this loaded 2-core machine spiralled in it (its
/// rollbacks at the prediction window's limit, resyncs) and the test
/// played `arena:60` instead (docs/web.md, "A page short of CPU").
const SCENE: &str = "arena";
const PLAY_FOR: Duration = Duration::from_secs(20);

fn dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist")
}

fn on_path(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `None`: skipped (printed), or a panic under CI.
fn browser_tools() -> Option<String> {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| on_path(b));
    let driver = on_path("chromedriver");
    match (browser, driver) {
        (Some(b), true) => Some(b.to_string()),
        _ => {
            let msg = "browser test SKIPPED: chromium and chromedriver are not installed \
                       (apt-get install chromium chromium-driver)";
            assert!(std::env::var_os("CI").is_none(), "{msg}, and CI is set");
            eprintln!("{msg}");
            None
        }
    }
}

/// A chromedriver process on a free loopback port, in a process group of
/// its own, killed with every browser it started when dropped: a failing
/// test (a panic skips closing the pages) must not leave Chromium pages
/// running and eating the CPU of the tests after it.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver() -> Driver {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut cmd = Command::new("chromedriver");
    cmd.arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd.spawn().expect("start chromedriver");
    Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

async fn open_browser(driver: &Driver, browser: &str) -> Client {
    let binary = Command::new("which")
        .arg(browser)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": binary,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--window-size=1280,800",
                // Timers of a page not on screen are not throttled.
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
            ],
        }),
    );
    // chromedriver takes a moment to listen.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        match builder
            .capabilities(caps.clone())
            .connect(&driver.url)
            .await
        {
            Ok(c) => return c,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot open a browser session through chromedriver: {e}"),
        }
    }
}

async fn stats(page: &Client) -> Value {
    page.execute(
        "return window.bitroom ? window.bitroom.stats() : null;",
        vec![],
    )
    .await
    .expect("stats")
}

async fn errors(page: &Client) -> Value {
    page.execute("return window.__bitroomErrors || ['no error log'];", vec![])
        .await
        .expect("errors")
}

/// Opens `url`, waits for the session to play, lets it run `PLAY_FOR`,
/// and returns its last stats.
async fn watch_page(page: &Client, url: &str, who: &str) -> Value {
    page.goto(url).await.expect("open the page");
    let opened = Instant::now();
    // Generous: a loaded machine can take seconds to start a browser
    // (the time to the first frame is a figure, measured in the page).
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let s = stats(page).await;
        if s.get("confirmed_ticks")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            > 0.0
        {
            break;
        }
        let errs = errors(page).await;
        assert!(
            Instant::now() < deadline,
            "{who}: no confirmed tick after 40 s: stats {s}, errors {errs}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "{who}: playing {:.1} s after the page was opened",
        opened.elapsed().as_secs_f64()
    );
    let timing = page
        .execute(
            "const n = performance.getEntriesByType('navigation')[0]; \
             return { dom: n && n.domContentLoadedEventEnd, load: n && n.loadEventEnd, \
             res: performance.getEntriesByType('resource').map(r => [r.name, Math.round(r.startTime), Math.round(r.responseEnd)]) };",
            vec![],
        )
        .await
        .expect("timing");
    eprintln!("{who}: timing {timing}");
    tokio::time::sleep(PLAY_FOR).await;
    stats(page).await
}

fn check(who: &str, s: &Value, errs: &Value) {
    let f = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    assert_eq!(
        errs.as_array().map(Vec::len),
        Some(0),
        "{who}: page errors {errs}"
    );
    assert_eq!(f("desyncs"), 0.0, "{who}: desyncs: {s}");
    let confirmed = f("confirmed_ticks");
    // 20 s at 60 Hz is 1200 ticks: most of them must have been confirmed.
    assert!(
        confirmed >= 900.0,
        "{who}: only {confirmed} ticks confirmed in 20 s: {s}"
    );
    let verified = f("verified_ticks");
    assert!(
        verified >= 0.95 * confirmed,
        "{who}: {verified} of {confirmed} confirmed ticks verified: {s}"
    );
    assert_eq!(s["closed"], Value::Null, "{who}: the session closed: {s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_plays_and_one_watches_with_three_bots() {
    let Some(browser) = browser_tools() else {
        return;
    };
    // RUST_LOG=info shows the server's side (joins, kicks).
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    assert!(
        dist().join("bitroom_web_bg.wasm").is_file(),
        "web/dist has no wasm: run web/build.sh"
    );
    let transport =
        std::env::var("BITROOM_BROWSER_TRANSPORT").unwrap_or_else(|_| "websocket".into());
    let scene = std::env::var("BITROOM_BROWSER_SCENE").unwrap_or_else(|_| SCENE.into());
    let rules = Sandbox::for_scene(&scene, |s| Err(format!("{s}: not an arena scene")))
        .expect("an arena scene");
    let mut server = TestServer::start(rules.clone(), |c| {
        c.room = RoomConfig::default();
        c.web = Some(WebConfig {
            bind: "127.0.0.1:0".parse().expect("address literal"),
            assets: dist(),
            game: json!({ "scene": scene }),
            scene_json: None,
            // The spectator's page asks the server for its token, as on
            // `demo --web`; the player's comes in its link from "the
            // backend" (this test), as on a production server.
            mint: Some(TokenMint(Arc::new(|room: &str, spectator: bool| {
                let claims = if spectator {
                    spectator_claims(room, "page-spectator")
                } else {
                    claims(room, "page-player")
                };
                Ok(token_text(&claims))
            }))),
        });
        c.tokens = Some(token_config());
    });
    let web = server.web.expect("web address");
    let mut fleet = BotFleet::new(server.addr, rules, server.pin);
    for (i, strategy) in [Strategy::Random, Strategy::Chaser, Strategy::Circle]
        .into_iter()
        .enumerate()
    {
        let name = format!("bot{i}");
        fleet.spawn(BotSpec {
            token: Some(token(&test_key(), &claims(ROOM, &name))),
            name,
            room: ROOM.into(),
            strategy,
            seed: i as u64 + 1,
            // Following the confirmed game only (still hash-checked): the
            // browser is under test, and the machine has two cores.
            predict: false,
            conditioner: None,
            load: false,
        });
    }

    let driver = start_driver();
    let player = open_browser(&driver, &browser).await;
    let spectator = open_browser(&driver, &browser).await;
    // More query parameters for measurements (e.g. `&latency=60`: the
    // page's own link delay each way, docs/web.md).
    let extra = std::env::var("BITROOM_BROWSER_QUERY").unwrap_or_default();
    let base = format!("http://{web}/?room={ROOM}&transport={transport}{extra}");
    // One page after the other: two browsers at once on a 2-core machine
    // measure the machine more than the page.
    let player_token = token_text(&claims(ROOM, "browser"));
    let p = watch_page(
        &player,
        &format!("{base}&name=browser&token={player_token}"),
        "player",
    )
    .await;
    let s = watch_page(&spectator, &format!("{base}&spectate=1"), "spectator").await;
    let shot = player.screenshot().await.expect("screenshot");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-artefacts");
    std::fs::create_dir_all(&dir).expect("artefact folder");
    let path = dir.join(format!("player-{transport}.png"));
    std::fs::write(&path, &shot).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
    let (pe, se) = (errors(&player).await, errors(&spectator).await);
    let _ = player.close().await;
    let _ = spectator.close().await;
    drop(driver);
    let report = fleet.finish().await;
    server.shutdown().await;

    eprintln!("player: {p}\nspectator: {s}");
    check("player", &p, &pe);
    check("spectator", &s, &se);
    assert_eq!(p["transport"], json!(transport), "player transport: {p}");
    assert!(
        p["slot"].as_f64().is_some_and(|x| x >= 0.0),
        "player has no seat: {p}"
    );
    assert_eq!(s["slot"], json!(-1), "spectator has a seat: {s}");
    assert_eq!(report.desyncs(), 0, "bots desynced:\n{}", report.table());
    assert_eq!(report.failures(), 0, "bots failed:\n{}", report.table());
}
