//! Built-in named scenes (being written).

use crate::dynamics::World;

/// Names of the built-in scenes.
pub const SCENE_NAMES: &[&str] = &[];

/// Builds a named scene, or `None` for an unknown name.
pub fn build_named(_name: &str) -> Option<World> {
    None
}
