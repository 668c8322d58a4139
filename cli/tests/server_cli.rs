//! The `bitroom-server` binary: command-line errors, and a real `serve`
//! process (metrics endpoint, a client, SIGTERM).

use bitroom_client::{connect, ClientHandle, ConnectOptions, Disconnect, Event};
use bitroom_protocol::KickReason;
use bitroom_sim::game::sandbox::Sandbox;
use bitroom_transport::{parse_fingerprint, CertPin};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::assert_bad_input;

fn server() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bitroom-server"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bitroom-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn bad_bind_address_is_a_one_line_error() {
    let out = server()
        .args(["serve", "--bind", "not-an-address"])
        .output()
        .expect("run");
    assert_bad_input(&out, "--bind \"not-an-address\"");
    let out = server()
        .args(["serve", "--bind", "127.0.0.1:0", "--metrics", "nowhere"])
        .output()
        .expect("run");
    assert_bad_input(&out, "--metrics");
}

/// A build without the `agones` feature refuses `--agones` plainly (with
/// it, tests/tests/agones.rs runs the server against a fake sidecar).
#[cfg(not(feature = "agones"))]
#[test]
fn serve_agones_without_the_feature_is_a_one_line_error() {
    let dir = temp_dir("no-agones");
    let out = server()
        .args(["serve", "--bind", "127.0.0.1:0", "--agones", "--cert-dir"])
        .arg(&dir)
        .output()
        .expect("run");
    assert_bad_input(&out, "this build has no Agones support");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unbindable_address_is_a_one_line_error() {
    let dir = temp_dir("unbindable");
    // 192.0.2.1 (TEST-NET-1) is not an address of this machine.
    let out = server()
        .args(["serve", "--bind", "192.0.2.1:4433", "--cert-dir"])
        .arg(&dir)
        .output()
        .expect("run");
    assert_bad_input(&out, "cannot listen on 192.0.2.1:4433");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unreadable_certificate_is_a_one_line_error() {
    let dir = temp_dir("cert");
    let out = server()
        .args(["serve", "--bind", "127.0.0.1:0", "--cert"])
        .arg(dir.join("missing.pem"))
        .arg("--key")
        .arg(dir.join("missing.key"))
        .output()
        .expect("run");
    assert_bad_input(&out, "missing.pem");
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "hello").expect("write");
    let out = server()
        .args(["serve", "--bind", "127.0.0.1:0", "--cert"])
        .arg(&junk)
        .arg("--key")
        .arg(&junk)
        .output()
        .expect("run");
    assert_bad_input(&out, "not a PEM or DER certificate");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unknown_scene_is_a_one_line_error() {
    let out = server()
        .args(["serve", "--bind", "127.0.0.1:0", "--scene", "atlantis"])
        .output()
        .expect("run");
    assert_bad_input(&out, "unknown scene \"atlantis\"");
    let out = server()
        .args(["demo", "--scene", "atlantis"])
        .output()
        .expect("run");
    assert_bad_input(&out, "unknown scene");
}

#[test]
fn sim_profile_reports_every_stage_and_bench_the_step_times() {
    let out = server()
        .args([
            "sim",
            "--scene",
            "stack",
            "--steps",
            "20",
            "--profile",
            "--bench",
        ])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("profile stack: ms per stage over 19 steps"),
        "{text}"
    );
    for stage in [
        "prepare", "substeps", "finish", "pairs", "collide", "sleep", "step",
    ] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(stage))
            .unwrap_or_else(|| panic!("no {stage} line in {text}"));
        // min and median, both numbers.
        let numbers: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert_eq!(numbers.len(), 2, "{line}");
        assert!(numbers[0] >= 0.0 && numbers[0] <= numbers[1], "{line}");
    }
    assert!(text.contains("bench stack: steps 19 min"), "{text}");
}

/// `--threads` does not reach the sync test's game (its rooms step on
/// one thread), so asking for both is refused rather than ignored.
#[test]
fn sim_threads_with_synctest_is_refused() {
    let out = server()
        .args([
            "sim",
            "--scene",
            "stack",
            "--synctest",
            "2",
            "--threads",
            "2",
        ])
        .output()
        .expect("run");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--threads") && err.contains("--synctest"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing run: {out:?}");
}

