//! Desync report files: both states, their diff, safe file names.

use bitroom_server::{write_desync_report, DesyncContext};
use bitroom_sim::game::sandbox::{Sandbox, SandboxConfig};
use bitroom_sim::game::{Game, InputSet};
use bitroom_sim::{fx, Scalar, Vec2};

fn rules(loose: u32) -> Sandbox {
    Sandbox::new(SandboxConfig {
        loose_bodies: loose,
    })
}

#[test]
fn desync_reports_hold_both_states_and_their_diff() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("desync-reports");
    let _ = std::fs::remove_dir_all(&dir);
    let mut game = Game::new(rules(10), 2);
    game.step(&InputSet::join(2, 0));
    for _ in 0..20 {
        game.step(&InputSet::default());
    }
    let server = game.snapshot();
    let body = game.world().bodies().nth(8).expect("a body");
    let xf = game.world().transform(body).expect("live");
    game.world_mut()
        .set_transform(body, xf.p + Vec2::new(fx(0), Scalar::from_bits(1)), xf.q)
        .expect("in bounds");
    let client = game.snapshot();
    let ctx = DesyncContext {
        room: "../etc/passwd room".into(),
        client: "slot 1 (alice)".into(),
        build: "0.1.0".into(),
        tick: 21,
        server_hash: server.state_hash(),
        client_hash: client.state_hash(),
    };
    // Clients send their state packed.
    let path =
        write_desync_report(&dir, &ctx, Some(&server), &client.to_packed()).expect("written");
    assert_eq!(path.parent(), Some(dir.as_path()));
    let name = path.file_name().and_then(|n| n.to_str()).expect("name");
    assert_eq!(name, "desync-___etc_passwd_room-t21-slot_1__alice_.json");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    assert_eq!(v["tick"], 21);
    assert_eq!(v["client"], "slot 1 (alice)");
    assert_eq!(v["diff"]["bodies"][0]["index"], body.index);
    assert_eq!(v["diff"]["bodies"][0]["fields"][0], "position");
    assert_eq!(v["client_state"]["decodes"], true);
    let hex = v["server_state"]["hex"].as_str().expect("hex");
    assert_eq!(hex.len(), server.to_bytes().len() * 2);
    // The client's hex is its canonical bytes, comparable with the server's.
    assert_eq!(v["client_state"]["bytes"], client.to_packed().len());
    assert_eq!(v["client_state"]["hex_form"], "canonical");
    let client_hex = v["client_state"]["hex"].as_str().expect("hex");
    assert_eq!(client_hex.len(), client.to_bytes().len() * 2);

    // Same tick again: a new file; garbage from the client: no diff.
    let again = write_desync_report(&dir, &ctx, Some(&server), b"garbage").expect("written");
    assert_ne!(again, path);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&again).expect("read")).expect("json");
    assert_eq!(v["client_state"]["decodes"], false);
    assert_eq!(v["client_state"]["hex_form"], "as received");
    assert!(v["diff"].is_null());
    let none = write_desync_report::<Sandbox>(&dir, &ctx, None, &client.to_bytes()).expect("ok");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&none).expect("read")).expect("json");
    assert!(v["server_state"].is_null() && v["diff"].is_null());
}
