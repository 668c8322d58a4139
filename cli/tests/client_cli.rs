//! The `bitroom-client` binary: command-line errors and a run with no
//! server.

use std::process::Command;

mod common;
use common::assert_bad_input;

fn client() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bitroom-client"))
}

#[test]
fn bad_server_address_is_a_one_line_error() {
    let out = client()
        .args(["bots", "--server", "no port here", "--insecure"])
        .output()
        .expect("run");
    assert_bad_input(&out, "--server \"no port here\"");
}

#[test]
fn trust_must_be_explicit() {
    let out = client()
        .args(["bots", "--server", "127.0.0.1:4433"])
        .output()
        .expect("run");
    assert_bad_input(&out, "--cert FILE, --cert-sha256 HEX or --insecure");
    let out = client()
        .args([
            "bots",
            "--server",
            "127.0.0.1:4433",
            "--cert-sha256",
            "abcd",
        ])
        .output()
        .expect("run");
    assert_bad_input(&out, "64 hex digits");
    let out = client()
        .args([
            "bots",
            "--server",
            "127.0.0.1:4433",
            "--cert",
            "/nonexistent.der",
        ])
        .output()
        .expect("run");
    assert_bad_input(&out, "/nonexistent.der");
}

#[test]
fn unknown_scene_is_a_one_line_error() {
    let out = client()
        .args([
            "bots",
            "--server",
            "127.0.0.1:4433",
            "--insecure",
            "--scene",
            "atlantis",
        ])
        .output()
        .expect("run");
    assert_bad_input(&out, "unknown scene");
}

#[test]
fn bad_conditioner_values_are_refused() {
    let out = client()
        .args([
            "bots",
            "--server",
            "127.0.0.1:4433",
            "--insecure",
            "--sim-loss",
            "150%",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("between 0% and 100%"));
}

/// Bots that never reach a server fail the run (exit 1) and say so.
#[test]
fn bots_without_a_server_fail() {
    // A bound but silent UDP port: the QUIC handshake gets no answer.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    let addr = silent.local_addr().expect("addr").to_string();
    let out = client()
        .args([
            "bots",
            "--server",
            &addr,
            "--insecure",
            "--count",
            "2",
            "--duration",
            "1s",
        ])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("never connected"), "{stdout}");
    assert!(stdout.contains("failed 2"), "{stdout}");
}
