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

// Float edge: scene parsing only; conversion is exact IEEE rounding, identical on every target.

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
    Capsule, Circle, Filter, GeometryError, Polygon, Segment, ShapeGeometry, MAX_POLYGON_VERTICES,
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
/// Most shapes one body may have (creating a shape is linear in the body's
/// shape count, so this keeps loading time bounded).
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
    fn prefix(&self) -> String {
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

fn invalid(at: &Location, message: impl Into<String>) -> SceneError {
    SceneError::Invalid {
        at: at.clone(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------
// Where serde is: a thread-local cursor updated by the list visitors.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Path {
    Scene,
    World,
    Body(usize),
    Shape(usize, usize),
    Joint(usize),
}

#[derive(Clone, Copy, Debug)]
struct Cursor {
    path: Path,
    shapes: usize,
    limit: Option<(&'static str, usize)>,
}

const CURSOR_START: Cursor = Cursor {
    path: Path::Scene,
    shapes: 0,
    limit: None,
};

thread_local! {
    static CURSOR: Cell<Cursor> = const { Cell::new(CURSOR_START) };
}

fn cursor() -> Cursor {
    CURSOR.with(Cell::get)
}

fn set_cursor(c: Cursor) {
    CURSOR.with(|cell| cell.set(c));
}

fn set_path(path: Path) {
    set_cursor(Cursor { path, ..cursor() });
}

// ---------------------------------------------------------------------------
// Serde records.
// ---------------------------------------------------------------------------

/// A JSON number, read as f64 (integers too).
#[derive(Clone, Copy, Debug)]
struct Num(f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
        }
        d.deserialize_f64(V)
    }
}

/// An `[x, y]` pair.
#[derive(Clone, Copy, Debug)]
struct V2(Num, Num);

impl<'de> Deserialize<'de> for V2 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<V2, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = V2;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an [x, y] array of two numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V2, A::Error> {
                let x = seq
                    .next_element::<Num>()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let y = seq
                    .next_element::<Num>()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                Ok(V2(x, y))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a scene object")]
struct SceneJson {
    /// Checked after parsing, so that a wrong version is reported as such.
    version: serde_json::Value,
    /// Informational only.
    #[allow(dead_code)]
    name: Option<String>,
    /// Informational only.
    #[allow(dead_code)]
    description: Option<String>,
    world: Option<WorldTracked>,
    bodies: BodyList,
    joints: Option<JointList>,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a scene object")]
struct VersionProbe {
    version: serde_json::Value,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, expecting = "a world settings object")]
struct WorldJson {
    gravity: Option<V2>,
    tick_rate: Option<u32>,
    substeps: Option<u32>,
    enable_sleep: Option<bool>,
    contact_hertz: Option<Num>,
    contact_damping_ratio: Option<Num>,
    contact_push_max_velocity: Option<Num>,
    restitution_threshold: Option<Num>,
    max_linear_speed: Option<Num>,
    time_to_sleep: Option<Num>,
    enable_continuous: Option<bool>,
    hit_event_threshold: Option<Num>,
}

/// The world object, with the cursor set while it is read.
#[derive(Debug)]
struct WorldTracked(WorldJson);

impl<'de> Deserialize<'de> for WorldTracked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WorldTracked, D::Error> {
        set_path(Path::World);
        let w = WorldJson::deserialize(d)?;
        set_path(Path::Scene);
        Ok(WorldTracked(w))
    }
}

/// Deserializes a string naming one of `names`, as its index (so that a
/// wrong type reads "invalid type: integer 5, expected one of …").
fn one_of<'de, D: Deserializer<'de>>(
    d: D,
    names: &'static [&'static str],
) -> Result<usize, D::Error> {
    struct V(&'static [&'static str]);
    impl Visitor<'_> for V {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("one of ")?;
            for (i, n) in self.0.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{n:?}")?;
            }
            Ok(())
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
            self.0
                .iter()
                .position(|n| *n == v)
                .ok_or_else(|| de::Error::unknown_variant(v, self.0))
        }
    }
    d.deserialize_str(V(names))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKindJson {
    Static,
    Kinematic,
    Dynamic,
}

impl<'de> Deserialize<'de> for BodyKindJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BodyKindJson, D::Error> {
        const KINDS: [BodyKindJson; 3] = [
            BodyKindJson::Static,
            BodyKindJson::Kinematic,
            BodyKindJson::Dynamic,
        ];
        Ok(KINDS[one_of(d, &["static", "kinematic", "dynamic"])?])
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a body object")]
struct BodyJson {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: BodyKindJson,
    position: Option<V2>,
    angle: Option<Num>,
    linear_velocity: Option<V2>,
    angular_velocity: Option<Num>,
    linear_damping: Option<Num>,
    angular_damping: Option<Num>,
    gravity_scale: Option<Num>,
    sleep_threshold: Option<Num>,
    enable_sleep: Option<bool>,
    awake: Option<bool>,
    fixed_rotation: Option<bool>,
    bullet: Option<bool>,
    user_data: Option<u64>,
    shapes: Option<ShapeList>,
}

/// A top-level list of the scene (bodies, joints): each element's index is
/// recorded for error messages, and a list longer than `MAX` is refused
/// before anything past the limit is stored.
trait TopLevelItem {
    /// Most elements.
    const MAX: usize;
    /// Plural name, for messages.
    const WHAT: &'static str;
    /// Where element `i` sits.
    fn path(i: usize) -> Path;
}

impl TopLevelItem for BodyJson {
    const MAX: usize = MAX_BODIES;
    const WHAT: &'static str = "bodies";
    fn path(i: usize) -> Path {
        Path::Body(i)
    }
}

#[derive(Debug)]
struct BoundedList<T>(Vec<T>);

type BodyList = BoundedList<BodyJson>;

impl<'de, T: TopLevelItem + Deserialize<'de>> Deserialize<'de> for BoundedList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BoundedList<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: TopLevelItem + Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = BoundedList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array of {}", T::WHAT)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BoundedList<T>, A::Error> {
                let mut out = Vec::new();
                loop {
                    let i = out.len();
                    if i == T::MAX {
                        set_path(Path::Scene);
                        if seq.next_element::<IgnoredAny>()?.is_some() {
                            set_cursor(Cursor {
                                limit: Some((T::WHAT, T::MAX)),
                                ..cursor()
                            });
                            return Err(de::Error::custom(format_args!("too many {}", T::WHAT)));
                        }
                        break;
                    }
                    set_path(T::path(i));
                    match seq.next_element::<T>()? {
                        Some(b) => out.push(b),
                        None => break,
                    }
                }
                set_path(Path::Scene);
                Ok(BoundedList(out))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShapeKindJson {
    Circle,
    Box,
    Polygon,
    Capsule,
    Segment,
}

const SHAPE_KINDS: [(ShapeKindJson, &str); 5] = [
    (ShapeKindJson::Circle, "circle"),
    (ShapeKindJson::Box, "box"),
    (ShapeKindJson::Polygon, "polygon"),
    (ShapeKindJson::Capsule, "capsule"),
    (ShapeKindJson::Segment, "segment"),
];

impl<'de> Deserialize<'de> for ShapeKindJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ShapeKindJson, D::Error> {
        const NAMES: [&str; 5] = ["circle", "box", "polygon", "capsule", "segment"];
        Ok(SHAPE_KINDS[one_of(d, &NAMES)?].0)
    }
}

