//! Building the world from the records: settings, bodies and shapes, every
//! value checked and every error naming its body, shape and field.

use super::*;

// Building the world.
// ---------------------------------------------------------------------------

/// Bound shared by most tuning values (damping, gravity, hertz, …).
pub(super) const TUNING_BOUND: Scalar = Scalar::from_int(1000);
/// Angular speed limit (rad/s) at any tick rate; a body's own cap (a
/// quarter turn per step, or per substep with `allow_fast_rotation`) where
/// that is higher. The step caps a faster start at the body's cap.
pub(super) const MAX_ANGULAR_VELOCITY: Scalar = Scalar::from_int(47);

pub(super) fn world_def(w: Option<&WorldTracked>) -> Result<WorldDef, SceneError> {
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

pub(super) fn build_world(scene: &SceneJson) -> Result<World, SceneError> {
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

pub(super) fn build_body(
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
    let fast = b.allow_fast_rotation.unwrap_or(d.allow_fast_rotation);
    let cap = crate::dynamics::body::angular_speed_cap(wdef.tick_rate, wdef.substeps, fast)
        .max(MAX_ANGULAR_VELOCITY);
    let def = BodyDef {
        kind,
        position,
        rotation,
        linear_velocity: opt(b.linear_velocity, Vec2::ZERO, |v| {
            ranged_vec(at, "linear_velocity", v, max_v)
        })?,
        angular_velocity: opt(b.angular_velocity, Scalar::ZERO, |v| {
            ranged(at, "angular_velocity", v, -cap, cap)
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
        allow_fast_rotation: fast,
    };
    let id = world
        .create_body(&def)
        .map_err(|e| invalid(at, e.to_string()))?;
    let xf = world
        .transform(id)
        .map_err(|e| invalid(at, e.to_string()))?;
    let mut load: i128 = 0;
    // Shapes made on this body: a chain record makes one per segment.
    let mut count = 0usize;
    if let Some(shapes) = &b.shapes {
        for (j, s) in shapes.0.iter().enumerate() {
            let sat = Location::Shape {
                body: index,
                id: b.id.clone(),
                index: j,
            };
            build_shape(world, id, kind, xf, s, &sat, (&mut load, &mut count))?;
        }
    }
    Ok(id)
}

pub(super) fn material(
    at: &Location,
    s: &ShapeJson,
    kind: BodyKind,
) -> Result<ShapeDef, SceneError> {
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

pub(super) fn build_shape(
    world: &mut World,
    body: BodyId,
    kind: BodyKind,
    xf: Transform,
    s: &ShapeJson,
    at: &Location,
    (load, count): (&mut i128, &mut usize),
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
    if s.kind == ShapeKindJson::Chain {
        return build_chain(world, body, xf, s, &def, at, count);
    }
    *count += 1;
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

/// A chain record: one chain segment shape per segment, counted against
/// the body's shape limit (a record's points are not a shape each).
fn build_chain(
    world: &mut World,
    body: BodyId,
    xf: Transform,
    s: &ShapeJson,
    def: &crate::dynamics::ShapeDef,
    at: &Location,
    count: &mut usize,
) -> Result<(), SceneError> {
    let raw = required(at, s.points.as_ref(), "points")?;
    let is_loop = s.is_loop.unwrap_or(false);
    let segments = if is_loop {
        raw.len()
    } else {
        raw.len().saturating_sub(3)
    };
    if raw.len() < 4 {
        return Err(invalid(
            at,
            format!("chain has {} points; it needs at least 4", raw.len()),
        ));
    }
    if world.shape_count() + segments > MAX_SHAPES {
        return Err(invalid(
            at,
            format!(
                "chain makes {segments} segments; a scene may have at most {MAX_SHAPES} shapes"
            ),
        ));
    }
    if *count + segments > MAX_SHAPES_PER_BODY {
        return Err(invalid(
            at,
            format!(
                "chain makes {segments} segments; a body may have at most {MAX_SHAPES_PER_BODY} shapes"
            ),
        ));
    }
    let mut points = Vec::with_capacity(raw.len());
    for (k, v) in raw.iter().enumerate() {
        points.push(point(at, &format!("points[{k}]"), *v)?);
    }
    let geometry = chain_segments(&points, is_loop).map_err(|e| geometry_error(at, e))?;
    for g in &geometry {
        if !ShapeGeometry::ChainSegment(*g).aabb(xf).within_world() {
            return Err(invalid(
                at,
                "chain extends outside the world bounds of ±10000 (body position plus points)",
            ));
        }
    }
    world
        .create_chain(body, def, &points, is_loop)
        .map_err(|e| invalid(at, e.to_string()))?;
    *count += segments;
    Ok(())
}

pub(super) fn required<T: Copy>(at: &Location, v: Option<T>, field: &str) -> Result<T, SceneError> {
    v.ok_or_else(|| invalid(at, format!("missing field {field:?}")))
}

pub(super) fn geometry_error(at: &Location, e: GeometryError) -> SceneError {
    invalid(at, e.to_string())
}

pub(super) fn geometry(at: &Location, s: &ShapeJson) -> Result<ShapeGeometry, SceneError> {
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
        ShapeKindJson::Chain => {
            // Built by `build_chain`: many shapes, not one.
            return Err(invalid(at, "a chain is not a single geometry"));
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
