//! The JSON scene format: a strict, documented description of a world.
//!
//! The format is specified field by field in `docs/scene-format.md`. Parsing
//! is strict: unknown fields, missing required fields, wrong types and
//! out-of-range values are errors, and every error names the body, shape and
//! field it is about. No input can make [`parse_scene`] panic; input size,
//! body count and shape count are capped.
//!
//! Joints reference bodies by their `id`s and are created after every body,
//! in array order; their errors name the joint (`joint 2 ("knee")`).
//!
//! Parsing happens in two phases: serde turns the text into plain records
//! (syntax, types, unknown and missing fields: errors carry serde_json's line
//! and column), then the records are checked and turned into a [`World`].
//! While serde runs, a thread-local cursor remembers which body and shape is
//! being read so that serde's errors can be prefixed with them.
//!
//! Files: this one holds the limits and the entry point ([`parse_scene`]);
//! `records.rs` the serde records, `cursor.rs` the cursor, `numbers.rs` the
//! number checks, `build.rs` the world, bodies and shapes, `joints.rs` the
//! joints, `error.rs` [`SceneError`] and [`Location`].

// Float edge: scene parsing only; conversion is exact IEEE rounding, identical on every target.

mod build;
mod cursor;
mod error;
mod joints;
mod numbers;
mod records;

pub use error::{Location, SceneError};

use build::*;
use cursor::*;
use error::invalid;
use joints::*;
use numbers::*;
use records::*;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::dynamics::{
    AngleJoint, BodyDef, BodyId, BodyKind, DistanceJoint, FrictionJoint, JointDef, JointKind,
    MotorJoint, PrismaticJoint, PulleyJoint, RevoluteJoint, ShapeDef, TargetJoint, WeldJoint,
    WheelJoint, World, WorldDef,
};
use crate::geometry::{
    chain_segments, Capsule, Circle, Filter, GeometryError, Polygon, Segment, ShapeGeometry,
    MAX_POLYGON_VERTICES,
};
use crate::math::{Rot, Scalar, Transform, Vec2, WORLD_BOUND};

/// The scene format version this build reads.
pub const SCENE_VERSION: u64 = 1;
/// Largest accepted scene document, in bytes (16 MiB).
pub const MAX_SCENE_BYTES: usize = 16 << 20;
/// Most bodies a scene may have.
pub const MAX_BODIES: usize = 100_000;
/// Most shapes a scene may have in total.
pub const MAX_SHAPES: usize = 400_000;
/// Most shapes one body may have (creating a shape on a dynamic body is
/// linear in the body's shape count, so this keeps loading time bounded).
pub const MAX_SHAPES_PER_BODY: usize = 1024;
/// Longest body or joint `id`, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Most joints a scene may have.
pub const MAX_JOINTS: usize = 100_000;

/// Smallest radius, half-extent, edge or length: the linear slop.
const MIN_SIZE: Scalar = Scalar::milli(5);
/// Shapes with mass on a dynamic body must lie within this distance of the
/// body origin, so that mass and inertia fit in Q32.32.
const MAX_DYNAMIC_EXTENT: Scalar = Scalar::from_int(100);
/// Upper bound of Σ density · extent⁴ over a dynamic body's shapes (Q32.32
/// bits, as i128): keeps the rotational inertia far below the Q32.32 range.
const MAX_MASS_LOAD: i128 = 100_000_000 << 32;

// Entry point.
// ---------------------------------------------------------------------------

/// Parses a JSON scene into a world. The format is described in
/// `docs/scene-format.md`.
///
/// # Errors
/// Any problem with the document, naming the body, shape and field.
pub fn parse_scene(text: &str) -> Result<World, SceneError> {
    if text.len() > MAX_SCENE_BYTES {
        return Err(SceneError::TooLarge { bytes: text.len() });
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(SceneError::Empty);
    }
    set_cursor(CURSOR_START);
    let parsed = serde_json::from_str::<SceneJson>(text);
    let c = cursor();
    set_cursor(CURSOR_START);
    let scene = match parsed {
        Ok(scene) => scene,
        Err(e) => return Err(serde_error(text, &e, c)),
    };
    check_version(&scene.version)?;
    build_world(&scene)
}