impl ShapeKindJson {
    fn name(self) -> &'static str {
        SHAPE_KINDS
            .iter()
            .find(|k| k.0 == self)
            .map_or("shape", |k| k.1)
    }

    /// (geometry fields allowed, of which required).
    fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            ShapeKindJson::Circle => (&["center", "radius", "density"], &["radius"]),
            ShapeKindJson::Box => (
                &[
                    "half_width",
                    "half_height",
                    "center",
                    "angle",
                    "radius",
                    "density",
                ],
                &["half_width", "half_height"],
            ),
            ShapeKindJson::Polygon => (&["vertices", "radius", "density"], &["vertices"]),
            ShapeKindJson::Capsule => (
                &["center1", "center2", "radius", "density"],
                &["center1", "center2", "radius"],
            ),
            ShapeKindJson::Segment => (&["point1", "point2"], &["point1", "point2"]),
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a shape object")]
struct ShapeJson {
    #[serde(rename = "type")]
    kind: ShapeKindJson,
    center: Option<V2>,
    radius: Option<Num>,
    half_width: Option<Num>,
    half_height: Option<Num>,
    angle: Option<Num>,
    vertices: Option<Vec<V2>>,
    center1: Option<V2>,
    center2: Option<V2>,
    point1: Option<V2>,
    point2: Option<V2>,
    density: Option<Num>,
    friction: Option<Num>,
    restitution: Option<Num>,
    filter: Option<FilterJson>,
    user_data: Option<u64>,
    sensor: Option<bool>,
    enable_contact_events: Option<bool>,
    enable_hit_events: Option<bool>,
    enable_sensor_events: Option<bool>,
}

impl ShapeJson {
    /// Geometry fields (and density) that are present, by name.
    fn present(&self) -> [(&'static str, bool); 11] {
        [
            ("center", self.center.is_some()),
            ("radius", self.radius.is_some()),
            ("half_width", self.half_width.is_some()),
            ("half_height", self.half_height.is_some()),
            ("angle", self.angle.is_some()),
            ("vertices", self.vertices.is_some()),
            ("center1", self.center1.is_some()),
            ("center2", self.center2.is_some()),
            ("point1", self.point1.is_some()),
            ("point2", self.point2.is_some()),
            ("density", self.density.is_some()),
        ]
    }
}

#[derive(Debug)]
struct ShapeList(Vec<ShapeJson>);

impl<'de> Deserialize<'de> for ShapeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ShapeList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ShapeList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of shapes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ShapeList, A::Error> {
                let body = match cursor().path {
                    Path::Body(b) | Path::Shape(b, _) => b,
                    Path::Scene | Path::World | Path::Joint(_) => 0,
                };
                let mut out = Vec::new();
                loop {
                    let j = out.len();
                    let c = cursor();
                    let limit = if j == MAX_SHAPES_PER_BODY {
                        Some(("shapes on one body", MAX_SHAPES_PER_BODY))
                    } else if c.shapes == MAX_SHAPES {
                        Some(("shapes", MAX_SHAPES))
                    } else {
                        None
                    };
                    if let Some((what, n)) = limit {
                        if seq.next_element::<IgnoredAny>()?.is_some() {
                            let path = if what == "shapes" {
                                Path::Scene
                            } else {
                                Path::Body(body)
                            };
                            set_cursor(Cursor {
                                path,
                                limit: Some((what, n)),
                                ..c
                            });
                            return Err(de::Error::custom("too many shapes"));
                        }
                        break;
                    }
                    set_path(Path::Shape(body, j));
                    match seq.next_element::<ShapeJson>()? {
                        Some(s) => {
                            out.push(s);
                            let c = cursor();
                            set_cursor(Cursor {
                                shapes: c.shapes + 1,
                                ..c
                            });
                        }
                        None => break,
                    }
                }
                set_path(Path::Body(body));
                Ok(ShapeList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, expecting = "a filter object")]
struct FilterJson {
    category: Option<u32>,
    mask: Option<u32>,
    group: Option<i32>,
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Numbers.
// ---------------------------------------------------------------------------

/// A number as written, for messages (scientific notation when long).
fn show(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || (1e-6..1e9).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A scalar for messages, to 4 decimals.
fn show_scalar(s: Scalar) -> String {
    format!("{:.4}", s.to_f64())
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_owned()
}

/// Inclusive range check with a message naming the field.
fn ranged(
    at: &Location,
    field: &str,
    v: Num,
    lo: Scalar,
    hi: Scalar,
) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s >= lo && s <= hi => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is out of range (allowed {} to {})",
                show(v.0),
                show_scalar(lo),
                show_scalar(hi)
            ),
        )),
    }
}

/// A strictly positive value up to `hi`.
fn positive(at: &Location, field: &str, v: Num, hi: Scalar) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s > Scalar::ZERO && s <= hi => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is out of range (must be above 0 and at most {})",
                show(v.0),
                show_scalar(hi)
            ),
        )),
    }
}

/// A world coordinate.
fn coord(at: &Location, field: &str, v: Num) -> Result<Scalar, SceneError> {
    match Scalar::from_f64(v.0) {
        Some(s) if s.abs() <= WORLD_BOUND => Ok(s),
        _ => Err(invalid(
            at,
            format!(
                "{field} {} is outside the world bounds of ±10000",
                show(v.0)
            ),
        )),
    }
}

