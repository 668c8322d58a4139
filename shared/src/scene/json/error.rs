//! Errors of the scene format and where in a scene they are.

use super::*;

/// Where in a scene a problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Location {
    /// The top level of the document.
    #[default]
    Scene,
    /// The `world` settings object.
    World,
    /// A body, by index in `bodies` (and its `id`, when it has one).
    Body {
        /// Index in the `bodies` array.
        index: usize,
        /// The body's `id`, if it has one.
        id: Option<String>,
    },
    /// A shape of a body.
    Shape {
        /// Index of the body in the `bodies` array.
        body: usize,
        /// The body's `id`, if it has one.
        id: Option<String>,
        /// Index of the shape in the body's `shapes` array.
        index: usize,
    },
    /// A joint, by index in `joints` (and its `id`, when it has one).
    Joint {
        /// Index in the `joints` array.
        index: usize,
        /// The joint's `id`, if it has one.
        id: Option<String>,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Scene => f.write_str("scene"),
            Location::World => f.write_str("world"),
            Location::Body { index, id } => {
                write!(f, "body {index}")?;
                if let Some(id) = id {
                    write!(f, " ({id:?})")?;
                }
                Ok(())
            }
            Location::Shape { body, id, index } => {
                write!(f, "body {body}")?;
                if let Some(id) = id {
                    write!(f, " ({id:?})")?;
                }
                write!(f, ", shape {index}")
            }
            Location::Joint { index, id } => {
                write!(f, "joint {index}")?;
                if let Some(id) = id {
                    write!(f, " ({id:?})")?;
                }
                Ok(())
            }
        }
    }
}

impl Location {
    /// `"body 3 (\"crate\"), shape 0: "`, or nothing at the top level.
    pub(super) fn prefix(&self) -> String {
        match self {
            Location::Scene => String::new(),
            other => format!("{other}: "),
        }
    }
}

/// Why a scene could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SceneError {
    /// The document is empty or only whitespace.
    #[error("scene is empty")]
    Empty,
    /// The document is larger than [`MAX_SCENE_BYTES`].
    #[error("scene is {bytes} bytes; the limit is {MAX_SCENE_BYTES} bytes")]
    TooLarge {
        /// Size of the document.
        bytes: usize,
    },
    /// Too many bodies or shapes.
    #[error("{}too many {what}; the limit is {limit}", .at.prefix())]
    TooMany {
        /// Where the limit was hit.
        at: Location,
        /// What there are too many of.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The `version` field is not [`SCENE_VERSION`].
    #[error("unsupported scene version {found}; this build reads version {SCENE_VERSION}")]
    Version {
        /// The version found, as JSON text.
        found: String,
    },
    /// Invalid JSON, a wrong type, an unknown or a missing field.
    #[error("{}{message} at line {line} column {column}", .at.prefix())]
    Json {
        /// Which body or shape was being read.
        at: Location,
        /// serde_json's message.
        message: String,
        /// Line of the problem (1-based).
        line: usize,
        /// Column of the problem (1-based).
        column: usize,
    },
    /// A value that is well-formed JSON but not a valid scene.
    #[error("{}{message}", .at.prefix())]
    Invalid {
        /// Where the problem is.
        at: Location,
        /// What is wrong, naming the field.
        message: String,
    },
}

pub(super) fn invalid(at: &Location, message: impl Into<String>) -> SceneError {
    SceneError::Invalid {
        at: at.clone(),
        message: message.into(),
    }
}
