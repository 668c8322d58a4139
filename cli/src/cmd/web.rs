//! `--web`: what `serve` and `demo` tell the server's web side
//! ([`bitroom_server::WebConfig`]): the page's folder and the scene the
//! page must build its rules from.

use super::serve::parse_addr;
use bitroom_server::WebConfig;
use bitroom_sim::game::sandbox::ARENA;
use bitroom_sim::scene::build_scene;
use std::path::PathBuf;

/// The page's folder in this repository (`web/dist`, built by
/// `web/build.sh` and committed).
pub const DEFAULT_ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../web/dist");

/// The web side's configuration for `--web ADDR`, the scene spec the rooms
/// play (a scene file's JSON is sent to the page, which has no file
/// system) and the page's folder.
///
/// # Errors
/// A bad address, or a scene file that cannot be read.
pub fn web_config(addr: &str, scene: &str, assets: Option<PathBuf>) -> Result<WebConfig, String> {
    let bind = parse_addr("--web", addr)?;
    let is_file = scene != ARENA && !scene.starts_with("arena:") && build_scene(scene).is_none();
    let scene_json = if is_file {
        // Already loaded (and size-checked) by the rules: read it again as text.
        Some(std::fs::read_to_string(scene).map_err(|e| format!("{scene}: {e}"))?)
    } else {
        None
    };
    Ok(WebConfig {
        bind,
        assets: assets.unwrap_or_else(|| PathBuf::from(DEFAULT_ASSETS)),
        game: serde_json::json!({ "scene": scene }),
        scene_json,
        mint: None,
    })
}

/// The page's address for a room on the web listener.
pub fn room_url(addr: std::net::SocketAddr, room: &str) -> String {
    format!("http://{addr}/?room={room}")
}