/// A world point.
fn point(at: &Location, field: &str, v: V2) -> Result<Vec2, SceneError> {
    Ok(Vec2::new(
        coord(at, &format!("{field}.x"), v.0)?,
        coord(at, &format!("{field}.y"), v.1)?,
    ))
}

/// A size: radius or half-extent, at least [`MIN_SIZE`].
fn size(at: &Location, field: &str, v: Num) -> Result<Scalar, SceneError> {
    let s = Scalar::from_f64(v.0);
    let problem = match s {
        Some(s) if s > WORLD_BOUND => "is larger than 10000",
        None if v.0 > 0.0 => "is larger than 10000",
        Some(s) if s <= Scalar::ZERO => "must be positive",
        None => "must be positive",
        Some(s) if s < MIN_SIZE => "is below the minimum size of 0.005",
        Some(s) => return Ok(s),
    };
    Err(invalid(at, format!("{field} {} {problem}", show(v.0))))
}

/// A vector whose components are each in `[-bound, bound]`.
fn ranged_vec(at: &Location, field: &str, v: V2, bound: Scalar) -> Result<Vec2, SceneError> {
    Ok(Vec2::new(
        ranged(at, &format!("{field}.x"), v.0, -bound, bound)?,
        ranged(at, &format!("{field}.y"), v.1, -bound, bound)?,
    ))
}

fn opt<T: Copy, R>(
    v: Option<T>,
    default: R,
    f: impl FnOnce(T) -> Result<R, SceneError>,
) -> Result<R, SceneError> {
    match v {
        Some(v) => f(v),
        None => Ok(default),
    }
}

// ---------------------------------------------------------------------------
// Building the world.
// ---------------------------------------------------------------------------

/// Bound shared by most tuning values (damping, gravity, hertz, …).
const TUNING_BOUND: Scalar = Scalar::from_int(1000);
/// Angular speed limit (rad/s); the engine's own limit is a quarter turn
/// per step at 60 Hz (≈ 47.1).
const MAX_ANGULAR_VELOCITY: Scalar = Scalar::from_int(47);

fn world_def(w: Option<&WorldTracked>) -> Result<WorldDef, SceneError> {
    let at = &Location::World;
    // Start from the defaults so settings added to `WorldDef` later keep them.
    let mut def = WorldDef::default();
    let Some(WorldTracked(w)) = w else {
        return Ok(def);
    };
    if let Some(v) = w.gravity {
        def.gravity = ranged_vec(at, "gravity", v, TUNING_BOUND)?;
    }
    if let Some(t) = w.tick_rate {
        if !(1..=10_000).contains(&t) {
            return Err(invalid(
                at,
                format!("tick_rate {t} is out of range (allowed 1 to 10000)"),
            ));
        }
        def.tick_rate = t;
    }
    if let Some(n) = w.substeps {
        if !(1..=64).contains(&n) {
            return Err(invalid(
                at,
                format!("substeps {n} is out of range (allowed 1 to 64)"),
            ));
        }
        def.substeps = n;
    }
    if let Some(b) = w.enable_sleep {
        def.enable_sleep = b;
    }
    if let Some(v) = w.contact_hertz {
        def.contact_hertz = positive(at, "contact_hertz", v, TUNING_BOUND)?;
    }
    if let Some(v) = w.contact_damping_ratio {
        def.contact_damping_ratio =
            ranged(at, "contact_damping_ratio", v, Scalar::ZERO, TUNING_BOUND)?;
    }
    if let Some(v) = w.contact_push_max_velocity {
        def.contact_push_max_velocity = ranged(
            at,
            "contact_push_max_velocity",
            v,
            Scalar::ZERO,
            TUNING_BOUND,
        )?;
    }
    if let Some(v) = w.restitution_threshold {
        def.restitution_threshold =
            ranged(at, "restitution_threshold", v, Scalar::ZERO, TUNING_BOUND)?;
    }
    if let Some(v) = w.max_linear_speed {
        def.max_linear_speed = positive(at, "max_linear_speed", v, WORLD_BOUND)?;
    }
    if let Some(v) = w.time_to_sleep {
        def.time_to_sleep = ranged(at, "time_to_sleep", v, Scalar::ZERO, TUNING_BOUND)?;
    }
    if let Some(b) = w.enable_continuous {
        def.enable_continuous = b;
    }
    if let Some(v) = w.hit_event_threshold {
        def.hit_event_threshold = ranged(at, "hit_event_threshold", v, Scalar::ZERO, TUNING_BOUND)?;
    }
    Ok(def)
}

fn build_world(scene: &SceneJson) -> Result<World, SceneError> {
    let def = world_def(scene.world.as_ref())?;
    let mut world = World::new(def).map_err(|e| invalid(&Location::World, e.to_string()))?;
    let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
    let mut handles: Vec<BodyId> = Vec::with_capacity(scene.bodies.0.len());
    for (index, body) in scene.bodies.0.iter().enumerate() {
        if let Some(id) = &body.id {
            if id.len() > MAX_ID_BYTES {
                let at = Location::Body { index, id: None };
                return Err(invalid(
                    &at,
                    format!("id is longer than {MAX_ID_BYTES} bytes"),
                ));
            }
        }
        let at = Location::Body {
            index,
            id: body.id.clone(),
        };
        if let Some(id) = &body.id {
            if let Some(prev) = ids.insert(id.as_str(), index) {
                return Err(invalid(
                    &at,
                    format!("id {id:?} is already used by body {prev}"),
                ));
            }
        }
        handles.push(build_body(&mut world, &def, body, index, &at)?);
    }
    if let Some(joints) = &scene.joints {
        let mut joint_ids: BTreeMap<&str, usize> = BTreeMap::new();
        for (index, j) in joints.0.iter().enumerate() {
            let at = Location::Joint {
                index,
                id: j.id.clone().filter(|id| id.len() <= MAX_ID_BYTES),
            };
            if let Some(id) = &j.id {
                if id.len() > MAX_ID_BYTES {
                    return Err(invalid(
                        &at,
                        format!("id is longer than {MAX_ID_BYTES} bytes"),
                    ));
                }
                if let Some(prev) = joint_ids.insert(id.as_str(), index) {
                    return Err(invalid(
                        &at,
                        format!("id {id:?} is already used by joint {prev}"),
                    ));
                }
            }
            build_joint(&mut world, &ids, &handles, j, &at)?;
        }
    }
    Ok(world)
}