/// Reads stdout lines until one starts with `prefix`; returns the rest.
fn line_after(lines: &mut impl Iterator<Item = String>, prefix: &str) -> String {
    for l in lines.by_ref() {
        if let Some(rest) = l.strip_prefix(prefix) {
            return rest.to_string();
        }
    }
    panic!("no line starting with {prefix:?}");
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("metrics connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("response");
    body
}

/// `serve` on a free loopback port with a development certificate in
/// `dir`, no status lines, and `extra` arguments; stdout piped.
fn spawn_serve(dir: &std::path::Path, extra: &[&str], stderr: Stdio) -> std::process::Child {
    server()
        .args(["serve", "--bind", "127.0.0.1:0", "--stats-every", "0s"])
        .args(extra)
        .arg("--cert-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn serve")
}

/// The pin in serve's `development certificate … sha256 HEX` line.
fn printed_pin(cert_line: &str) -> CertPin {
    let fp = cert_line.rsplit("sha256 ").next().expect("fingerprint");
    CertPin::Sha256(parse_fingerprint(fp).expect("fingerprint"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Joins `room` and waits until the client is in sync.
async fn join_synced(addr: &str, room: &str, pin: CertPin) -> ClientHandle<Sandbox> {
    let addr: std::net::SocketAddr = addr.parse().expect("address");
    let mut c = connect(addr, room, ConnectOptions::new(Sandbox::default(), pin))
        .await
        .expect("join");
    while let Some(e) = c.next_event().await {
        if matches!(e, Event::Synced { .. }) {
            break;
        }
    }
    c
}

/// `serve` as a process: it prints its address and fingerprint, serves
/// metrics, takes a client pinned by fingerprint, and on SIGTERM tells the
/// client and exits 0.
#[test]
fn serve_process_metrics_and_sigterm() {
    let dir = temp_dir("serve");
    let mut child = spawn_serve(&dir, &["--metrics", "127.0.0.1:0"], Stdio::null());
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let addr = line_after(&mut lines, "listening on ");
    let pin = printed_pin(&line_after(&mut lines, "development certificate "));
    let metrics = line_after(&mut lines, "metrics on http://");
    let metrics = metrics.trim_end_matches("/metrics").to_string();
    assert!(dir.join("bitroom-dev-cert.der").exists());
    // The file and the printed fingerprint agree.
    let from_file = CertPin::from_cert_file(&dir.join("bitroom-dev-cert.der")).expect("cert");
    assert_eq!(from_file, pin);

    let runtime = runtime();
    let mut client = runtime.block_on(async {
        let c = join_synced(&addr, "lobby", pin).await;
        // Let the room publish its counters.
        tokio::time::sleep(Duration::from_millis(600)).await;
        c
    });
    let text = http_get(&metrics, "/metrics");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    for name in [
        "bitroom_tick_duration_seconds_bucket",
        "bitroom_tick_lateness_seconds_bucket",
        "bitroom_rooms 1",
        "bitroom_clients 1",
        "bitroom_bytes_out_total",
        "bitroom_ticks_total",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    // The kernel's drop count of the server's socket (read from /proc):
    // nothing dropped with one client.
    if cfg!(target_os = "linux") {
        assert!(
            text.contains("bitroom_udp_receive_drops_total 0"),
            "udp drops missing from:\n{text}"
        );
    }
    assert!(http_get(&metrics, "/nope").starts_with("HTTP/1.1 404"));

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let end = runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match client.next_event().await {
                    Some(Event::Disconnected(d)) => return Some(d),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await
        .expect("disconnect event")
    });
    assert_eq!(end, Some(Disconnect::Kicked(KickReason::ServerShutdown)));
    let code = child.wait().expect("wait");
    assert_eq!(code.code(), Some(0));
    std::fs::remove_dir_all(&dir).ok();
}

/// Scheduling policy and real-time priority of every thread of `pid`
/// (fields 41 and 40 of `/proc/PID/task/TID/stat`; Linux).
fn thread_policies(pid: u32) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).expect("task dir") {
        let path = entry.expect("task").path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue; // the thread ended meanwhile
        };
        let (head, rest) = stat.rsplit_once(')').expect("stat");
        let name = head.split_once('(').map_or("", |(_, n)| n).to_string();
        // `rest` starts at field 3 (state).
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields[n - 3].parse::<u32>().expect("number");
        out.push((name, field(41), field(40)));
    }
    out
}

/// Kills the child if the test fails before it ends the child itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `serve --realtime`: either every thread of the server (workers, the
/// blocking pool a join uses) runs under SCHED_FIFO at the documented
/// priority and the tick timer one above, or, where the OS refuses, stderr
/// says why; either way the server serves a client.
#[test]
fn serve_realtime_puts_every_thread_under_fifo_or_says_why() {
    use bitroom_server::realtime::PRIORITY;
    let dir = temp_dir("realtime");
    let mut child = spawn_serve(&dir, &["--realtime"], Stdio::piped());
    let stdout = child.stdout.take().expect("stdout");
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let mut granted = false;
    let addr = loop {
        let l = lines.next().expect("serve printed its address");
        granted |= l == format!("real-time scheduling: SCHED_FIFO priority {PRIORITY}");
        if let Some(a) = l.strip_prefix("listening on ") {
            break a.to_string();
        }
    };
    let pin = printed_pin(&line_after(&mut lines, "development certificate "));
    let rt = runtime();
    let client = rt.block_on(join_synced(&addr, "rt", pin));
    if granted {
        let threads = thread_policies(child.0.id());
        // The main thread, the runtime's workers, the tick timer and the
        // blocking thread that packed the join snapshot, at least.
        assert!(threads.len() >= 4, "{threads:?}");
        assert!(
            threads.iter().any(|t| t.0 == "bitroom-ticker"),
            "{threads:?}"
        );
        for (name, policy, priority) in &threads {
            let want = if name == "bitroom-ticker" {
                PRIORITY + 1
            } else {
                PRIORITY
            };
            assert_eq!(
                (*policy, *priority),
                (1, u32::from(want)),
                "thread {name}: {threads:?}"
            );
        }
    }
    drop(client);
    let status = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let code = child.0.wait().expect("wait");
    assert_eq!(code.code(), Some(0));
    if !granted {
        let mut stderr = String::new();
        let mut pipe = child.0.stderr.take().expect("stderr");
        pipe.read_to_string(&mut stderr).expect("stderr");
        assert!(
            stderr.contains("warning: --realtime refused (")
                && stderr.contains("; running at normal priority"),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
