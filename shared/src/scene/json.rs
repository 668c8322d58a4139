//! The JSON scene format (being written).

use crate::dynamics::World;

/// Why a scene could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SceneError {
    /// Placeholder until the parser lands.
    #[error("{0}")]
    Invalid(String),
}

/// Parses a JSON scene into a world.
///
/// # Errors
/// Any problem with the document, naming the field and body.
pub fn parse_scene(_text: &str) -> Result<World, SceneError> {
    Err(SceneError::Invalid("json scenes not implemented yet".into()))
}