fn build_body(
    world: &mut World,
    wdef: &WorldDef,
    b: &BodyJson,
    index: usize,
    at: &Location,
) -> Result<BodyId, SceneError> {
    let kind = match b.kind {
        BodyKindJson::Static => BodyKind::Static,
        BodyKindJson::Kinematic => BodyKind::Kinematic,
        BodyKindJson::Dynamic => BodyKind::Dynamic,
    };
    if kind == BodyKind::Static {
        for (name, present) in [
            ("linear_velocity", b.linear_velocity.is_some()),
            ("angular_velocity", b.angular_velocity.is_some()),
        ] {
            if present {
                return Err(invalid(at, format!("a static body cannot have {name:?}")));
            }
        }
    }
    if b.bullet == Some(true) && kind != BodyKind::Dynamic {
        return Err(invalid(at, "\"bullet\" applies only to dynamic bodies"));
    }
    let d = BodyDef::default();
    let position = opt(b.position, Vec2::ZERO, |v| point(at, "position", v))?;
    let angle = opt(b.angle, Scalar::ZERO, |v| {
        ranged(at, "angle", v, -WORLD_BOUND, WORLD_BOUND)
    })?;
    let rotation = if angle.is_zero() {
        Rot::IDENTITY
    } else {
        Rot::from_angle(angle)
    };
    let max_v = wdef.max_linear_speed;
    let def = BodyDef {
        kind,
        position,
        rotation,
        linear_velocity: opt(b.linear_velocity, Vec2::ZERO, |v| {
            ranged_vec(at, "linear_velocity", v, max_v)
        })?,
        angular_velocity: opt(b.angular_velocity, Scalar::ZERO, |v| {
            ranged(
                at,
                "angular_velocity",
                v,
                -MAX_ANGULAR_VELOCITY,
                MAX_ANGULAR_VELOCITY,
            )
        })?,
        linear_damping: opt(b.linear_damping, d.linear_damping, |v| {
            ranged(at, "linear_damping", v, Scalar::ZERO, TUNING_BOUND)
        })?,
        angular_damping: opt(b.angular_damping, d.angular_damping, |v| {
            ranged(at, "angular_damping", v, Scalar::ZERO, TUNING_BOUND)
        })?,
        gravity_scale: opt(b.gravity_scale, d.gravity_scale, |v| {
            ranged(at, "gravity_scale", v, -TUNING_BOUND, TUNING_BOUND)
        })?,
        sleep_threshold: opt(b.sleep_threshold, d.sleep_threshold, |v| {
            ranged(at, "sleep_threshold", v, Scalar::ZERO, TUNING_BOUND)
        })?,
        enable_sleep: b.enable_sleep.unwrap_or(d.enable_sleep),
        awake: b.awake.unwrap_or(d.awake),
        fixed_rotation: b.fixed_rotation.unwrap_or(d.fixed_rotation),
        user_data: b.user_data.unwrap_or(d.user_data),
        bullet: b.bullet.unwrap_or(d.bullet),
    };
    let id = world
        .create_body(&def)
        .map_err(|e| invalid(at, e.to_string()))?;
    let xf = world
        .transform(id)
        .map_err(|e| invalid(at, e.to_string()))?;
    let mut load: i128 = 0;
    if let Some(shapes) = &b.shapes {
        for (j, s) in shapes.0.iter().enumerate() {
            let sat = Location::Shape {
                body: index,
                id: b.id.clone(),
                index: j,
            };
            build_shape(world, id, kind, xf, s, &sat, &mut load)?;
        }
    }
    Ok(id)
}

fn material(at: &Location, s: &ShapeJson, kind: BodyKind) -> Result<ShapeDef, SceneError> {
    let d = ShapeDef::default();
    let density = match s.density {
        None => d.density,
        Some(v) => match Scalar::from_f64(v.0) {
            Some(x) if x < Scalar::ZERO => {
                return Err(invalid(
                    at,
                    format!("density {} must not be negative", show(v.0)),
                ))
            }
            Some(x) if x.is_zero() && kind == BodyKind::Dynamic => {
                return Err(invalid(
                    at,
                    format!("density {} must be positive on a dynamic body", show(v.0)),
                ))
            }
            _ => ranged(at, "density", v, Scalar::ZERO, Scalar::from_int(100_000))?,
        },
    };
    let f = s.filter.as_ref();
    let fd = Filter::default();
    Ok(ShapeDef {
        density,
        friction: opt(s.friction, d.friction, |v| {
            ranged(at, "friction", v, Scalar::ZERO, Scalar::from_int(100))
        })?,
        restitution: opt(s.restitution, d.restitution, |v| {
            ranged(at, "restitution", v, Scalar::ZERO, Scalar::ONE)
        })?,
        filter: Filter {
            category: f.and_then(|f| f.category).unwrap_or(fd.category),
            mask: f.and_then(|f| f.mask).unwrap_or(fd.mask),
            group: f.and_then(|f| f.group).unwrap_or(fd.group),
        },
        user_data: s.user_data.unwrap_or(d.user_data),
        is_sensor: s.sensor.unwrap_or(d.is_sensor),
        enable_contact_events: s.enable_contact_events.unwrap_or(d.enable_contact_events),
        enable_hit_events: s.enable_hit_events.unwrap_or(d.enable_hit_events),
        enable_sensor_events: s.enable_sensor_events.unwrap_or(d.enable_sensor_events),
    })
}

