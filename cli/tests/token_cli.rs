//! `bitroom-server keygen` and `token` end to end: the files, the printed
//! token (verified with the public key file), and the refusals.

use bitroom_protocol::token::{verify_text, Role};
use bitroom_transport::keys::{load_verifying_key, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE};
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bitroom-server"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("token-cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn keygen_then_token_prints_a_token_the_public_key_verifies() {
    let d = dir("mint");
    let out = d.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&["keygen", "--out", out]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("key id "), "{stdout}");
    let private = d.join(PRIVATE_KEY_FILE);
    let public = load_verifying_key(&d.join(PUBLIC_KEY_FILE)).expect("public key");
    let key = private.to_str().expect("utf-8");
    let (code, stdout, stderr) = run(&[
        "token",
        "--key",
        key,
        "--room",
        "arena",
        "--role",
        "spectator",
        "--user",
        "u-7",
        "--ttl",
        "2m",
        "--server-id",
        "eu-1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("spectator token for room \"arena\""),
        "{stderr}"
    );
    let now = bitroom_transport::keys::unix_now();
    let v = verify_text(&[public], stdout.trim(), now, "eu-1").expect("verifies");
    let c = v.claims();
    assert_eq!(
        (c.room.as_str(), c.role, c.seat),
        ("arena", Role::Spectator, None)
    );
    assert_eq!(c.user, b"u-7");
    assert_eq!(c.expires_at - c.issued_at, 120);
    // Two tokens for the same claims differ (fresh nonces).
    let (_, again, _) = run(&["token", "--key", key, "--room", "arena"]);
    let (_, third, _) = run(&["token", "--key", key, "--room", "arena"]);
    assert_ne!(again, third);
    // A second keygen into the same place refuses.
    let (code, _, stderr) = run(&["keygen", "--out", out]);
    assert_eq!(code, 2);
    assert!(stderr.contains("already exists"), "{stderr}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn token_refuses_bad_arguments_and_the_public_key() {
    let d = dir("refuse");
    let out = d.to_str().expect("utf-8");
    assert_eq!(run(&["keygen", "--out", out]).0, 0);
    let key = d.join(PRIVATE_KEY_FILE);
    let key = key.to_str().expect("utf-8");
    let public = d.join(PUBLIC_KEY_FILE);
    let cases: [(&[&str], &str); 5] = [
        (&["--key", key, "--room", "r", "--ttl", "10m"], "--ttl"),
        (
            &[
                "--key",
                key,
                "--room",
                "r",
                "--role",
                "spectator",
                "--seat",
                "1",
            ],
            "no seat",
        ),
        (
            &["--key", key, "--room", "r", "--seat", "40"],
            "seat 40 out of range",
        ),
        (&["--key", key, "--room", &"x".repeat(65)], "bad room name"),
        (
            &["--key", public.to_str().expect("utf-8"), "--room", "r"],
            "this is a public key",
        ),
    ];
    for (args, want) in cases {
        let mut argv = vec!["token"];
        argv.extend_from_slice(args);
        let (code, stdout, stderr) = run(&argv);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
