//! The sandbox game as the tools host it: its rules for a scene (`arena`,
//! `arena:N`, a built-in scene or a scene file; server and bots build them
//! the same way, so their fingerprints match), and for re-simulating a
//! recording.

use crate::scene::load_scene;
use bitroom_protocol::replay::{Header, ResimError};
use bitroom_sim::game::sandbox::{Sandbox, Strategy};
use bitroom_sim::game::GameSnapshot;
use bitroom_sim::World;

pub use bitroom_sim::game::sandbox::{ARENA, MAX_ARENA_BODIES};

/// The sandbox's name in replay headers ([`Header::rules`]).
pub const SANDBOX_RULES: &str = "sandbox";

/// The bots of the tools that play without a network (`sim --synctest`,
/// `replay record`): seat `i` plays the strategy `i % 3` of these.
pub const BOT_STRATEGIES: [Strategy; 3] = [Strategy::Random, Strategy::Chaser, Strategy::Circle];

/// The sandbox rules on a loaded scene (the default arena keeps its own
/// fingerprint).
pub fn rules_for(scene: &str, world: World) -> Sandbox {
    Sandbox::for_world(scene, world)
}

/// The sandbox rules for a scene: `arena` (the default arena, 200 loose
/// bodies), `arena:N` (N loose bodies), a built-in scene name, or a scene
/// file ([`Sandbox::for_scene`], with the scene read by [`load_scene`]).
///
/// # Errors
/// As [`load_scene`], or a bad `arena:N`.
pub fn rules_for_scene(spec: &str) -> Result<Sandbox, String> {
    Sandbox::for_scene(spec, |spec| {
        load_scene(spec).map_err(|e| {
            if e.starts_with("unknown scene") {
                format!("{e} (rooms also take {ARENA} and {ARENA}:N)")
            } else {
                e
            }
        })
    })
}

/// The rules to re-simulate a sandbox recording with: no scene file
/// needed (see [`Sandbox::for_replay`]).
///
/// # Errors
/// [`ResimError::Rules`] for a recording of another game.
pub fn replay_rules(
    header: &Header,
    initial: &GameSnapshot<Sandbox>,
) -> Result<Sandbox, ResimError> {
    check_recorded_game(header)?;
    Ok(Sandbox::replaying(initial, header.rules_fingerprint))
}

/// Whether a recording is of the sandbox (the one game these tools know).
///
/// # Errors
/// [`ResimError::Rules`] for a recording of another game.
pub fn check_recorded_game(header: &Header) -> Result<(), ResimError> {
    if header.rules != SANDBOX_RULES {
        return Err(ResimError::Rules {
            found: header.rules.clone(),
            known: SANDBOX_RULES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::Rules;

    #[test]
    fn arena_and_named_scenes_have_distinct_fingerprints() {
        let arena = rules_for_scene(ARENA).unwrap();
        assert_eq!(arena.fingerprint(), Sandbox::default().fingerprint());
        let pyramid = rules_for_scene("pyramid").unwrap();
        assert_ne!(arena.fingerprint(), pyramid.fingerprint());
        assert_eq!(
            pyramid.fingerprint(),
            rules_for_scene("pyramid").unwrap().fingerprint()
        );
    }

    #[test]
    fn arena_size_is_part_of_the_fingerprint() {
        let a = rules_for_scene("arena:1000").unwrap();
        assert_eq!(a.build_world().body_count(), 1006, "1000 loose + 6 fixed");
        assert_ne!(
            a.fingerprint(),
            rules_for_scene(ARENA).unwrap().fingerprint()
        );
        assert_eq!(
            rules_for_scene("arena:200").unwrap().fingerprint(),
            rules_for_scene(ARENA).unwrap().fingerprint()
        );
        for bad in ["arena:", "arena:-1", "arena:lots", "arena:4001"] {
            assert!(
                rules_for_scene(bad).unwrap_err().contains("arena:N"),
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_scene_is_a_one_line_error() {
        let e = rules_for_scene("no-such-scene").unwrap_err();
        assert!(e.contains("unknown scene"), "{e}");
        assert!(!e.contains('\n'));
    }
}