fn build_shape(
    world: &mut World,
    body: BodyId,
    kind: BodyKind,
    xf: Transform,
    s: &ShapeJson,
    at: &Location,
    load: &mut i128,
) -> Result<(), SceneError> {
    let name = s.kind.name();
    let (allowed, required) = s.kind.fields();
    let present = s.present();
    for (field, here) in present {
        if here && !allowed.contains(&field) {
            return Err(invalid(
                at,
                format!("field {field:?} does not apply to a {name} shape"),
            ));
        }
    }
    for field in required {
        if !present.iter().any(|&(f, here)| f == *field && here) {
            return Err(invalid(
                at,
                format!("missing field {field:?} (required for a {name} shape)"),
            ));
        }
    }
    let def = material(at, s, kind)?;
    let geometry = geometry(at, s)?;
    if !geometry.aabb(xf).within_world() {
        return Err(invalid(
            at,
            "shape extends outside the world bounds of ±10000 (body position plus shape offset)",
        ));
    }
    if kind == BodyKind::Dynamic && !matches!(geometry, ShapeGeometry::Segment(_)) {
        // Conservative reach of the shape's mass from the body origin; rounded
        // polygons count half their radius extra (their mass approximation
        // pushes vertices out by √2·radius).
        let reach = geometry.extent_from(Vec2::ZERO) + geometry.radius().shr(1);
        if reach > MAX_DYNAMIC_EXTENT {
            return Err(invalid(
                at,
                format!(
                    "shape reaches {} m from the body origin; shapes on dynamic bodies must stay within 100 m",
                    show_scalar(reach)
                ),
            ));
        }
        if geometry.mass(def.density).mass <= Scalar::ZERO {
            return Err(invalid(
                at,
                "shape mass rounds to zero; raise its density or size".to_string(),
            ));
        }
        let q = |a: i128, b: i128| a.saturating_mul(b) >> 32;
        let r = i128::from(reach.to_bits());
        let r2 = q(r, r);
        *load = load.saturating_add(q(i128::from(def.density.to_bits()), q(r2, r2)));
        if *load > MAX_MASS_LOAD {
            return Err(invalid(
                at,
                format!(
                    "density {} is too high for a body this large: density × reach⁴ summed over the body's shapes \
                     must be at most 1e8 so that its inertia fits the fixed-point range",
                    show_scalar(def.density)
                ),
            ));
        }
    }
    world
        .create_shape(body, &def, geometry)
        .map_err(|e| invalid(at, e.to_string()))?;
    Ok(())
}

fn required<T: Copy>(at: &Location, v: Option<T>, field: &str) -> Result<T, SceneError> {
    v.ok_or_else(|| invalid(at, format!("missing field {field:?}")))
}

fn geometry_error(at: &Location, e: GeometryError) -> SceneError {
    invalid(at, e.to_string())
}

fn geometry(at: &Location, s: &ShapeJson) -> Result<ShapeGeometry, SceneError> {
    let rounding = |v: Option<Num>| {
        opt(v, Scalar::ZERO, |v| {
            ranged(at, "radius", v, Scalar::ZERO, WORLD_BOUND)
        })
    };
    Ok(match s.kind {
        ShapeKindJson::Circle => {
            let center = opt(s.center, Vec2::ZERO, |v| point(at, "center", v))?;
            let radius = size(at, "radius", required(at, s.radius, "radius")?)?;
            ShapeGeometry::Circle(Circle::new(center, radius).map_err(|e| geometry_error(at, e))?)
        }
        ShapeKindJson::Box => {
            let hx = size(at, "half_width", required(at, s.half_width, "half_width")?)?;
            let hy = size(
                at,
                "half_height",
                required(at, s.half_height, "half_height")?,
            )?;
            let center = opt(s.center, Vec2::ZERO, |v| point(at, "center", v))?;
            let angle = opt(s.angle, Scalar::ZERO, |v| {
                ranged(at, "angle", v, -WORLD_BOUND, WORLD_BOUND)
            })?;
            let rot = if angle.is_zero() {
                Rot::IDENTITY
            } else {
                Rot::from_angle(angle)
            };
            let mut p = Polygon::make_offset_box(hx, hy, center, rot);
            p.radius = rounding(s.radius)?;
            ShapeGeometry::Polygon(p)
        }
        ShapeKindJson::Polygon => {
            let verts = s
                .vertices
                .as_ref()
                .ok_or_else(|| invalid(at, "missing field \"vertices\""))?;
            let n = verts.len();
            if !(3..=MAX_POLYGON_VERTICES).contains(&n) {
                return Err(invalid(
                    at,
                    format!("polygon has {n} vertices; it needs 3 to {MAX_POLYGON_VERTICES}"),
                ));
            }
            let mut pts = [Vec2::ZERO; MAX_POLYGON_VERTICES];
            for (k, v) in verts.iter().enumerate() {
                pts[k] = point(at, &format!("vertices[{k}]"), *v)?;
            }
            let pts = &pts[..n];
            let mut area2 = Scalar::ZERO;
            for k in 0..n {
                let next = (k + 1) % n;
                if (pts[next] - pts[k]).length() < MIN_SIZE {
                    return Err(invalid(
                        at,
                        format!("polygon vertices {k} and {next} are closer than 0.005"),
                    ));
                }
                area2 += pts[k].cross(pts[next]);
            }
            let radius = rounding(s.radius)?;
            match Polygon::new(pts, radius) {
                Ok(p) => ShapeGeometry::Polygon(p),
                Err(GeometryError::NotConvex(k)) => {
                    // `Polygon::new` re-winds clockwise input; report the index as written.
                    let k = if area2 < Scalar::ZERO {
                        n - 1 - k.min(n - 1)
                    } else {
                        k
                    };
                    return Err(invalid(at, format!("polygon is not convex (vertex {k})")));
                }
                Err(e) => return Err(geometry_error(at, e)),
            }
        }
        ShapeKindJson::Capsule => {
            let c1 = point(at, "center1", required(at, s.center1, "center1")?)?;
            let c2 = point(at, "center2", required(at, s.center2, "center2")?)?;
            let radius = size(at, "radius", required(at, s.radius, "radius")?)?;
            if (c2 - c1).length() < MIN_SIZE {
                return Err(invalid(at, "center1 and center2 are closer than 0.005"));
            }
            ShapeGeometry::Capsule(Capsule::new(c1, c2, radius).map_err(|e| geometry_error(at, e))?)
        }
        ShapeKindJson::Segment => {
            let p1 = point(at, "point1", required(at, s.point1, "point1")?)?;
            let p2 = point(at, "point2", required(at, s.point2, "point2")?)?;
            if (p2 - p1).length() < MIN_SIZE {
                return Err(invalid(at, "point1 and point2 are closer than 0.005"));
            }
            ShapeGeometry::Segment(Segment::new(p1, p2).map_err(|e| geometry_error(at, e))?)
        }
    })
}

