//! Scenes by name or file: a built-in scene ([`SCENE_NAMES`]) or a JSON
//! scene file, read with a size limit.

use bitroom_sim::scene::{build_scene, parse_scene, Scene, SCENE_NAMES};
use bitroom_sim::World;

/// Largest scene file read.
const MAX_SCENE_FILE: u64 = 16 << 20;

/// Loads a scene by name or from a JSON file, with its per-step function
/// when it has one (file scenes have none).
///
/// # Errors
/// A one-line message naming the problem (unknown name, unreadable or
/// invalid file).
pub fn load_sim_scene(spec: &str) -> Result<Scene, String> {
    if let Some(scene) = build_scene(spec) {
        return Ok(scene);
    }
    let path = std::path::Path::new(spec);
    if !path.exists() {
        return Err(format!(
            "unknown scene {spec:?}: not a built-in name ({}) and no such file",
            SCENE_NAMES.join(", ")
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("{spec}: {e}"))?;
    if meta.len() > MAX_SCENE_FILE {
        return Err(format!(
            "{spec}: scene file is {} bytes, the limit is {MAX_SCENE_FILE}",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{spec}: {e}"))?;
    let world = parse_scene(&text).map_err(|e| format!("{spec}: {e}"))?;
    Ok(Scene {
        world,
        step_fn: None,
    })
}

/// Loads a scene's world by name or from a JSON file.
///
/// # Errors
/// As [`load_sim_scene`].
pub fn load_scene(spec: &str) -> Result<World, String> {
    load_sim_scene(spec).map(|s| s.world)
}
