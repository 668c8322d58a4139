//! The JSON scene format: example scenes load and run, every kind of bad
//! input is rejected with a message naming the body, shape and field, and no
//! input panics.

use bitroom_sim::dynamics::{DistanceJoint, RevoluteJoint};
use bitroom_sim::scene::json::{Location, MAX_BODIES, MAX_JOINTS, MAX_SCENE_BYTES};
use bitroom_sim::scene::{parse_scene, SceneError};
use bitroom_sim::{BodyId, BodyKind, JointKind, Scalar, ShapeDef, Vec2, World};
use proptest::prelude::*;

const STACK: &str = include_str!("../../scenes/stack.json");
const PLAYGROUND: &str = include_str!("../../scenes/playground.json");
const BOUNCE: &str = include_str!("../../scenes/bounce.json");
const EVENTS: &str = include_str!("../../scenes/events.json");
const BRIDGE: &str = include_str!("../../scenes/bridge.json");
const JOINTS: &str = include_str!("../../scenes/joints.json");
const VALLEY: &str = include_str!("../../scenes/valley.json");
const EXAMPLES: &[(&str, &str)] = &[
    ("stack", STACK),
    ("playground", PLAYGROUND),
    ("bounce", BOUNCE),
    ("events", EVENTS),
    ("bridge", BRIDGE),
    ("joints", JOINTS),
    ("valley", VALLEY),
];

fn err(text: &str) -> String {
    match parse_scene(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e.to_string(),
    }
}

/// Asserts that parsing fails with a message containing every fragment.
#[track_caller]
fn assert_err(text: &str, fragments: &[&str]) {
    let e = err(text);
    for f in fragments {
        assert!(e.contains(f), "error {e:?} does not contain {f:?}");
    }
}

/// A scene with one body (given as JSON text) after a static ground.
fn with_body(body: &str) -> String {
    format!(
        r#"{{"version": 1, "bodies": [
  {{"id": "ground", "type": "static", "shapes": [{{"type": "box", "half_width": 10, "half_height": 1}}]}},
  {body}
]}}"#
    )
}

/// A scene with one dynamic body named "crate" carrying one shape.
fn with_shape(shape: &str) -> String {
    with_body(&format!(
        r#"{{"id": "crate", "type": "dynamic", "position": [0, 3], "shapes": [{shape}]}}"#
    ))
}

fn body_by_user_data(w: &World, data: u64) -> BodyId {
    w.bodies()
        .find(|&b| w.user_data(b).unwrap() == data)
        .expect("body")
}

// ----- example scenes -------------------------------------------------------

#[test]
fn example_scenes_parse_and_step() {
    for (name, text) in EXAMPLES {
        let mut w = parse_scene(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(w.body_count() > 0, "{name}");
        for _ in 0..60 {
            w.step();
        }
        assert_eq!(w.tick(), 60, "{name}");
    }
}

#[test]
fn every_file_in_scenes_is_covered() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenes");
    for entry in std::fs::read_dir(dir).expect("scenes/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).expect("read");
            let mut w = parse_scene(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for _ in 0..60 {
                w.step();
            }
        }
    }
}

#[test]
fn documented_example_parses_and_steps() {
    let doc = include_str!("../../docs/scene-format.md");
    let start = doc.find("```json\n").expect("json example") + "```json\n".len();
    let end = start + doc[start..].find("```").expect("end of example");
    let mut w = parse_scene(&doc[start..end]).unwrap_or_else(|e| panic!("docs example: {e}"));
    assert_eq!(w.body_count(), 4);
    for _ in 0..60 {
        w.step();
    }
}

#[test]
fn stack_has_the_ground_and_ten_boxes_and_stays_up() {
    let mut w = parse_scene(STACK).unwrap();
    assert_eq!(w.body_count(), 11);
    let kinds: Vec<BodyKind> = w.bodies().map(|b| w.body_kind(b).unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == BodyKind::Static).count(), 1);
    for _ in 0..120 {
        w.step();
    }
    let top = w.position(body_by_user_data(&w, 10)).unwrap();
    assert!(top.y > Scalar::from_int(9), "top box fell to {:?}", top.y);
    assert!(
        top.x.abs() < Scalar::milli(100),
        "top box slid to {:?}",
        top.x
    );
}

#[test]
fn bounce_orders_rebound_heights_by_restitution() {
    let mut w = parse_scene(BOUNCE).unwrap();
    let balls = [1, 2, 3].map(|d| body_by_user_data(&w, d));
    // The balls land after about 83 steps; look a little after the bounce.
    for _ in 0..100 {
        w.step();
    }
    let y = balls.map(|b| w.position(b).unwrap().y);
    let vy = balls.map(|b| w.linear_velocity(b).unwrap().y);
    assert!(
        vy[0].abs() < Scalar::ONE,
        "dead ball should rest: {:?}",
        vy[0]
    );
    assert!(
        vy[1] > Scalar::ONE && vy[2] > vy[1],
        "rebound speeds {vy:?}"
    );
    assert!(y[2] > y[1] && y[1] > y[0], "heights {y:?}");
}

#[test]
fn playground_uses_materials_filters_and_kinematics() {
    let w = parse_scene(PLAYGROUND).unwrap();
    let crate_ = body_by_user_data(&w, 42);
    let shape = w.body_shapes(crate_).unwrap()[0];
    let def = w.shape_def(shape).unwrap();
    assert_eq!(def.density, Scalar::from_int(2));
    let kinematic = w
        .bodies()
        .filter(|&b| w.body_kind(b).unwrap() == BodyKind::Kinematic)
        .count();
    assert_eq!(kinematic, 1);
    let ghosts = w
        .bodies()
        .flat_map(|b| w.body_shapes(b).unwrap())
        .filter(|&s| w.shape_def(s).unwrap().filter.group == -1)
        .count();
    assert_eq!(ghosts, 2);
}