// ---------------------------------------------------------------------------
// Joints.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JointKindJson {
    Revolute,
    Prismatic,
    Weld,
    Wheel,
    Distance,
    Pulley,
    Angle,
    Motor,
    Target,
    Friction,
}

const JOINT_KINDS: [(JointKindJson, &str); 10] = [
    (JointKindJson::Revolute, "revolute"),
    (JointKindJson::Prismatic, "prismatic"),
    (JointKindJson::Weld, "weld"),
    (JointKindJson::Wheel, "wheel"),
    (JointKindJson::Distance, "distance"),
    (JointKindJson::Pulley, "pulley"),
    (JointKindJson::Angle, "angle"),
    (JointKindJson::Motor, "motor"),
    (JointKindJson::Target, "target"),
    (JointKindJson::Friction, "friction"),
];

impl<'de> Deserialize<'de> for JointKindJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JointKindJson, D::Error> {
        const NAMES: [&str; 10] = [
            "revolute",
            "prismatic",
            "weld",
            "wheel",
            "distance",
            "pulley",
            "angle",
            "motor",
            "target",
            "friction",
        ];
        Ok(JOINT_KINDS[one_of(d, &NAMES)?].0)
    }
}

impl JointKindJson {
    fn name(self) -> &'static str {
        JOINT_KINDS
            .iter()
            .find(|k| k.0 == self)
            .map_or("joint", |k| k.1)
    }

    /// Type-specific fields allowed, and of which required.
    fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            JointKindJson::Revolute => (
                &[
                    "enable_limit",
                    "lower_angle",
                    "upper_angle",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_torque",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "target_angle",
                ],
                &[],
            ),
            JointKindJson::Prismatic => (
                &[
                    "axis",
                    "enable_limit",
                    "lower_translation",
                    "upper_translation",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_force",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "target_translation",
                ],
                &[],
            ),
            JointKindJson::Weld => (
                &[
                    "linear_hertz",
                    "linear_damping_ratio",
                    "angular_hertz",
                    "angular_damping_ratio",
                ],
                &[],
            ),
            JointKindJson::Wheel => (
                &[
                    "axis",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "enable_limit",
                    "lower_translation",
                    "upper_translation",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_torque",
                ],
                &[],
            ),
            JointKindJson::Distance => (
                &[
                    "length",
                    "enable_spring",
                    "hertz",
                    "damping_ratio",
                    "enable_limit",
                    "min_length",
                    "max_length",
                    "enable_motor",
                    "motor_speed",
                    "max_motor_force",
                ],
                &[],
            ),
            JointKindJson::Pulley => (
                &["ground_anchor_a", "ground_anchor_b", "ratio", "length"],
                &["ground_anchor_a", "ground_anchor_b"],
            ),
            JointKindJson::Angle => (
                &[
                    "target_angle",
                    "hertz",
                    "damping_ratio",
                    "max_torque",
                    "enable_limit",
                    "lower_angle",
                    "upper_angle",
                ],
                &[],
            ),
            JointKindJson::Motor => (&["max_force", "max_torque", "correction_factor"], &[]),
            JointKindJson::Target => (
                &["target", "hertz", "damping_ratio", "max_force"],
                &["target"],
            ),
            JointKindJson::Friction => (&["max_force", "max_torque"], &[]),
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a joint object")]
struct JointJson {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: JointKindJson,
    body_a: String,
    body_b: String,
    anchor: Option<V2>,
    anchor_a: Option<V2>,
    anchor_b: Option<V2>,
    local_anchor_a: Option<V2>,
    local_anchor_b: Option<V2>,
    reference_angle: Option<Num>,
    collide_connected: Option<bool>,
    break_force: Option<Num>,
    break_torque: Option<Num>,
    user_data: Option<u64>,
    // Type-specific (see `JointKindJson::fields`).
    enable_limit: Option<bool>,
    lower_angle: Option<Num>,
    upper_angle: Option<Num>,
    enable_motor: Option<bool>,
    motor_speed: Option<Num>,
    max_motor_torque: Option<Num>,
    max_motor_force: Option<Num>,
    enable_spring: Option<bool>,
    hertz: Option<Num>,
    damping_ratio: Option<Num>,
    target_angle: Option<Num>,
    axis: Option<V2>,
    lower_translation: Option<Num>,
    upper_translation: Option<Num>,
    target_translation: Option<Num>,
    linear_hertz: Option<Num>,
    linear_damping_ratio: Option<Num>,
    angular_hertz: Option<Num>,
    angular_damping_ratio: Option<Num>,
    length: Option<Num>,
    min_length: Option<Num>,
    max_length: Option<Num>,
    ground_anchor_a: Option<V2>,
    ground_anchor_b: Option<V2>,
    ratio: Option<Num>,
    max_torque: Option<Num>,
    max_force: Option<Num>,
    correction_factor: Option<Num>,
    target: Option<V2>,
}

