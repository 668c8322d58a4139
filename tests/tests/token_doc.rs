//! `docs/connect-tokens.md` cannot go stale: its worked example (the
//! annotated hex dump and the text form) is what this build mints from the
//! same inputs, and its Python snippet mints the same token. The snippet
//! also mints from a key file `keygen` wrote, and this build verifies it.
//!
//! The Python parts need `python3` with the `cryptography` package (on the
//! project's machine image). Without them they are skipped with a message,
//! except when env `CI` is set: there a missing Python is a failure.

use bitroom_protocol::token::{
    mint, verify_text, Claims, Nonce, Role, Token, FIXED_LEN, SIGNATURE_LEN,
};
use bitroom_transport::keys::{
    load_verifying_key, write_key_pair, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE,
};
use ed25519_dalek::SigningKey;
use std::path::Path;
use std::process::Command;

/// RFC 8032 §7.1 test 1's secret key: public, so never use it for real.
const TEST_KEY: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/connect-tokens.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn test_key() -> SigningKey {
    let mut seed = [0u8; 32];
    for (i, b) in seed.iter_mut().enumerate() {
        *b = u8::from_str_radix(&TEST_KEY[2 * i..2 * i + 2], 16).expect("hex");
    }
    SigningKey::from_bytes(&seed)
}

/// The example's claims and nonce.
fn example() -> Token {
    let claims = Claims {
        room: "arena".into(),
        role: Role::Player,
        seat: Some(2),
        user: b"user-42".to_vec(),
        server_id: "eu-1".into(),
        issued_at: 1_700_000_000,
        expires_at: 1_700_000_120,
    };
    let mut nonce = [0u8; 16];
    for (i, b) in nonce.iter_mut().enumerate() {
        *b = i as u8;
    }
    mint(&test_key(), &claims, Nonce(nonce)).expect("valid claims")
}

/// The annotated dump the doc shows: offset, bytes (16 a line), field.
fn annotated(t: &Token) -> String {
    let bytes = t.to_bytes();
    let c = &t.claims;
    let (r, u, s) = (c.room.len(), c.user.len(), c.server_id.len());
    let fields: Vec<(usize, String)> = vec![
        (4, "magic \"BRTK\"".into()),
        (1, "version 1".into()),
        (1, "role 0: player".into()),
        (1, format!("seat {}", c.seat.expect("a seat"))),
        (1, "reserved".into()),
        (8, "key id: public key bytes 0..8".into()),
        (8, format!("issued_at {} (u64 LE)", c.issued_at)),
        (8, format!("expires_at {} (u64 LE)", c.expires_at)),
        (16, "nonce".into()),
        (1, format!("room length {r}")),
        (1, format!("user id length {u}")),
        (1, format!("server id length {s}")),
        (1, "reserved".into()),
        (r, format!("room {:?}", c.room)),
        (u, format!("user id {:?}", String::from_utf8_lossy(&c.user))),
        (s, format!("server id {:?}", c.server_id)),
        (
            SIGNATURE_LEN,
            "Ed25519 signature of bytes 0..".to_string() + &(FIXED_LEN + r + u + s).to_string(),
        ),
    ];
    let mut out = String::new();
    let mut at = 0;
    for (len, name) in fields {
        for (i, chunk) in bytes[at..at + len].chunks(16).enumerate() {
            let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            let label = if i == 0 { name.as_str() } else { "" };
            let line = format!("{:>4}  {:<47}  {label}", at + 16 * i, hex.join(" "));
            out.push_str(line.trim_end());
            out.push('\n');
        }
        at += len;
    }
    assert_eq!(at, bytes.len());
    out
}

/// The body of the first fenced block in `doc` that starts with `fence`.
fn block<'a>(doc: &'a str, fence: &str) -> &'a str {
    let start = doc
        .find(fence)
        .unwrap_or_else(|| panic!("no {fence} block in the doc"))
        + fence.len();
    let body = &doc[start..];
    let body = body.strip_prefix('\n').expect("fence ends its line");
    &body[..body.find("```").expect("closed block")]
}

#[test]
fn the_worked_example_is_what_this_build_mints() {
    let doc = doc();
    let t = example();
    let dump = annotated(&t);
    let shown = block(&doc, "```text worked-example");
    assert_eq!(
        shown, dump,
        "docs/connect-tokens.md's worked example is stale; this build mints:\n{dump}"
    );
    let text = t.to_text();
    assert_eq!(
        block(&doc, "```text worked-example-text").trim(),
        text,
        "the text form in the doc is stale"
    );
    // And it verifies with the test key's public key, at the right time.
    let public = test_key().verifying_key();
    assert!(verify_text(&[public], &text, 1_700_000_000, "eu-1").is_ok());
    let public_hex: String = public
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        doc.contains(&public_hex),
        "the doc names the public key {public_hex}"
    );
}

/// `python3` with `cryptography`, or `None` after saying why not (a
/// failure when env `CI` is set).
fn python() -> Option<Command> {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import cryptography.hazmat.primitives.asymmetric.ed25519",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(Command::new("python3"));
    }
    let msg = "python3 with the `cryptography` package is not available";
    assert!(
        std::env::var_os("CI").is_none(),
        "{msg} (required when CI is set)"
    );
    eprintln!("SKIPPED: {msg}: the doc's Python snippet was not run");
    None
}

fn run_python(mut py: Command, code: &str, args: &[&str]) -> String {
    let out = py
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

#[test]
fn the_python_snippet_mints_the_same_token() {
    let Some(py) = python() else { return };
    let doc = doc();
    let snippet = block(&doc, "```python");
    assert_eq!(run_python(py, snippet, &[]), example().to_text());
}

#[test]
fn the_python_snippet_mints_with_a_keygen_key_file_and_we_verify_it() {
    let Some(py) = python() else { return };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("token-python");
    let _ = std::fs::remove_dir_all(&dir);
    write_key_pair(&dir, &SigningKey::from_bytes(&[7; 32])).expect("keys");
    let private = dir.join(PRIVATE_KEY_FILE);
    let public = load_verifying_key(&dir.join(PUBLIC_KEY_FILE)).expect("public key");
    // The doc's mint() with a key loaded from our PEM file.
    let code = format!(
        "{}\n\
         import sys, time\n\
         from cryptography.hazmat.primitives.serialization import load_pem_private_key\n\
         key = load_pem_private_key(open(sys.argv[1], 'rb').read(), password=None)\n\
         print(mint(key, 'lobby', user=b'py', role='spectator', ttl=60))\n",
        block(&doc(), "```python")
    );
    let out = run_python(py, &code, &[private.to_str().expect("utf-8")]);
    // The snippet's own example prints first.
    let text = out.lines().last().expect("a token");
    let now = bitroom_transport::keys::unix_now();
    let v = verify_text(&[public], text, now, "").expect("python's token verifies");
    assert_eq!(v.claims().room, "lobby");
    assert_eq!(v.claims().role, Role::Spectator);
    assert_eq!(v.claims().user, b"py");
    let _ = std::fs::remove_dir_all(&dir);
}
