//! Step events: contact begin/end, hits, sensors; order, flags, destruction,
//! and their relation to state (not hashed, reproduced after a restore).

use bitroom_sim::scene::parse_scene;

/// The scene of the golden event digest (`shared/tests/golden.rs`).
const EVENTS_SCENE: &str = include_str!("../../scenes/events.json");
use bitroom_sim::{
    fx, BodyDef, BodyId, Circle, Polygon, Rot, Scalar, ShapeDef, ShapeGeometry, ShapeId, Vec2,
    World, WorldDef,
};

fn s(v: f64) -> Scalar {
    Scalar::from_f64(v).expect("test constant in range")
}

/// Static ground box (top at y = 0) and a ball of radius 0.25 dropped from
/// `height` (its bottom above the ground).
fn drop(
    ground: &ShapeDef,
    ball: &ShapeDef,
    def: WorldDef,
    height: f64,
) -> (World, ShapeId, ShapeId, BodyId) {
    let mut w = World::new(def).unwrap();
    let g = w
        .create_body(&BodyDef::fixed(Vec2::from_ints(0, -1)))
        .unwrap();
    let gs = w
        .create_shape(
            g,
            ground,
            ShapeGeometry::Polygon(Polygon::make_box(fx(20), fx(1))),
        )
        .unwrap();
    let b = w
        .create_body(&BodyDef::dynamic(Vec2::new(Scalar::ZERO, s(height + 0.25))))
        .unwrap();
    let bs = w
        .create_shape(
            b,
            ball,
            ShapeGeometry::Circle(Circle::new(Vec2::ZERO, s(0.25)).unwrap()),
        )
        .unwrap();
    (w, gs, bs, b)
}

#[test]
fn ball_on_ground_begins_once_and_ends_when_lifted() {
    let d = ShapeDef::default();
    let (mut w, gs, bs, ball) = drop(&d, &d, WorldDef::default(), 2.0);
    let mut begins = Vec::new();
    for step in 0..120 {
        w.step();
        let ev = w.contact_events();
        assert!(
            ev.end.is_empty(),
            "step {step}: unexpected end {:?}",
            ev.end
        );
        assert!(ev.hit.is_empty(), "hit events are off by default");
        for e in &ev.begin {
            begins.push((step, *e));
        }
    }
    assert_eq!(begins.len(), 1, "{begins:?}");
    let e = begins[0].1;
    assert_eq!((e.shape_a, e.shape_b), (gs, bs));
    assert_eq!(e.manifold.count, 1);
    assert_eq!(e.manifold.normal, Vec2::from_ints(0, 1));
    // Begin is reported from the speculative manifold: within 2 cm.
    assert!(e.manifold.points[0].separation <= s(0.02));
    // Lifting the ball ends the contact on the next step.
    w.set_transform(ball, Vec2::from_ints(0, 5), Rot::IDENTITY)
        .unwrap();
    w.step();
    let ev = w.contact_events();
    assert_eq!(ev.end.len(), 1);
    assert_eq!((ev.end[0].shape_a, ev.end[0].shape_b), (gs, bs));
    assert!(ev.begin.is_empty());
    // Events do not accumulate: the next step reports nothing.
    w.step();
    assert!(w.contact_events().end.is_empty());
}

#[test]
fn contact_events_can_be_switched_off_per_shape() {
    let quiet = ShapeDef {
        enable_contact_events: false,
        ..ShapeDef::default()
    };
    // Either shape asking is enough.
    for (g, b, want) in [(&quiet, &quiet, 0), (&quiet, &ShapeDef::default(), 1)] {
        let (mut w, ..) = drop(g, b, WorldDef::default(), 1.0);
        let mut n = 0;
        for _ in 0..60 {
            w.step();
            n += w.contact_events().begin.len();
        }
        assert_eq!(n, want);
    }
}

