//! The rules the page plays: the sandbox on the server's scene, built the
//! way the server builds them ([`Sandbox::for_scene`]), so the fingerprint
//! in the hello matches. A scene file's JSON comes from the server
//! (`/api/scene`), since the browser has no file system.

use bitroom_sim::game::sandbox::Sandbox;
use bitroom_sim::scene::{build_scene, parse_scene};

/// The sandbox rules for the server's scene spec (`arena`, `arena:N`, a
/// built-in scene name, or a scene file's path with its JSON text).
///
/// # Errors
/// A bad `arena:N`, an unknown name without JSON, or JSON that does not
/// parse (the message names the problem).
pub fn rules_for(spec: &str, scene_json: Option<&str>) -> Result<Sandbox, String> {
    Sandbox::for_scene(spec, |spec| {
        if let Some(scene) = build_scene(spec) {
            return Ok(scene.world);
        }
        match scene_json {
            Some(text) => parse_scene(text).map_err(|e| format!("scene {spec:?}: {e}")),
            None => Err(format!(
                "scene {spec:?} is not built in, and the server sent no scene file"
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::sandbox::SandboxConfig;
    use bitroom_sim::game::Rules;

    #[test]
    fn fingerprints_match_the_servers_rules() {
        assert_eq!(
            rules_for("arena", None).unwrap().fingerprint(),
            Sandbox::default().fingerprint()
        );
        assert_eq!(
            rules_for("arena:1000", None).unwrap().fingerprint(),
            Sandbox::new(SandboxConfig { loose_bodies: 1000 }).fingerprint()
        );
        let pyramid = rules_for("pyramid", None).unwrap();
        let world = build_scene("pyramid").unwrap().world;
        assert_eq!(
            pyramid.fingerprint(),
            Sandbox::for_world("pyramid", world).fingerprint()
        );
    }

    #[test]
    fn scene_files_come_as_json() {
        let json = include_str!("../../scenes/stack.json");
        let rules = rules_for("scenes/floor.json", Some(json));
        assert!(rules.is_ok(), "{rules:?}");
        let missing = rules_for("scenes/floor.json", None).unwrap_err();
        assert!(missing.contains("no scene file"), "{missing}");
        let bad = rules_for("x.json", Some("{")).unwrap_err();
        assert!(bad.contains("x.json"), "{bad}");
        assert!(rules_for("arena:lots", None)
            .unwrap_err()
            .contains("arena:N"));
    }
}