impl JointJson {
    /// Type-specific fields that are present, by name.
    fn present(&self) -> [(&'static str, bool); 29] {
        [
            ("enable_limit", self.enable_limit.is_some()),
            ("lower_angle", self.lower_angle.is_some()),
            ("upper_angle", self.upper_angle.is_some()),
            ("enable_motor", self.enable_motor.is_some()),
            ("motor_speed", self.motor_speed.is_some()),
            ("max_motor_torque", self.max_motor_torque.is_some()),
            ("max_motor_force", self.max_motor_force.is_some()),
            ("enable_spring", self.enable_spring.is_some()),
            ("hertz", self.hertz.is_some()),
            ("damping_ratio", self.damping_ratio.is_some()),
            ("target_angle", self.target_angle.is_some()),
            ("axis", self.axis.is_some()),
            ("lower_translation", self.lower_translation.is_some()),
            ("upper_translation", self.upper_translation.is_some()),
            ("target_translation", self.target_translation.is_some()),
            ("linear_hertz", self.linear_hertz.is_some()),
            ("linear_damping_ratio", self.linear_damping_ratio.is_some()),
            ("angular_hertz", self.angular_hertz.is_some()),
            (
                "angular_damping_ratio",
                self.angular_damping_ratio.is_some(),
            ),
            ("length", self.length.is_some()),
            ("min_length", self.min_length.is_some()),
            ("max_length", self.max_length.is_some()),
            ("ground_anchor_a", self.ground_anchor_a.is_some()),
            ("ground_anchor_b", self.ground_anchor_b.is_some()),
            ("ratio", self.ratio.is_some()),
            ("max_torque", self.max_torque.is_some()),
            ("max_force", self.max_force.is_some()),
            ("correction_factor", self.correction_factor.is_some()),
            ("target", self.target.is_some()),
        ]
    }
}

impl TopLevelItem for JointJson {
    const MAX: usize = MAX_JOINTS;
    const WHAT: &'static str = "joints";
    fn path(i: usize) -> Path {
        Path::Joint(i)
    }
}

type JointList = BoundedList<JointJson>;

/// Largest force or torque a joint field accepts (N, N·m).
const FORCE_BOUND: Scalar = Scalar::from_int(1_000_000_000);
/// Largest angle a joint field accepts (rad); limits are clamped to ±π.
const ANGLE_BOUND: Scalar = Scalar::from_int(7);

fn build_joint(
    world: &mut World,
    ids: &BTreeMap<&str, usize>,
    handles: &[BodyId],
    j: &JointJson,
    at: &Location,
) -> Result<(), SceneError> {
    let name = j.kind.name();
    let (allowed, needed) = j.kind.fields();
    let present = j.present();
    for (field, here) in present {
        if here && !allowed.contains(&field) {
            return Err(invalid(
                at,
                format!("field {field:?} does not apply to a {name} joint"),
            ));
        }
    }
    for field in needed {
        if !present.iter().any(|&(f, here)| f == *field && here) {
            return Err(invalid(
                at,
                format!("missing field {field:?} (required for a {name} joint)"),
            ));
        }
    }
    let body = |field: &str, id: &str| -> Result<BodyId, SceneError> {
        match ids.get(id) {
            Some(&i) => Ok(handles[i]),
            None => Err(invalid(
                at,
                format!("{field} {id:?} does not name a body (bodies are named by their \"id\")"),
            )),
        }
    };
    let a = body("body_a", &j.body_a)?;
    let b = body("body_b", &j.body_b)?;
    if a == b {
        return Err(invalid(
            at,
            format!("body_a and body_b are the same body {:?}", j.body_a),
        ));
    }
    // Anchors: one world point for both, a world point each, or local ones.
    let world_pt = |field: &str, v: Option<V2>| opt(v, None, |v| point(at, field, v).map(Some));
    let anchor = world_pt("anchor", j.anchor)?;
    let anchor_a = world_pt("anchor_a", j.anchor_a)?;
    let anchor_b = world_pt("anchor_b", j.anchor_b)?;
    let local_a = world_pt("local_anchor_a", j.local_anchor_a)?;
    let local_b = world_pt("local_anchor_b", j.local_anchor_b)?;
    if anchor.is_some() && (anchor_a.is_some() || anchor_b.is_some()) {
        return Err(invalid(
            at,
            "give either \"anchor\" or \"anchor_a\"/\"anchor_b\", not both",
        ));
    }
    for (world_field, local_field, w, l) in [
        ("anchor_a", "local_anchor_a", anchor.or(anchor_a), local_a),
        ("anchor_b", "local_anchor_b", anchor.or(anchor_b), local_b),
    ] {
        if w.is_some() && l.is_some() {
            return Err(invalid(
                at,
                format!("give either a world anchor ({world_field} or anchor) or {local_field:?}, not both"),
            ));
        }
    }
    let local = |id: BodyId, w: Option<Vec2>, l: Option<Vec2>| -> Result<Vec2, SceneError> {
        match (w, l) {
            (Some(p), _) => world
                .local_point(id, p)
                .map_err(|e| invalid(at, e.to_string())),
            (None, Some(l)) => Ok(l),
            (None, None) => Ok(Vec2::ZERO),
        }
    };
    let local_anchor_a = local(a, anchor.or(anchor_a), local_a)?;
    let local_anchor_b = local(b, anchor.or(anchor_b), local_b)?;

    let num = |field: &str, v: Option<Num>, lo: Scalar, hi: Scalar, default: Scalar| {
        opt(v, default, |v| ranged(at, field, v, lo, hi))
    };
    let non_neg = |field: &str, v: Option<Num>, hi: Scalar, default: Scalar| {
        num(field, v, Scalar::ZERO, hi, default)
    };
    let angle =
        |field: &str, v: Option<Num>| num(field, v, -ANGLE_BOUND, ANGLE_BOUND, Scalar::ZERO);
    let speed =
        |field: &str, v: Option<Num>| num(field, v, -TUNING_BOUND, TUNING_BOUND, Scalar::ZERO);
    let hertz = |v: Option<Num>, default: Scalar| non_neg("hertz", v, TUNING_BOUND, default);
    let damping =
        |v: Option<Num>, default: Scalar| non_neg("damping_ratio", v, TUNING_BOUND, default);
    let translation =
        |field: &str, v: Option<Num>| num(field, v, -WORLD_BOUND, WORLD_BOUND, Scalar::ZERO);
    let ordered = |lo_field: &str, lo: Scalar, hi_field: &str, hi: Scalar| {
        if lo > hi {
            Err(invalid(
                at,
                format!(
                    "{lo_field} {} is above {hi_field} {}",
                    show_scalar(lo),
                    show_scalar(hi)
                ),
            ))
        } else {
            Ok(())
        }
    };
    let axis = |default: Vec2| -> Result<Vec2, SceneError> {
        let v = opt(j.axis, default, |v| ranged_vec(at, "axis", v, WORLD_BOUND))?;
        if v.normalize() == Vec2::ZERO {
            return Err(invalid(at, "axis must not be zero"));
        }
        Ok(v)
    };

    let kind = match j.kind {
        JointKindJson::Revolute => {
            let r = RevoluteJoint {
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_angle: angle("lower_angle", j.lower_angle)?,
                upper_angle: angle("upper_angle", j.upper_angle)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_torque: non_neg(
                    "max_motor_torque",
                    j.max_motor_torque,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                target_angle: angle("target_angle", j.target_angle)?,
            };
            ordered("lower_angle", r.lower_angle, "upper_angle", r.upper_angle)?;
            JointKind::Revolute(r)
        }
        JointKindJson::Prismatic => {
            let p = PrismaticJoint {
                local_axis_a: axis(PrismaticJoint::default().local_axis_a)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_translation: translation("lower_translation", j.lower_translation)?,
                upper_translation: translation("upper_translation", j.upper_translation)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_force: non_neg(
                    "max_motor_force",
                    j.max_motor_force,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                target_translation: translation("target_translation", j.target_translation)?,
            };
            ordered(
                "lower_translation",
                p.lower_translation,
                "upper_translation",
                p.upper_translation,
            )?;
            JointKind::Prismatic(p)
        }
        JointKindJson::Weld => JointKind::Weld(WeldJoint {
            linear_hertz: non_neg("linear_hertz", j.linear_hertz, TUNING_BOUND, Scalar::ZERO)?,
            linear_damping_ratio: non_neg(
                "linear_damping_ratio",
                j.linear_damping_ratio,
                TUNING_BOUND,
                Scalar::ZERO,
            )?,
            angular_hertz: non_neg("angular_hertz", j.angular_hertz, TUNING_BOUND, Scalar::ZERO)?,
            angular_damping_ratio: non_neg(
                "angular_damping_ratio",
                j.angular_damping_ratio,
                TUNING_BOUND,
                Scalar::ZERO,
            )?,
        }),
        JointKindJson::Wheel => {
            let d = WheelJoint::default();
            let w = WheelJoint {
                local_axis_a: axis(d.local_axis_a)?,
                enable_spring: j.enable_spring.unwrap_or(d.enable_spring),
                hertz: hertz(j.hertz, d.hertz)?,
                damping_ratio: damping(j.damping_ratio, d.damping_ratio)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_translation: translation("lower_translation", j.lower_translation)?,
                upper_translation: translation("upper_translation", j.upper_translation)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_torque: non_neg(
                    "max_motor_torque",
                    j.max_motor_torque,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
            };
            ordered(
                "lower_translation",
                w.lower_translation,
                "upper_translation",
                w.upper_translation,
            )?;
            JointKind::Wheel(w)
        }
        JointKindJson::Distance => {
            let d = DistanceJoint::default();
            let length = opt(j.length, None, |v| {
                ranged(at, "length", v, Scalar::ZERO, WORLD_BOUND).map(Some)
            })?;
            let dj = DistanceJoint {
                length,
                enable_spring: j.enable_spring.unwrap_or(false),
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                min_length: non_neg("min_length", j.min_length, WORLD_BOUND, d.min_length)?,
                max_length: non_neg("max_length", j.max_length, WORLD_BOUND, d.max_length)?,
                enable_motor: j.enable_motor.unwrap_or(false),
                motor_speed: speed("motor_speed", j.motor_speed)?,
                max_motor_force: non_neg(
                    "max_motor_force",
                    j.max_motor_force,
                    FORCE_BOUND,
                    Scalar::ZERO,
                )?,
            };
            ordered("min_length", dj.min_length, "max_length", dj.max_length)?;
            JointKind::Distance(dj)
        }
        JointKindJson::Pulley => JointKind::Pulley(PulleyJoint {
            ground_anchor_a: point(
                at,
                "ground_anchor_a",
                required(at, j.ground_anchor_a, "ground_anchor_a")?,
            )?,
            ground_anchor_b: point(
                at,
                "ground_anchor_b",
                required(at, j.ground_anchor_b, "ground_anchor_b")?,
            )?,
            ratio: opt(j.ratio, Scalar::ONE, |v| {
                positive(at, "ratio", v, TUNING_BOUND)
            })?,
            total_length: opt(j.length, None, |v| {
                ranged(at, "length", v, Scalar::ZERO, WORLD_BOUND.shl(2)).map(Some)
            })?,
        }),
        JointKindJson::Angle => {
            let d = AngleJoint::default();
            let a = AngleJoint {
                target_angle: angle("target_angle", j.target_angle)?,
                hertz: hertz(j.hertz, Scalar::ZERO)?,
                damping_ratio: damping(j.damping_ratio, Scalar::ZERO)?,
                max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, d.max_torque)?,
                enable_limit: j.enable_limit.unwrap_or(false),
                lower_angle: angle("lower_angle", j.lower_angle)?,
                upper_angle: angle("upper_angle", j.upper_angle)?,
            };
            ordered("lower_angle", a.lower_angle, "upper_angle", a.upper_angle)?;
            JointKind::Angle(a)
        }
        JointKindJson::Motor => {
            let d = MotorJoint::default();
            JointKind::Motor(MotorJoint {
                max_force: non_neg("max_force", j.max_force, FORCE_BOUND, d.max_force)?,
                max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, d.max_torque)?,
                correction_factor: non_neg(
                    "correction_factor",
                    j.correction_factor,
                    Scalar::ONE,
                    d.correction_factor,
                )?,
            })
        }
        JointKindJson::Target => {
            let d = TargetJoint::default();
            JointKind::Target(TargetJoint {
                target: point(at, "target", required(at, j.target, "target")?)?,
                hertz: opt(j.hertz, d.hertz, |v| positive(at, "hertz", v, TUNING_BOUND))?,
                damping_ratio: damping(j.damping_ratio, d.damping_ratio)?,
                max_force: non_neg("max_force", j.max_force, FORCE_BOUND, d.max_force)?,
            })
        }
        JointKindJson::Friction => JointKind::Friction(FrictionJoint {
            max_force: non_neg("max_force", j.max_force, FORCE_BOUND, Scalar::ZERO)?,
            max_torque: non_neg("max_torque", j.max_torque, FORCE_BOUND, Scalar::ZERO)?,
        }),
    };
    let def = JointDef {
        body_a: a,
        body_b: b,
        local_anchor_a,
        local_anchor_b,
        reference_angle: opt(j.reference_angle, Scalar::ZERO, |v| {
            ranged(at, "reference_angle", v, -ANGLE_BOUND, ANGLE_BOUND)
        })?,
        collide_connected: j.collide_connected.unwrap_or(false),
        break_force: opt(j.break_force, Scalar::MAX, |v| {
            ranged(at, "break_force", v, Scalar::ZERO, FORCE_BOUND)
        })?,
        break_torque: opt(j.break_torque, Scalar::MAX, |v| {
            ranged(at, "break_torque", v, Scalar::ZERO, FORCE_BOUND)
        })?,
        user_data: j.user_data.unwrap_or(0),
        kind,
    };
    world
        .create_joint(&def)
        .map_err(|e| invalid(at, e.to_string()))?;
    Ok(())
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