#[test]
fn hit_event_reports_the_approach_speed_above_the_threshold() {
    let hits = ShapeDef {
        enable_hit_events: true,
        ..ShapeDef::default()
    };
    let run = |threshold: f64, ball: &ShapeDef| {
        let def = WorldDef {
            hit_event_threshold: s(threshold),
            ..WorldDef::default()
        };
        let (mut w, gs, bs, _) = drop(&ShapeDef::default(), ball, def, 5.0);
        let mut out = Vec::new();
        for _ in 0..120 {
            w.step();
            out.extend(w.contact_events().hit.iter().copied());
        }
        for h in &out {
            assert_eq!((h.shape_a, h.shape_b), (gs, bs));
            assert_eq!(h.normal, Vec2::from_ints(0, 1));
        }
        out
    };
    // Dropped from 5 m the ball lands at about √(2·10·5) = 10 m/s.
    let got = run(1.0, &hits);
    assert_eq!(got.len(), 1, "{got:?}");
    let speed = got[0].approach_speed.to_f64();
    assert!((speed - 10.0).abs() < 0.3, "approach speed {speed}");
    assert!(got[0].point.y.abs() < s(0.02));
    assert!(
        run(20.0, &hits).is_empty(),
        "threshold above the impact speed"
    );
    assert!(run(1.0, &ShapeDef::default()).is_empty(), "hit events off");
}

#[test]
fn sensor_reports_enter_and_leave_and_does_not_touch_the_motion() {
    // A ball falls through a sensor box (y from 2 to 4) onto the ground.
    let build = |with_sensor: bool, visitor_events: bool| {
        let ball = ShapeDef {
            enable_sensor_events: visitor_events,
            ..ShapeDef::default()
        };
        let (mut w, _, bs, b) = drop(&ShapeDef::default(), &ball, WorldDef::default(), 6.0);
        let mut zone = None;
        if with_sensor {
            let z = w
                .create_body(&BodyDef::fixed(Vec2::from_ints(0, 3)))
                .unwrap();
            let sensor = ShapeDef {
                is_sensor: true,
                ..ShapeDef::default()
            };
            zone = Some(
                w.create_shape(
                    z,
                    &sensor,
                    ShapeGeometry::Polygon(Polygon::make_box(fx(2), fx(1))),
                )
                .unwrap(),
            );
        }
        (w, bs, b, zone)
    };
    let (mut w, bs, ball, zone) = build(true, true);
    let (mut plain, _, plain_ball, _) = build(false, true);
    let zone = zone.unwrap();
    let mut log = Vec::new();
    for step in 0..90 {
        w.step();
        plain.step();
        // No collision response: the motion is bit-identical to no sensor.
        assert_eq!(
            w.transform(ball).unwrap(),
            plain.transform(plain_ball).unwrap()
        );
        let ev = w.sensor_events();
        for e in &ev.begin {
            assert_eq!((e.sensor, e.visitor), (zone, bs));
            log.push(("begin", step, w.position(ball).unwrap().y.to_f64()));
        }
        for e in &ev.end {
            assert_eq!((e.sensor, e.visitor), (zone, bs));
            log.push(("end", step, w.position(ball).unwrap().y.to_f64()));
        }
        assert!(w
            .contact_events()
            .begin
            .iter()
            .all(|e| e.shape_a != zone && e.shape_b != zone));
    }
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].0, "begin");
    assert_eq!(log[1].0, "end");
    // Enters when its bottom crosses y = 4, leaves when its top crosses y = 2
    // (within one step of travel, ≤ 0.2 m at these speeds).
    assert!(log[0].2 - 0.25 <= 4.0 && log[0].2 - 0.25 > 3.8, "{log:?}");
    assert!(log[1].2 + 0.25 < 2.0 && log[1].2 + 0.25 > 1.7, "{log:?}");
    assert_eq!(w.touching_contact_count(), 1, "only the ground contact");
    // A visitor with sensor events off is not seen.
    let (mut w, _, _, _) = build(true, false);
    for _ in 0..90 {
        w.step();
        assert!(w.sensor_events().begin.is_empty());
    }
}