#[test]
fn defaults_follow_box2d() {
    let w = parse_scene(&with_shape(r#"{"type": "circle", "radius": 0.5}"#)).unwrap();
    let b = w
        .bodies()
        .find(|&b| w.body_kind(b).unwrap() == BodyKind::Dynamic)
        .unwrap();
    let def = w.shape_def(w.body_shapes(b).unwrap()[0]).unwrap();
    assert_eq!(def.density, Scalar::ONE);
    assert_eq!(def.friction, ShapeDef::default().friction);
    assert_eq!(def.restitution, Scalar::ZERO);
    assert_eq!(
        (def.filter.category, def.filter.mask, def.filter.group),
        (1, u32::MAX, 0)
    );
    assert_eq!(w.settings().tick_rate, 60);
    assert_eq!(w.settings().substeps, 4);
}

#[test]
fn numbers_round_to_nearest() {
    let w = parse_scene(&with_body(
        r#"{"type": "dynamic", "position": [0.1, -2.5]}"#,
    ))
    .unwrap();
    let b = w
        .bodies()
        .find(|&b| w.body_kind(b).unwrap() == BodyKind::Dynamic)
        .unwrap();
    let p = w.position(b).unwrap();
    assert_eq!(p.x, Scalar::parse_decimal("0.1").unwrap());
    assert_eq!(p.y, Scalar::parse_decimal("-2.5").unwrap());
}

#[test]
fn awake_false_starts_asleep() {
    let w = parse_scene(&with_body(
        r#"{"type": "dynamic", "position": [0, 3], "awake": false, "shapes": [{"type": "circle", "radius": 0.5}]}"#,
    ))
    .unwrap();
    let b = w
        .bodies()
        .find(|&b| w.body_kind(b).unwrap() == BodyKind::Dynamic)
        .unwrap();
    assert!(!w.is_awake(b).unwrap());
}

#[test]
fn sensors_bullets_and_event_switches_reach_the_world() {
    let defaults = parse_scene(&with_shape(r#"{"type": "circle", "radius": 0.5}"#)).unwrap();
    let d = defaults.settings();
    assert!(d.enable_continuous);
    assert_eq!(d.hit_event_threshold, Scalar::ONE);
    let crate_def = |w: &World| {
        let b = w
            .bodies()
            .find(|&b| w.body_kind(b).unwrap() == BodyKind::Dynamic)
            .unwrap();
        (
            w.is_bullet(b).unwrap(),
            w.shape_def(w.body_shapes(b).unwrap()[0]).unwrap(),
        )
    };
    let (bullet, def) = crate_def(&defaults);
    assert!(!bullet);
    assert!(!def.is_sensor && def.enable_contact_events && !def.enable_hit_events);
    assert!(def.enable_sensor_events);
    let text = r#"{"version": 1,
        "world": {"enable_continuous": false, "hit_event_threshold": 2.5},
        "bodies": [{"type": "dynamic", "bullet": true, "shapes": [{"type": "circle", "radius": 0.5,
            "sensor": true, "enable_contact_events": false, "enable_hit_events": true,
            "enable_sensor_events": false}]}]}"#;
    let w = parse_scene(text).unwrap();
    assert!(!w.settings().enable_continuous);
    assert_eq!(
        w.settings().hit_event_threshold,
        Scalar::parse_decimal("2.5").unwrap()
    );
    let (bullet, def) = crate_def(&w);
    assert!(bullet);
    assert!(def.is_sensor && !def.enable_contact_events && def.enable_hit_events);
    assert!(!def.enable_sensor_events);
}

// ----- bad input -------------------------------------------------------------

/// `allow_fast_rotation` reaches the world and raises the bound on a
/// body's starting spin to its cap (a quarter turn per substep: 60π rad/s
/// at 60 Hz and 4 substeps); without it the bound is 47 rad/s, or the
/// step's cap where that is higher (0.25π · 120 ≈ 94.2 at 120 Hz). The
/// first step caps the spin at Box2D's cap.
#[test]
fn fast_rotation_reaches_the_world_and_bounds_the_spin() {
    let wheel = |extra: &str| {
        with_body(&format!(
            r#"{{"type": "dynamic", "position": [0, 5], "user_data": 7, {extra}
                "shapes": [{{"type": "circle", "radius": 0.4}}]}}"#
        ))
    };
    let spin_after_a_step = |text: &str| {
        let mut w = parse_scene(text).unwrap();
        let b = body_by_user_data(&w, 7);
        let fast = w.allows_fast_rotation(b).unwrap();
        w.step();
        (fast, w.angular_velocity(b).unwrap().to_f64())
    };
    let (fast, spin) = spin_after_a_step(&wheel(
        r#""allow_fast_rotation": true, "angular_velocity": 150,"#,
    ));
    assert!(fast);
    assert!((spin - 150.0).abs() < 1e-6, "{spin}");
    let (fast, spin) = spin_after_a_step(&wheel(r#""angular_velocity": 47,"#));
    assert!(!fast);
    assert!((spin - 47.0).abs() < 1e-6, "{spin}");
    // 0.25π · 120: a start at 90 rad/s is kept at 120 Hz, and one at 47
    // at 30 Hz is capped at 0.25π · 30 by the first step.
    let at_rate = |rate: u32, spin: &str| {
        wheel(spin).replacen(
            r#"{"version": 1,"#,
            &format!(r#"{{"version": 1, "world": {{"tick_rate": {rate}}},"#),
            1,
        )
    };
    let (_, spin) = spin_after_a_step(&at_rate(120, r#""angular_velocity": 90,"#));
    assert!((spin - 90.0).abs() < 1e-6, "{spin}");
    let (_, spin) = spin_after_a_step(&at_rate(30, r#""angular_velocity": 47,"#));
    assert!((spin - 7.5 * std::f64::consts::PI).abs() < 1e-6, "{spin}");
    // A kinematic body too, as Box2D's (nothing else ever caps it).
    let turntable = at_rate(30, r#""angular_velocity": 47,"#).replace("dynamic", "kinematic");
    let (_, spin) = spin_after_a_step(&turntable);
    assert!((spin - 7.5 * std::f64::consts::PI).abs() < 1e-6, "{spin}");
    assert_err(
        &wheel(r#""angular_velocity": 150,"#),
        &["body 1: angular_velocity 150 is out of range (allowed -47.1239 to 47.1239)"],
    );
    assert_err(
        &wheel(r#""allow_fast_rotation": true, "angular_velocity": 190,"#),
        &["body 1: angular_velocity 190 is out of range"],
    );
    assert_err(
        &with_body(r#"{"type": "dynamic", "allow_fast_rotation": 1}"#),
        &["body 1: invalid type: integer 1, expected a boolean"],
    );
}

#[test]
fn bad_sensor_bullet_and_event_values() {
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "sensor": 1}"#),
        &[r#"body 1 ("crate"), shape 0: invalid type: integer 1, expected a boolean"#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "enable_hit_events": "yes"}"#),
        &[r#"shape 0: invalid type: string "yes", expected a boolean"#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "is_sensor": true}"#),
        &[r#"shape 0: unknown field "is_sensor""#],
    );
    assert_err(
        &with_body(r#"{"type": "static", "bullet": true}"#),
        &[r#"body 1: "bullet" applies only to dynamic bodies"#],
    );
    assert_err(
        &with_body(r#"{"id": "lift", "type": "kinematic", "bullet": true}"#),
        &[r#"body 1 ("lift"): "bullet" applies only to dynamic bodies"#],
    );
    // `false` is fine anywhere.
    parse_scene(&with_body(r#"{"type": "static", "bullet": false}"#)).unwrap();
    assert_err(
        &with_body(r#"{"type": "dynamic", "bullet": 0}"#),
        &["body 1: invalid type: integer 0, expected a boolean"],
    );
    assert_err(
        r#"{"version": 1, "world": {"hit_event_threshold": -1}, "bodies": []}"#,
        &["world: hit_event_threshold -1 is out of range (allowed 0 to 1000)"],
    );
    assert_err(
        r#"{"version": 1, "world": {"hit_event_threshold": 1e9}, "bodies": []}"#,
        &["world: hit_event_threshold 1e9 is out of range"],
    );
    assert_err(
        r#"{"version": 1, "world": {"enable_continuous": "on"}, "bodies": []}"#,
        &[r#"world: invalid type: string "on", expected a boolean"#],
    );
}

#[test]
fn non_convex_polygon() {
    let dart = r#"{"type": "polygon", "vertices": [[0, 0], [4, 0], [1, 1], [0, 4]]}"#;
    assert_err(
        &with_shape(dart),
        &[r#"body 1 ("crate"), shape 0: polygon is not convex (vertex 2)"#],
    );
    // Clockwise input reports the vertex as written.
    let cw = r#"{"type": "polygon", "vertices": [[0, 4], [1, 1], [4, 0], [0, 0]]}"#;
    assert_err(
        &with_shape(cw),
        &["shape 0: polygon is not convex (vertex 1)"],
    );
    let collinear = r#"{"type": "polygon", "vertices": [[0, 0], [1, 0], [2, 0], [1, 1]]}"#;
    assert_err(&with_shape(collinear), &["shape 0: polygon is not convex"]);
    let duplicate = r#"{"type": "polygon", "vertices": [[0, 0], [1, 0], [1, 0], [1, 1]]}"#;
    assert_err(
        &with_shape(duplicate),
        &["vertices 1 and 2 are closer than 0.005"],
    );
}

#[test]
fn polygon_vertex_count() {
    let nine: Vec<String> = (0..9)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / 9.0;
            format!("[{:.4}, {:.4}]", a.cos(), a.sin())
        })
        .collect();
    let shape = format!(
        r#"{{"type": "polygon", "vertices": [{}]}}"#,
        nine.join(", ")
    );
    assert_err(
        &with_shape(&shape),
        &[r#"body 1 ("crate"), shape 0: polygon has 9 vertices; it needs 3 to 8"#],
    );
    let two = r#"{"type": "polygon", "vertices": [[0, 0], [1, 0]]}"#;
    assert_err(&with_shape(two), &["polygon has 2 vertices"]);
    let bad_pair = r#"{"type": "polygon", "vertices": [[0, 0], [1], [1, 1]]}"#;
    assert_err(
        &with_shape(bad_pair),
        &[
            "shape 0: invalid length 1, expected an [x, y] array",
            "line 3",
        ],
    );
}

#[test]
fn density() {
    let zero = r#"{"type": "box", "half_width": 1, "half_height": 1, "density": 0}"#;
    assert_err(
        &with_shape(zero),
        &[r#"body 1 ("crate"), shape 0: density 0 must be positive on a dynamic body"#],
    );
    let negative = r#"{"type": "circle", "radius": 1, "density": -2}"#;
    assert_err(
        &with_shape(negative),
        &["shape 0: density -2 must not be negative"],
    );
    // Zero density is fine on a static body; negative is not.
    parse_scene(&with_body(
        r#"{"type": "static", "shapes": [{"type": "circle", "radius": 1, "density": 0}]}"#,
    ))
    .unwrap();
    assert_err(
        &with_body(
            r#"{"type": "static", "shapes": [{"type": "circle", "radius": 1, "density": -1}]}"#,
        ),
        &["body 1, shape 0: density -1 must not be negative"],
    );
    let huge = r#"{"type": "circle", "radius": 1, "density": 1e6}"#;
    assert_err(
        &with_shape(huge),
        &["density 1000000 is out of range (allowed 0 to 100000)"],
    );
    let tiny = r#"{"type": "circle", "radius": 0.01, "density": 1e-9}"#;
    assert_err(&with_shape(tiny), &["shape mass rounds to zero"]);
    let segment_density =
        r#"{"type": "segment", "point1": [0, 0], "point2": [1, 0], "density": 1}"#;
    assert_err(
        &with_shape(segment_density),
        &[r#"field "density" does not apply to a segment shape"#],
    );
}

#[test]
fn sizes() {
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 0}"#),
        &[r#"shape 0: radius 0 must be positive"#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": -1}"#),
        &["radius -1 must be positive"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 0.001}"#),
        &["radius 0.001 is below the minimum size of 0.005"],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": -0.5, "half_height": 1}"#),
        &[r#"body 1 ("crate"), shape 0: half_width -0.5 must be positive"#],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 1, "half_height": 0}"#),
        &["half_height 0 must be positive"],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 1, "half_height": 1, "radius": -0.1}"#),
        &["radius -0.1 is out of range (allowed 0 to 10000)"],
    );
    assert_err(
        &with_shape(r#"{"type": "capsule", "center1": [0, 0], "center2": [0, 0], "radius": 1}"#),
        &["center1 and center2 are closer than 0.005"],
    );
    assert_err(
        &with_shape(r#"{"type": "capsule", "center1": [0, 0], "center2": [1, 0], "radius": 0}"#),
        &["shape 0: radius 0 must be positive"],
    );
    assert_err(
        &with_body(
            r#"{"type": "static", "shapes": [{"type": "segment", "point1": [1, 1], "point2": [1, 1]}]}"#,
        ),
        &["body 1, shape 0: point1 and point2 are closer than 0.005"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 20000}"#),
        &["radius 20000 is larger than 10000"],
    );
}

#[test]
fn world_bounds() {
    assert_err(
        &with_body(r#"{"type": "dynamic", "position": [20000, 0]}"#),
        &["body 1: position.x 20000 is outside the world bounds of ±10000"],
    );
    assert_err(
        &with_body(r#"{"id": "far", "type": "static", "position": [0, -1e300]}"#),
        &[r#"body 1 ("far"): position.y -1e300 is outside the world bounds of ±10000"#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "center": [0, 10001], "radius": 1}"#),
        &["shape 0: center.y 10001 is outside the world bounds"],
    );
    assert_err(
        &with_shape(r#"{"type": "polygon", "vertices": [[0, 0], [1, 0], [0, -10000.5]]}"#),
        &["shape 0: vertices[2].y -10000.5 is outside the world bounds"],
    );
    // Each coordinate is in bounds, but body position plus offset is not.
    assert_err(
        &with_body(
            r#"{"type": "static", "position": [9999, 0], "shapes": [{"type": "segment", "point1": [0, 0], "point2": [5, 0]}]}"#,
        ),
        &["body 1, shape 0: shape extends outside the world bounds"],
    );
    assert_err(
        &with_body(r#"{"type": "dynamic", "angle": 1e5}"#),
        &["angle 100000 is out of range"],
    );
    assert_err(
        &with_body(r#"{"type": "dynamic", "linear_velocity": [0, 1000]}"#),
        &["body 1: linear_velocity.y 1000 is out of range (allowed -400 to 400)"],
    );
    assert_err(
        &with_body(r#"{"type": "dynamic", "angular_velocity": 100}"#),
        &["angular_velocity 100 is out of range (allowed -47.1239 to 47.1239)"],
    );
    assert_err(
        &with_body(r#"{"type": "dynamic", "linear_damping": -1}"#),
        &["linear_damping -1 is out of range"],
    );
    assert_err(
        &with_body(r#"{"type": "static", "linear_velocity": [1, 0]}"#),
        &[r#"body 1: a static body cannot have "linear_velocity""#],
    );
    assert_err(
        r#"{"version": 1, "world": {"gravity": [0, -1e4]}, "bodies": []}"#,
        &["world: gravity.y -10000 is out of range (allowed -1000 to 1000)"],
    );
    assert_err(
        r#"{"version": 1, "world": {"tick_rate": 0}, "bodies": []}"#,
        &["world: tick_rate 0 is out of range"],
    );
    assert_err(
        r#"{"version": 1, "world": {"substeps": 65}, "bodies": []}"#,
        &["world: substeps 65 is out of range"],
    );
    assert_err(
        r#"{"version": 1, "world": {"contact_hertz": 0}, "bodies": []}"#,
        &["world: contact_hertz 0 is out of range (must be above 0"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "restitution": 1.5}"#),
        &["restitution 1.5 is out of range"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "friction": -0.1}"#),
        &["friction -0.1 is out of range"],
    );
}

#[test]
fn dynamic_mass_must_fit_fixed_point() {
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 150, "half_height": 1}"#),
        &["shape 0: shape reaches", "must stay within 100 m"],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 60, "half_height": 60, "density": 100}"#),
        &["shape 0: density 100 is too high for a body this large"],
    );
    // Large static geometry is fine.
    parse_scene(&with_body(r#"{"type": "static", "shapes": [{"type": "box", "half_width": 5000, "half_height": 5000}]}"#))
        .unwrap();
}

#[test]
fn unknown_fields() {
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "colour": "red"}]}"#,
        &[r#"body 0: unknown field "colour""#, "line 1 column"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "colour": "red"}"#),
        &[
            r#"body 1 ("crate"), shape 0: unknown field "colour""#,
            "line 3 column",
        ],
    );
    assert_err(
        r#"{"version": 1, "bodies": [], "gravity": [0, -10]}"#,
        &[r#"unknown field "gravity""#, "line 1"],
    );
    assert_err(
        r#"{"version": 1, "world": {"gravty": [0, -10]}, "bodies": []}"#,
        &[r#"world: unknown field "gravty""#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "filter": {"categories": 1}}"#),
        &[r#"shape 0: unknown field "categories""#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "half_width": 1}"#),
        &[r#"shape 0: field "half_width" does not apply to a circle shape"#],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 1, "half_height": 1, "vertices": [[0, 0]]}"#),
        &[r#"field "vertices" does not apply to a box shape"#],
    );
}

#[test]
fn missing_fields() {
    assert_err(
        r#"{"bodies": []}"#,
        &[r#"missing field "version""#, "line 1"],
    );
    assert_err(r#"{"version": 1}"#, &[r#"missing field "bodies""#]);
    assert_err(
        r#"{"version": 1, "bodies": [{}, {"position": [0, 0]}]}"#,
        &[r#"body 0: missing field "type""#],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"id": "b", "type": "static", "shapes": [{"radius": 1}]}]}"#,
        &[r#"body 0 ("b"), shape 0: missing field "type""#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle"}"#),
        &[r#"body 1 ("crate"), shape 0: missing field "radius""#],
    );
    assert_err(
        &with_shape(r#"{"type": "box", "half_width": 1}"#),
        &[r#"missing field "half_height""#],
    );
    assert_err(
        &with_shape(r#"{"type": "polygon"}"#),
        &[r#"missing field "vertices""#],
    );
    assert_err(
        &with_shape(r#"{"type": "capsule", "center1": [0, 0], "radius": 1}"#),
        &[r#"missing field "center2""#],
    );
    assert_err(
        &with_shape(r#"{"type": "segment", "point2": [0, 0]}"#),
        &[r#"missing field "point1""#],
    );
}

#[test]
fn wrong_version() {
    assert_eq!(
        parse_scene(r#"{"version": 2, "bodies": []}"#).unwrap_err(),
        SceneError::Version { found: "2".into() }
    );
    assert_err(
        r#"{"version": "1", "bodies": []}"#,
        &[r#"unsupported scene version "1""#],
    );
    assert_err(
        r#"{"version": 1.5, "bodies": []}"#,
        &["unsupported scene version 1.5"],
    );
    // A newer version with unknown fields reports the version, not the fields.
    assert_err(
        r#"{"version": 3, "joints": [], "bodies": []}"#,
        &["unsupported scene version 3"],
    );
}

#[test]
fn empty_and_invalid_json() {
    assert_eq!(parse_scene("").unwrap_err(), SceneError::Empty);
    assert_eq!(parse_scene(" \n\t").unwrap_err(), SceneError::Empty);
    assert_err("{", &["line 1 column 1"]);
    assert_err("@", &["expected value at line 1 column 1"]);
    assert_err(
        r#"{"version": 1, "bodies": []} trailing"#,
        &["trailing characters at line 1"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static",}]}"#,
        &["body 0: trailing comma at line 1"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "position": [NaN, 0]}]}"#,
        &["body 0: expected value"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "position": [1e999, 0]}]}"#,
        &["body 0: number out of range at line 1"],
    );
    assert_err("[]", &["invalid length 0, expected a scene object"]);
    assert_err("42", &["invalid type: integer 42, expected a scene object"]);
    // A byte-order mark is tolerated.
    parse_scene("\u{feff}{\"version\": 1, \"bodies\": []}").unwrap();
}

#[test]
fn wrong_types() {
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "position": "origin"}]}"#,
        &[r#"body 0: invalid type: string "origin", expected an [x, y] array of two numbers"#],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": "1"}"#),
        &[r#"shape 0: invalid type: string "1", expected a number"#],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": 5}]}"#,
        &[r#"body 0: invalid type: integer 5, expected one of "static", "kinematic", "dynamic""#],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "wobbly"}]}"#,
        &[r#"body 0: unknown variant "wobbly", expected one of "static", "kinematic", "dynamic""#],
    );
    assert_err(
        &with_shape(r#"{"type": "star", "radius": 1}"#),
        &[r#"shape 0: unknown variant "star""#],
    );
    assert_err(
        r#"{"version": 1, "bodies": {}}"#,
        &["invalid type: map, expected an array of bodies"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "awake": 1}]}"#,
        &["body 0: invalid type: integer 1, expected a boolean"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "user_data": -1}]}"#,
        &["body 0: invalid value: integer -1"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "user_data": 1.5}]}"#,
        &["body 0: invalid type: floating point"],
    );
    assert_err(
        &with_shape(r#"{"type": "circle", "radius": 1, "filter": {"mask": 4294967296}}"#),
        &["shape 0: invalid value: integer 4294967296, expected u32"],
    );
    assert_err(
        r#"{"version": 1, "world": {"tick_rate": 60.5}, "bodies": []}"#,
        &["world: invalid type: floating point"],
    );
    assert_err(
        r#"{"version": 1, "bodies": [{"type": "static", "position": [1, 2, 3]}]}"#,
        &["invalid length 3"],
    );
}

#[test]
fn ids() {
    assert_err(
        r#"{"version": 1, "bodies": [{"id": "a", "type": "static"}, {"id": "a", "type": "static"}]}"#,
        &[r#"body 1 ("a"): id "a" is already used by body 0"#],
    );
    let long = "x".repeat(300);
    let e = err(&format!(
        r#"{{"version": 1, "bodies": [{{"id": "{long}", "type": "static"}}]}}"#
    ));
    assert_eq!(e, "body 0: id is longer than 256 bytes");
}

#[test]
fn limits() {
    let big = " ".repeat(MAX_SCENE_BYTES + 1);
    assert_eq!(
        parse_scene(&big).unwrap_err(),
        SceneError::TooLarge {
            bytes: MAX_SCENE_BYTES + 1
        }
    );

    let mut many = String::from(r#"{"version": 1, "bodies": ["#);
    for i in 0..=MAX_BODIES {
        if i > 0 {
            many.push(',');
        }
        many.push_str(r#"{"type":"static"}"#);
    }
    many.push_str("]}");
    assert_eq!(
        parse_scene(&many).unwrap_err(),
        SceneError::TooMany {
            at: Location::Scene,
            what: "bodies",
            limit: MAX_BODIES
        }
    );

    let shapes = vec![r#"{"type":"circle","radius":1}"#; 1025].join(",");
    let e = err(&format!(
        r#"{{"version": 1, "bodies": [{{"type": "static", "shapes": [{shapes}]}}]}}"#
    ));
    assert_eq!(e, "body 0: too many shapes on one body; the limit is 1024");

    // Deep nesting is an error, not a stack overflow.
    let deep = format!(
        r#"{{"version": 1, "bodies": [{{"type": "static", "x": {}{}}}]}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_err(&deep, &["body 0"]);
}

// ----- never panic -------------------------------------------------------------

#[test]
fn truncation_at_every_byte_never_panics() {
    for (name, text) in EXAMPLES {
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let prefix = String::from_utf8_lossy(&bytes[..cut]);
            let r = parse_scene(&prefix);
            // A proper prefix of a document is never a complete scene.
            assert!(
                r.is_err() || prefix.trim_end() == text.trim_end(),
                "{name} cut at {cut} parsed"
            );
        }
    }
}

fn mutate(text: &str, edits: &[(usize, u8)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(at, b) in edits {
        let i = at % bytes.len();
        bytes[i] = b;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Bytes that keep the text JSON-like, so mutations reach the checks.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(b"0123456789-.eE+".to_vec()),
        2 => prop::sample::select(b"{}[],:\" ".to_vec()),
        1 => any::<u8>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_bytes_never_panic(
        which in 0..EXAMPLES.len(),
        edits in prop::collection::vec((any::<usize>(), interesting_byte()), 1..6),
    ) {
        let text = mutate(EXAMPLES[which].1, &edits);
        if let Ok(mut w) = parse_scene(&text) {
            for _ in 0..3 {
                w.step();
            }
        }
    }

    #[test]
    fn extreme_numbers_never_panic(
        which in 0..EXAMPLES.len(),
        slot in any::<usize>(),
        value in prop_oneof![
            Just("0".to_string()),
            Just("-0".to_string()),
            Just("1e308".to_string()),
            Just("-1e308".to_string()),
            Just("1e-320".to_string()),
            Just("2147483648".to_string()),
            Just("18446744073709551616".to_string()),
            Just("0.0049".to_string()),
            Just("9999.999".to_string()),
            (-1.0e5..1.0e5f64).prop_map(|v| format!("{v}")),
            (-2.0..2.0f64).prop_map(|v| format!("{v}")),
        ],
    ) {
        // Replace the `slot`-th number in the document with `value`.
        let text = EXAMPLES[which].1;
        let starts: Vec<usize> = text
            .char_indices()
            .filter(|&(i, c)| {
                (c.is_ascii_digit() || c == '-')
                    && !text[..i].ends_with(|p: char| p.is_ascii_digit() || p == '.' || p == '-' || p == 'e')
            })
            .map(|(i, _)| i)
            .collect();
        let start = starts[slot % starts.len()];
        let len = text[start..]
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(text.len() - start);
        let edited = format!("{}{}{}", &text[..start], value, &text[start + len..]);
        if let Ok(mut w) = parse_scene(&edited) {
            for _ in 0..3 {
                w.step();
            }
        }
    }
}

// ----- joints ---------------------------------------------------------------

/// A scene with a ground, two boxes "a" (at (0, 2)) and "b" (at (2, 2)) and
/// the given joints (JSON array items).
fn with_joints(joints: &str) -> String {
    format!(
        r#"{{"version": 1, "bodies": [
  {{"id": "ground", "type": "static", "shapes": [{{"type": "box", "half_width": 10, "half_height": 1, "center": [0, -1]}}]}},
  {{"id": "a", "type": "dynamic", "position": [0, 2], "shapes": [{{"type": "box", "half_width": 0.5, "half_height": 0.5}}]}},
  {{"id": "b", "type": "dynamic", "position": [2, 2], "shapes": [{{"type": "box", "half_width": 0.5, "half_height": 0.5}}]}},
  {{"type": "dynamic", "position": [5, 2], "shapes": [{{"type": "circle", "radius": 0.5}}]}}
],
"joints": [{joints}]}}"#
    )
}

#[test]
fn joints_scene_has_every_joint_type() {
    let w = parse_scene(JOINTS).unwrap();
    let mut names: Vec<&str> = w
        .joints()
        .map(|j| w.joint_kind(j).unwrap().name())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names,
        [
            "angle",
            "distance",
            "friction",
            "motor",
            "prismatic",
            "pulley",
            "revolute",
            "target",
            "weld",
            "wheel"
        ]
    );
    // Fields reach the joints: the grab's user data and target.
    let grab = w
        .joints()
        .find(|&j| w.joint_user_data(j).unwrap() == 42)
        .expect("grab");
    let JointKind::Target(t) = w.joint_kind(grab).unwrap() else {
        panic!("grab is not a target joint")
    };
    assert_eq!(t.target, Vec2::from_ints(18, 4));
}

#[test]
fn joint_fields_and_anchors() {
    let w = parse_scene(&with_joints(
        r#"{"id": "hinge", "type": "revolute", "body_a": "a", "body_b": "b", "anchor": [1, 2.5],
            "enable_limit": true, "lower_angle": -0.5, "upper_angle": 0.25, "user_data": 3},
           {"type": "distance", "body_a": "ground", "body_b": "a", "anchor_a": [0, 5], "local_anchor_b": [0, 0.5],
            "enable_spring": true, "enable_limit": true, "max_length": 3}"#,
    ))
    .unwrap();
    let ids: Vec<_> = w.joints().collect();
    assert_eq!(ids.len(), 2);
    let JointKind::Revolute(r) = w.joint_kind(ids[0]).unwrap() else {
        panic!("not revolute")
    };
    assert!(r.enable_limit);
    assert_eq!(r.lower_angle, Scalar::parse_decimal("-0.5").unwrap());
    assert_eq!(r.upper_angle, Scalar::parse_decimal("0.25").unwrap());
    assert_eq!(w.joint_user_data(ids[0]).unwrap(), 3);
    // One world anchor for both bodies.
    let (pa, pb) = w.joint_world_anchors(ids[0]).unwrap();
    assert_eq!(
        pa,
        Vec2::new(Scalar::ONE, Scalar::parse_decimal("2.5").unwrap())
    );
    assert_eq!(pa, pb);
    // A measured length (world anchor (0, 5) to a's top (0, 2.5)).
    let JointKind::Distance(d) = w.joint_kind(ids[1]).unwrap() else {
        panic!("not distance")
    };
    assert_eq!(d.length, Some(Scalar::parse_decimal("2.5").unwrap()));
    assert_eq!(
        d,
        DistanceJoint {
            length: d.length,
            enable_spring: true,
            enable_limit: true,
            max_length: Scalar::from_int(3),
            ..DistanceJoint::default()
        }
    );
    // Defaults: bodies do not collide, joints do not break.
    let w = parse_scene(&with_joints(
        r#"{"type": "revolute", "body_a": "a", "body_b": "b"}"#,
    ))
    .unwrap();
    let j = w.joints().next().unwrap();
    assert_eq!(
        w.joint_kind(j).unwrap(),
        JointKind::Revolute(RevoluteJoint::default())
    );
}

#[test]
fn joint_naming_a_missing_body() {
    assert_err(
        &with_joints(r#"{"id": "knee", "type": "revolute", "body_a": "a", "body_b": "thigh"}"#),
        &["joint 0 (\"knee\"): body_b \"thigh\" does not name a body"],
    );
}

#[test]
fn joint_joining_a_body_to_itself() {
    assert_err(
        &with_joints(r#"{"type": "weld", "body_a": "a", "body_b": "a"}"#),
        &["joint 0: body_a and body_b are the same body \"a\""],
    );
}

#[test]
fn joint_limits_lower_above_upper() {
    let cases = [
        (
            r#"{"id": "elbow", "type": "revolute", "body_a": "a", "body_b": "b", "lower_angle": 1, "upper_angle": 0.5}"#,
            "joint 0 (\"elbow\"): lower_angle 1 is above upper_angle 0.5",
        ),
        (
            r#"{"type": "prismatic", "body_a": "a", "body_b": "b", "lower_translation": 2, "upper_translation": -1}"#,
            "joint 0: lower_translation 2 is above upper_translation -1",
        ),
        (
            r#"{"type": "wheel", "body_a": "a", "body_b": "b", "lower_translation": 1, "upper_translation": 0}"#,
            "joint 0: lower_translation 1 is above upper_translation 0",
        ),
        (
            r#"{"type": "distance", "body_a": "a", "body_b": "b", "min_length": 3, "max_length": 2}"#,
            "joint 0: min_length 3 is above max_length 2",
        ),
        (
            r#"{"type": "angle", "body_a": "a", "body_b": "b", "lower_angle": 0.2, "upper_angle": -0.2}"#,
            "joint 0: lower_angle 0.2 is above upper_angle -0.2",
        ),
    ];
    for (joint, message) in cases {
        assert_eq!(err(&with_joints(joint)), message);
    }
}

#[test]
fn pulley_ratio_must_be_positive() {
    for ratio in ["0", "-1.5"] {
        let e = err(&with_joints(&format!(
            r#"{{"id": "lift", "type": "pulley", "body_a": "a", "body_b": "b",
                "ground_anchor_a": [0, 8], "ground_anchor_b": [2, 8], "ratio": {ratio}}}"#
        )));
        assert!(
            e.starts_with(&format!(
                "joint 0 (\"lift\"): ratio {ratio} is out of range (must be above 0"
            )),
            "{e}"
        );
    }
}

#[test]
fn joint_lengths_must_not_be_negative() {
    let cases = [
        r#"{"type": "distance", "body_a": "a", "body_b": "b", "length": -1}"#,
        r#"{"type": "distance", "body_a": "a", "body_b": "b", "min_length": -1}"#,
        r#"{"type": "distance", "body_a": "a", "body_b": "b", "max_length": -2}"#,
        r#"{"type": "pulley", "body_a": "a", "body_b": "b", "ground_anchor_a": [0, 8], "ground_anchor_b": [2, 8], "length": -3}"#,
    ];
    for joint in cases {
        let e = err(&with_joints(joint));
        assert!(e.starts_with("joint 0: "), "{e}");
        assert!(
            e.contains("length") && e.contains("is out of range (allowed 0 to"),
            "{e}"
        );
    }
}

#[test]
fn joint_field_that_does_not_apply() {
    assert_err(
        &with_joints(r#"{"type": "weld", "body_a": "a", "body_b": "b", "motor_speed": 3}"#),
        &["joint 0: field \"motor_speed\" does not apply to a weld joint"],
    );
}

#[test]
fn joint_missing_required_fields() {
    assert_err(
        &with_joints(
            r#"{"type": "pulley", "body_a": "a", "body_b": "b", "ground_anchor_a": [0, 8]}"#,
        ),
        &["joint 0: missing field \"ground_anchor_b\" (required for a pulley joint)"],
    );
    assert_err(
        &with_joints(r#"{"type": "target", "body_a": "ground", "body_b": "b"}"#),
        &["joint 0: missing field \"target\" (required for a target joint)"],
    );
    // Serde's own: body_b is required for every joint.
    assert_err(
        &with_joints(r#"{"type": "revolute", "body_a": "a"}"#),
        &["joint 0: missing field \"body_b\"", "line"],
    );
}

#[test]
fn joint_unknown_type_and_fields() {
    assert_err(
        &with_joints(r#"{"type": "gear", "body_a": "a", "body_b": "b"}"#),
        &["joint 0: unknown variant \"gear\", expected one of \"revolute\""],
    );
    assert_err(
        &with_joints(
            r#"{"type": "revolute", "body_a": "a", "body_b": "b"}, {"id": "x", "type": "weld", "body_a": "a", "body_b": "b", "stiffness": 2}"#,
        ),
        &["joint 1 (\"x\"): unknown field \"stiffness\""],
    );
}

#[test]
fn joint_ids_are_unique() {
    assert_err(
        &with_joints(
            r#"{"id": "j", "type": "revolute", "body_a": "a", "body_b": "b"}, {"id": "j", "type": "weld", "body_a": "a", "body_b": "b"}"#,
        ),
        &["joint 1 (\"j\"): id \"j\" is already used by joint 0"],
    );
}

#[test]
fn joint_anchors_given_twice() {
    assert_err(
        &with_joints(
            r#"{"type": "revolute", "body_a": "a", "body_b": "b", "anchor": [1, 2], "anchor_a": [1, 2]}"#,
        ),
        &["joint 0: give either \"anchor\" or \"anchor_a\"/\"anchor_b\", not both"],
    );
    assert_err(
        &with_joints(r#"{"type": "revolute", "body_a": "a", "body_b": "b", "anchor_b": [1, 2], "local_anchor_b": [0, 0]}"#),
        &["joint 0: give either a world anchor (anchor_b or anchor) or \"local_anchor_b\", not both"],
    );
}

#[test]
fn joint_values_out_of_range() {
    let cases = [
        (
            r#"{"type": "motor", "body_a": "a", "body_b": "b", "correction_factor": 2}"#,
            "joint 0: correction_factor 2 is out of range (allowed 0 to 1)",
        ),
        (
            r#"{"type": "revolute", "body_a": "a", "body_b": "b", "break_force": -5}"#,
            "joint 0: break_force -5 is out of range (allowed 0 to 1000000000)",
        ),
        (
            r#"{"type": "prismatic", "body_a": "a", "body_b": "b", "axis": [0, 0]}"#,
            "joint 0: axis must not be zero",
        ),
        (
            r#"{"type": "target", "body_a": "ground", "body_b": "b", "target": [0, 20000]}"#,
            "joint 0: target.y 20000 is outside the world bounds of ±10000",
        ),
        (
            r#"{"type": "revolute", "body_a": "a", "body_b": "b", "hertz": -1}"#,
            "joint 0: hertz -1 is out of range (allowed 0 to 1000)",
        ),
    ];
    for (joint, message) in cases {
        assert_eq!(err(&with_joints(joint)), message);
    }
}

#[test]
fn too_many_joints() {
    let joints = vec![r#"{"type":"weld","body_a":"a","body_b":"b"}"#; MAX_JOINTS + 1].join(",");
    assert_eq!(
        parse_scene(&with_joints(&joints)).unwrap_err(),
        SceneError::TooMany {
            at: Location::Scene,
            what: "joints",
            limit: MAX_JOINTS
        }
    );
}

#[test]
fn bridge_example_holds_its_planks() {
    let mut w = parse_scene(BRIDGE).unwrap();
    assert_eq!(w.joint_count(), 14);
    for _ in 0..180 {
        w.step();
    }
    // Every hinge still joins its planks.
    for j in w.joints() {
        if !matches!(w.joint_kind(j).unwrap(), JointKind::Revolute(_)) {
            continue;
        }
        let (a, b) = w.joint_world_anchors(j).unwrap();
        assert!(
            (a - b).length() < Scalar::parse_decimal("0.02").unwrap(),
            "{a:?} {b:?}"
        );
    }
}

#[test]
fn chains_build_one_sided_segments_and_are_checked() {
    // A closed clockwise ring keeps a box inside; an open floor's end
    // points are ghosts only.
    let ring = r#"{"version": 1, "bodies": [
      {"type": "static", "shapes": [{"type": "chain", "loop": true, "friction": 0.2,
        "points": [[-5, -5], [-5, 5], [5, 5], [5, -5]]}]},
      {"type": "static", "position": [0, 20], "shapes": [{"type": "chain",
        "points": [[9, 0], [6, 0], [3, 0], [0, 0], [-3, 0]]}]},
      {"type": "dynamic", "position": [0, 0], "user_data": 7,
        "shapes": [{"type": "box", "half_width": 0.5, "half_height": 0.5}]}
    ]}"#;
    let mut w = parse_scene(ring).unwrap();
    assert_eq!(w.shape_count(), 4 + 2 + 1);
    let ground = w.bodies().next().unwrap();
    let shapes = w.body_shapes(ground).unwrap();
    assert!(shapes.iter().all(|&s| {
        matches!(
            w.shape_geometry(s).unwrap(),
            bitroom_sim::ShapeGeometry::ChainSegment(_)
        ) && w.shape_def(s).unwrap().friction == Scalar::from_f64(0.2).unwrap()
    }));
    let b = body_by_user_data(&w, 7);
    for _ in 0..120 {
        w.step();
    }
    let y = w.position(b).unwrap().y;
    assert!(
        (y.to_f64() + 4.5).abs() < 0.02,
        "rests on the ring's floor: {y:?}"
    );

    // Bad chains, each named.
    let shape = |s: &str| with_body(&format!(r#"{{"type": "static", "shapes": [{s}]}}"#));
    assert_err(
        &shape(r#"{"type": "chain", "points": [[0, 0], [1, 0], [2, 0]]}"#),
        &["body 1, shape 0: chain has 3 points; it needs at least 4"],
    );
    assert_err(
        &shape(r#"{"type": "chain", "points": [[0, 0], [1, 0], [1, 0], [2, 0]]}"#),
        &["shape 0", "at least 0.005"],
    );
    assert_err(
        &shape(r#"{"type": "chain", "points": [[0, 0], [1, 0], [2, 0], [3, 0]], "density": 1}"#),
        &[r#"field "density" does not apply to a chain shape"#],
    );
    assert_err(
        &shape(r#"{"type": "chain"}"#),
        &[r#"missing field "points""#],
    );
    assert_err(
        &shape(r#"{"type": "chain", "points": [[0, 0], [1, 0], [2, 0], [1e6, 0]]}"#),
        &["points[3]"],
    );
    // A chain's segments count against the body's 1024 shapes.
    let many: Vec<String> = (0..1030).map(|i| format!("[{}, 0]", -i)).collect();
    assert_err(
        &shape(&format!(
            r#"{{"type": "chain", "points": [{}]}}"#,
            many.join(",")
        )),
        &["chain makes 1027 segments; a body may have at most 1024 shapes"],
    );
}

#[test]
fn valley_bodies_slide_down_the_chain_and_settle_at_the_bottom() {
    let mut w = parse_scene(VALLEY).unwrap();
    let chain = w.bodies().next().unwrap();
    assert_eq!(
        w.body_shapes(chain).unwrap().len(),
        22,
        "25 points, open: 22 segments"
    );
    for _ in 0..600 {
        w.step();
        for data in 1..=4 {
            // Never under the valley's surface (y = x²/20), however it lands.
            let p = w.position(body_by_user_data(&w, data)).unwrap();
            let (x, y) = (p.x.to_f64(), p.y.to_f64());
            assert!(
                y > x * x / 20.0 - 0.05,
                "body {data} under the ground at {p:?}"
            );
        }
    }
    for data in 1..=4 {
        let p = w.position(body_by_user_data(&w, data)).unwrap();
        assert!(
            p.x.to_f64().abs() < 3.0 && p.y.to_f64() < 1.2,
            "body {data} did not settle at the bottom: {p:?}"
        );
    }
}
