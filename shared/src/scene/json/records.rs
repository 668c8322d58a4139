//! The scene's serde records (world, bodies, shapes, filters): syntax,
//! types, unknown and missing fields, and the list limits, before any
//! value is checked.

use super::*;

// Serde records.
// ---------------------------------------------------------------------------

/// A JSON number, read as f64 (integers too). Float edge: scene parsing
/// only; `Scalar::from_f64` turns it into fixed point before any world is
/// built.
#[derive(Clone, Copy, Debug)]
pub(super) struct Num(pub(super) f64);

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
pub(super) struct V2(pub(super) Num, pub(super) Num);

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
pub(super) struct SceneJson {
    /// Checked after parsing, so that a wrong version is reported as such.
    pub(super) version: serde_json::Value,
    /// Informational only.
    #[allow(dead_code)]
    pub(super) name: Option<String>,
    /// Informational only.
    #[allow(dead_code)]
    pub(super) description: Option<String>,
    pub(super) world: Option<WorldTracked>,
    pub(super) bodies: BodyList,
    pub(super) joints: Option<JointList>,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a scene object")]
pub(super) struct VersionProbe {
    pub(super) version: serde_json::Value,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, expecting = "a world settings object")]
pub(super) struct WorldJson {
    pub(super) gravity: Option<V2>,
    pub(super) tick_rate: Option<u32>,
    pub(super) substeps: Option<u32>,
    pub(super) enable_sleep: Option<bool>,
    pub(super) contact_hertz: Option<Num>,
    pub(super) contact_damping_ratio: Option<Num>,
    pub(super) contact_push_max_velocity: Option<Num>,
    pub(super) restitution_threshold: Option<Num>,
    pub(super) max_linear_speed: Option<Num>,
    pub(super) time_to_sleep: Option<Num>,
    pub(super) enable_continuous: Option<bool>,
    pub(super) hit_event_threshold: Option<Num>,
}

/// The world object, with the cursor set while it is read.
#[derive(Debug)]
pub(super) struct WorldTracked(pub(super) WorldJson);

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
pub(super) fn one_of<'de, D: Deserializer<'de>>(
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
pub(super) enum BodyKindJson {
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
pub(super) struct BodyJson {
    pub(super) id: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: BodyKindJson,
    pub(super) position: Option<V2>,
    pub(super) angle: Option<Num>,
    pub(super) linear_velocity: Option<V2>,
    pub(super) angular_velocity: Option<Num>,
    pub(super) linear_damping: Option<Num>,
    pub(super) angular_damping: Option<Num>,
    pub(super) gravity_scale: Option<Num>,
    pub(super) sleep_threshold: Option<Num>,
    pub(super) enable_sleep: Option<bool>,
    pub(super) awake: Option<bool>,
    pub(super) fixed_rotation: Option<bool>,
    pub(super) bullet: Option<bool>,
    pub(super) allow_fast_rotation: Option<bool>,
    pub(super) user_data: Option<u64>,
    pub(super) shapes: Option<ShapeList>,
}

/// A top-level list of the scene (bodies, joints): each element's index is
/// recorded for error messages, and a list longer than `MAX` is refused
/// before anything past the limit is stored.
pub(super) trait TopLevelItem {
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
pub(super) struct BoundedList<T>(pub(super) Vec<T>);

pub(super) type BodyList = BoundedList<BodyJson>;

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
pub(super) enum ShapeKindJson {
    Circle,
    Box,
    Polygon,
    Capsule,
    Segment,
    Chain,
}

pub(super) const SHAPE_KINDS: [(ShapeKindJson, &str); 6] = [
    (ShapeKindJson::Circle, "circle"),
    (ShapeKindJson::Box, "box"),
    (ShapeKindJson::Polygon, "polygon"),
    (ShapeKindJson::Capsule, "capsule"),
    (ShapeKindJson::Segment, "segment"),
    (ShapeKindJson::Chain, "chain"),
];

impl<'de> Deserialize<'de> for ShapeKindJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ShapeKindJson, D::Error> {
        const NAMES: [&str; 6] = ["circle", "box", "polygon", "capsule", "segment", "chain"];
        Ok(SHAPE_KINDS[one_of(d, &NAMES)?].0)
    }
}

impl ShapeKindJson {
    pub(super) fn name(self) -> &'static str {
        SHAPE_KINDS
            .iter()
            .find(|k| k.0 == self)
            .map_or("shape", |k| k.1)
    }

    /// (geometry fields allowed, of which required).
    pub(super) fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
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
            ShapeKindJson::Chain => (&["points", "loop"], &["points"]),
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, expecting = "a shape object")]
pub(super) struct ShapeJson {
    #[serde(rename = "type")]
    pub(super) kind: ShapeKindJson,
    pub(super) center: Option<V2>,
    pub(super) radius: Option<Num>,
    pub(super) half_width: Option<Num>,
    pub(super) half_height: Option<Num>,
    pub(super) angle: Option<Num>,
    pub(super) vertices: Option<Vec<V2>>,
    pub(super) center1: Option<V2>,
    pub(super) center2: Option<V2>,
    pub(super) point1: Option<V2>,
    pub(super) point2: Option<V2>,
    /// A chain's points (4 or more).
    pub(super) points: Option<Vec<V2>>,
    /// Whether a chain closes on itself.
    #[serde(rename = "loop")]
    pub(super) is_loop: Option<bool>,
    pub(super) density: Option<Num>,
    pub(super) friction: Option<Num>,
    pub(super) restitution: Option<Num>,
    pub(super) filter: Option<FilterJson>,
    pub(super) user_data: Option<u64>,
    pub(super) sensor: Option<bool>,
    pub(super) enable_contact_events: Option<bool>,
    pub(super) enable_hit_events: Option<bool>,
    pub(super) enable_sensor_events: Option<bool>,
}

impl ShapeJson {
    /// Geometry fields (and density) that are present, by name.
    pub(super) fn present(&self) -> [(&'static str, bool); 13] {
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
            ("points", self.points.is_some()),
            ("loop", self.is_loop.is_some()),
            ("density", self.density.is_some()),
        ]
    }
}

#[derive(Debug)]
pub(super) struct ShapeList(pub(super) Vec<ShapeJson>);

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
pub(super) struct FilterJson {
    pub(super) category: Option<u32>,
    pub(super) mask: Option<u32>,
    pub(super) group: Option<i32>,
}