#[test]
fn destroying_a_touching_body_reports_end_events_next_step() {
    let d = ShapeDef::default();
    let (mut w, gs, bs, ball) = drop(&d, &d, WorldDef::default(), 0.0);
    let z = w.create_body(&BodyDef::fixed(Vec2::ZERO)).unwrap();
    let sensor = ShapeDef {
        is_sensor: true,
        ..ShapeDef::default()
    };
    let zone = w
        .create_shape(
            z,
            &sensor,
            ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap()),
        )
        .unwrap();
    w.step();
    assert_eq!(w.contact_events().begin.len(), 1);
    assert_eq!(w.sensor_events().begin.len(), 1);
    w.destroy_body(ball).unwrap();
    w.step();
    let ev = w.contact_events();
    assert_eq!(ev.end.len(), 1);
    // The handles are those the user held (now stale).
    assert_eq!((ev.end[0].shape_a, ev.end[0].shape_b), (gs, bs));
    assert!(w.shape_def(bs).is_err());
    let se = w.sensor_events();
    assert_eq!(se.end.len(), 1);
    assert_eq!((se.end[0].sensor, se.end[0].visitor), (zone, bs));
    w.step();
    assert!(w.contact_events().end.is_empty() && w.sensor_events().end.is_empty());
}

#[test]
fn events_are_sorted_by_shape_pair_and_survive_a_restore() {
    // Bouncing balls, a stack, sensors, a bullet: contacts keep beginning
    // and ending.
    let mut w = parse_scene(EVENTS_SCENE).unwrap();
    let mut n_begin = 0;
    let mut n_end = 0;
    let mut snap = None;
    let mut after = Vec::new();
    for step in 0..240 {
        if step == 1 {
            // The bullet hits the plank on this step: continuous collision,
            // hits and new contacts are all in the replayed window.
            snap = Some(w.snapshot());
        }
        w.step();
        let ev = w.contact_events();
        let key = |a: ShapeId, b: ShapeId| (a.index, b.index);
        assert!(ev
            .begin
            .windows(2)
            .all(|p| key(p[0].shape_a, p[0].shape_b) < key(p[1].shape_a, p[1].shape_b)));
        assert!(ev
            .end
            .windows(2)
            .all(|p| key(p[0].shape_a, p[0].shape_b) < key(p[1].shape_a, p[1].shape_b)));
        assert!(ev.begin.iter().all(|e| e.shape_a.index < e.shape_b.index));
        n_begin += ev.begin.len();
        n_end += ev.end.len();
        if step >= 1 {
            after.push(w.event_hash());
        }
    }
    assert!(n_begin > 40 && n_end > 40, "begin {n_begin} end {n_end}");
    // Restore: buffers emptied (not state), then the same events again.
    let h = w.state_hash();
    w.restore(&snap.unwrap());
    assert!(w.contact_events().begin.is_empty() && w.contact_events().end.is_empty());
    assert_ne!(w.state_hash(), h);
    let again: Vec<u64> = (1..240)
        .map(|_| {
            w.step();
            w.event_hash()
        })
        .collect();
    assert_eq!(after, again);
    assert_eq!(w.state_hash(), h);
}

#[test]
fn event_buffers_are_not_state() {
    // Reading or having events changes nothing hashed: two worlds that
    // reach the same state by different routes (one reported a begin event
    // this step, one did not) hash the same.
    let d = ShapeDef::default();
    let (mut a, ..) = drop(&d, &d, WorldDef::default(), 0.0);
    a.step();
    assert_eq!(a.contact_events().begin.len(), 1);
    let snap = bitroom_sim::Snapshot::from_bytes(&a.snapshot().to_bytes()).unwrap();
    let b = World::from_snapshot(&snap);
    assert!(b.contact_events().begin.is_empty());
    assert_eq!(a.state_hash(), b.state_hash());
    assert_ne!(a.event_hash(), b.event_hash());
}