fn check_version(v: &serde_json::Value) -> Result<(), SceneError> {
    if v.as_u64() == Some(SCENE_VERSION) {
        return Ok(());
    }
    let mut found = v.to_string();
    if found.len() > 40 {
        let mut end = 40;
        while !found.is_char_boundary(end) {
            end -= 1;
        }
        found.truncate(end);
        found.push('…');
    }
    Err(SceneError::Version { found })
}

/// Turns a serde error into a scene error, naming where it happened.
fn serde_error(text: &str, e: &serde_json::Error, c: Cursor) -> SceneError {
    // A wrong version explains any other error better.
    if let Ok(probe) = serde_json::from_str::<VersionProbe>(text) {
        if let Err(v) = check_version(&probe.version) {
            return v;
        }
    }
    let at = location(text, c.path);
    if let Some((what, limit)) = c.limit {
        return SceneError::TooMany { at, what, limit };
    }
    let mut message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_owned();
    }
    SceneError::Json {
        at,
        message: requote(&message),
        line: e.line(),
        column: e.column(),
    }
}

/// serde quotes names and values with backticks; use double quotes for names
/// (as the rest of the messages do) and nothing around numbers and booleans.
fn requote(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut parts = message.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let mut quoted = true;
    for part in parts {
        if quoted {
            // Float edge: formatting a field path for an error message.
            let bare = part.parse::<f64>().is_ok() || part == "true" || part == "false";
            if bare {
                out.push_str(part);
            } else {
                out.push('"');
                out.push_str(part);
                out.push('"');
            }
        } else {
            out.push_str(part);
        }
        quoted = !quoted;
    }
    out
}

/// The location for a serde path, looking the body's `id` up when the
/// document is valid JSON.
fn location(text: &str, path: Path) -> Location {
    let id_in = |list: &str, i: usize| -> Option<String> {
        let v = serde_json::from_str::<serde_json::Value>(text).ok()?;
        let id = v.get(list)?.get(i)?.get("id")?.as_str()?;
        (id.len() <= MAX_ID_BYTES).then(|| id.to_owned())
    };
    let id_of = |i: usize| id_in("bodies", i);
    match path {
        Path::Scene => Location::Scene,
        Path::World => Location::World,
        Path::Body(index) => Location::Body {
            index,
            id: id_of(index),
        },
        Path::Shape(body, index) => Location::Shape {
            body,
            id: id_of(body),
            index,
        },
        Path::Joint(index) => Location::Joint {
            index,
            id: id_in("joints", index),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_scene_parses() {
        let w = parse_scene(r#"{"version": 1, "bodies": []}"#).unwrap();
        assert_eq!(w.body_count(), 0);
    }

    #[test]
    fn serde_errors_name_body_and_shape() {
        let text = r#"{"version": 1, "bodies": [
            {"type": "static"},
            {"id": "crate", "type": "dynamic", "shapes": [{"type": "circle", "radius": 1, "colour": 3}]}
        ]}"#;
        let e = parse_scene(text).unwrap_err().to_string();
        assert!(
            e.starts_with("body 1 (\"crate\"), shape 0: unknown field \"colour\""),
            "{e}"
        );
        assert!(e.contains("line 3 column"), "{e}");
    }

    #[test]
    fn cursor_is_reset_between_parses() {
        let bad = r#"{"version": 1, "bodies": [{"type": "static", "x": 1}]}"#;
        assert!(parse_scene(bad)
            .unwrap_err()
            .to_string()
            .starts_with("body 0: "));
        let e = parse_scene(r#"{"version": 1, "bodies": [], "extra": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unknown field \"extra\""), "{e}");
    }
}
