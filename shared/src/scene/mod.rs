//! Scenes: the built-in named scenes and the JSON scene format.
//!
//! Tests, benchmarks and the CLI all build scenes through these functions.

pub mod builders;
pub mod human;
pub mod joint_scenes;
pub mod json;

pub use builders::{build_named, build_scene, Scene, SCENE_NAMES};
pub use json::{parse_scene, SceneError};
