//! World queries: exact ray hits against known geometry, filters, overlap
//! and point queries, deterministic order, bad input.

use bitroom_sim::{
    fx, Aabb, BodyDef, BodyId, Capsule, Circle, Filter, Polygon, QueryFilter, Rot, Scalar, Segment,
    ShapeDef, ShapeGeometry, ShapeId, Snapshot, Transform, Vec2, World, WorldError,
};

fn v(x: i32, y: i32) -> Vec2 {
    Vec2::from_ints(x, y)
}

fn add(w: &mut World, def: BodyDef, shape: &ShapeDef, g: ShapeGeometry) -> (BodyId, ShapeId) {
    let b = w.create_body(&def).unwrap();
    let s = w.create_shape(b, shape, g).unwrap();
    (b, s)
}

/// Box (half-extent 1) at the origin, circle (r 1) at x = 5, vertical
/// capsule (r 0.5) at x = 10, vertical segment at x = 15, all static.
fn row() -> (World, [ShapeId; 4]) {
    let mut w = World::default();
    let d = ShapeDef::default();
    let (_, a) = add(
        &mut w,
        BodyDef::fixed(Vec2::ZERO),
        &d,
        ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1))),
    );
    let (_, b) = add(
        &mut w,
        BodyDef::fixed(v(5, 0)),
        &d,
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap()),
    );
    let cap = Capsule::new(v(0, -1), v(0, 1), Scalar::HALF).unwrap();
    let (_, c) = add(
        &mut w,
        BodyDef::fixed(v(10, 0)),
        &d,
        ShapeGeometry::Capsule(cap),
    );
    let seg = Segment::new(v(15, -1), v(15, 1)).unwrap();
    let (_, s) = add(
        &mut w,
        BodyDef::fixed(Vec2::ZERO),
        &d,
        ShapeGeometry::Segment(seg),
    );
    (w, [a, b, c, s])
}

#[test]
fn ray_closest_hits_the_box_face_exactly() {
    let (w, ids) = row();
    let hit = w
        .cast_ray_closest(
            Vec2::new(fx(-5), Scalar::HALF),
            v(10, 0),
            &QueryFilter::default(),
        )
        .unwrap()
        .expect("hit");
    assert_eq!(hit.shape, ids[0]);
    assert_eq!(hit.point, Vec2::new(fx(-1), Scalar::HALF));
    assert_eq!(hit.normal, v(-1, 0));
    assert_eq!(hit.fraction, Scalar::ratio(4, 10));
}

#[test]
fn ray_all_hits_every_shape_in_order_with_exact_points() {
    let (w, ids) = row();
    let hits = w
        .cast_ray_all(v(-5, 0), v(25, 0), &QueryFilter::default())
        .unwrap();
    let got: Vec<_> = hits.iter().map(|h| (h.shape, h.point, h.normal)).collect();
    let left = v(-1, 0);
    assert_eq!(
        got,
        vec![
            (ids[0], v(-1, 0), left),
            (ids[1], v(4, 0), left),
            (ids[2], Vec2::new(Scalar::ratio(19, 2), fx(0)), left),
            (ids[3], v(15, 0), left),
        ]
    );
    let fractions: Vec<_> = hits.iter().map(|h| h.fraction).collect();
    assert_eq!(
        fractions,
        vec![
            Scalar::ratio(4, 25),
            Scalar::ratio(9, 25),
            Scalar::ratio(29, 50),
            Scalar::ratio(20, 25),
        ]
    );
    // Coming back from the right: the segment is hit on its other side.
    let back = w
        .cast_ray_closest(v(20, 0), v(-25, 0), &QueryFilter::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        (back.shape, back.point, back.normal),
        (ids[3], v(15, 0), v(1, 0))
    );
    // A ray that stops short of everything, and one that misses above.
    let f = QueryFilter::default();
    assert!(w.cast_ray_closest(v(-5, 0), v(3, 0), &f).unwrap().is_none());
    assert!(w.cast_ray_all(v(-5, 3), v(25, 0), &f).unwrap().is_empty());
}

#[test]
fn ray_from_inside_a_shape_skips_it() {
    let (w, ids) = row();
    let hits = w
        .cast_ray_all(Vec2::ZERO, v(20, 0), &QueryFilter::default())
        .unwrap();
    assert_eq!(hits[0].shape, ids[1]);
    assert_eq!(hits[0].point, v(4, 0));
}

#[test]
fn ray_hits_rotated_and_moving_bodies() {
    let mut w = World::default();
    // A box rotated by 45°: its corner (√2 from the centre) faces the ray.
    let (_, b) = add(
        &mut w,
        BodyDef {
            rotation: Rot::from_angle(Scalar::PI.shr(2)),
            ..BodyDef::fixed(v(3, 0))
        },
        &ShapeDef::default(),
        ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1))),
    );
    let hit = w
        .cast_ray_closest(Vec2::ZERO, v(10, 0), &QueryFilter::default())
        .unwrap()
        .unwrap();
    assert_eq!(hit.shape, b);
    let want = 3.0 - 2f64.sqrt();
    assert!((hit.point.x.to_f64() - want).abs() < 1e-6, "{hit:?}");
    assert!(hit.point.y.abs() < Scalar::from_bits(1 << 12));
    // A falling ball is found where it is now.
    let (ball, bs) = add(
        &mut w,
        BodyDef::dynamic(v(-20, 10)),
        &ShapeDef::default(),
        ShapeGeometry::Circle(Circle::new(Vec2::ZERO, Scalar::HALF).unwrap()),
    );
    for _ in 0..30 {
        w.step();
    }
    let p = w.position(ball).unwrap();
    let hit = w
        .cast_ray_closest(Vec2::new(p.x, fx(20)), v(0, -30), &QueryFilter::default())
        .unwrap()
        .unwrap();
    assert_eq!(hit.shape, bs);
    assert_eq!(hit.point, Vec2::new(p.x, p.y + Scalar::HALF));
    assert_eq!(hit.normal, v(0, 1));
}

#[test]
fn filters_select_by_category_and_sensors_only_on_request() {
    let mut w = World::default();
    let cat = |category: u32, mask: u32| ShapeDef {
        filter: Filter {
            category,
            mask,
            group: 0,
        },
        ..ShapeDef::default()
    };
    let boxg = || ShapeGeometry::Polygon(Polygon::make_box(fx(1), fx(1)));
    let (_, wall) = add(&mut w, BodyDef::fixed(v(0, 0)), &cat(2, u32::MAX), boxg());
    let (_, glass) = add(&mut w, BodyDef::fixed(v(4, 0)), &cat(4, !1), boxg());
    let sensor = ShapeDef {
        is_sensor: true,
        ..ShapeDef::default()
    };
    let (_, zone) = add(&mut w, BodyDef::fixed(v(8, 0)), &sensor, boxg());
    let o = v(-5, 0);
    let d = v(20, 0);
    let shapes = |f: QueryFilter| -> Vec<ShapeId> {
        w.cast_ray_all(o, d, &f)
            .unwrap()
            .iter()
            .map(|h| h.shape)
            .collect()
    };
    let all = QueryFilter::default();
    // Default query (category 1): the glass's mask excludes category 1; no sensors.
    assert_eq!(shapes(all), vec![wall]);
    let q2 = QueryFilter { category: 2, ..all };
    assert_eq!(shapes(q2), vec![wall, glass]);
    let only4 = QueryFilter {
        category: 2,
        mask: 4,
        include_sensors: true,
    };
    assert_eq!(shapes(only4), vec![glass]);
    let with_sensors = QueryFilter {
        include_sensors: true,
        ..all
    };
    assert_eq!(shapes(with_sensors), vec![wall, zone]);
    let pts = w.overlap_point(v(8, 0), &with_sensors).unwrap();
    assert_eq!(pts, vec![zone]);
    assert!(w.overlap_point(v(8, 0), &all).unwrap().is_empty());
}

#[test]
fn overlap_aabb_shape_and_point() {
    let (w, ids) = row();
    let f = QueryFilter::default();
    // Tight boxes: the circle spans x 4..6, the capsule 9.5..10.5.
    let b = Aabb::new(v(3, -5), Vec2::new(Scalar::ratio(19, 2), fx(5)));
    assert_eq!(w.overlap_aabb(b, &f).unwrap(), vec![ids[1], ids[2]]);
    let b = Aabb::new(Vec2::new(Scalar::ratio(61, 10), fx(-5)), v(9, 5));
    assert!(w.overlap_aabb(b, &f).unwrap().is_empty());
    // A disc probe of radius 1 at (7, 0): touches the circle (centre 5, r 1) exactly.
    let probe = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap());
    let at = |x: Scalar, y: Scalar| Transform::new(Vec2::new(x, y), Rot::IDENTITY);
    assert_eq!(
        w.overlap_shape(&probe, at(fx(7), fx(0)), &f).unwrap(),
        vec![ids[1]]
    );
    let apart = fx(7) + Scalar::milli(1);
    assert!(w
        .overlap_shape(&probe, at(apart, fx(0)), &f)
        .unwrap()
        .is_empty());
    // A long thin box across everything overlaps all four.
    let bar = ShapeGeometry::Polygon(Polygon::make_box(fx(9), Scalar::milli(10)));
    assert_eq!(
        w.overlap_shape(&bar, at(fx(8), fx(0)), &f).unwrap(),
        ids.to_vec()
    );
    // Points: inside the box, on the circle's rim, on the segment (no area).
    assert_eq!(
        w.overlap_point(Vec2::new(Scalar::HALF, fx(1)), &f).unwrap(),
        vec![ids[0]]
    );
    assert_eq!(w.overlap_point(v(6, 0), &f).unwrap(), vec![ids[1]]);
    assert!(w.overlap_point(v(15, 0), &f).unwrap().is_empty());
    assert!(w.overlap_point(v(2, 0), &f).unwrap().is_empty());
}

#[test]
fn results_are_the_same_after_a_snapshot_round_trip() {
    // A restored world rebuilds its trees in a different order; sorted
    // results must not notice.
    let mut w = World::default();
    let d = ShapeDef::default();
    for i in 0..60 {
        let x = (i * 37 % 41) - 20;
        let y = (i * 53 % 17) + 1;
        add(
            &mut w,
            BodyDef::dynamic(v(x, y)),
            &d,
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF)),
        );
    }
    add(
        &mut w,
        BodyDef::fixed(v(0, -1)),
        &d,
        ShapeGeometry::Polygon(Polygon::make_box(fx(40), fx(1))),
    );
    for _ in 0..40 {
        w.step();
    }
    let snap = Snapshot::from_bytes(&w.snapshot().to_bytes()).unwrap();
    let r = World::from_snapshot(&snap);
    let f = QueryFilter::default();
    let q = |w: &World| {
        (
            w.cast_ray_all(v(-30, 3), v(60, 1), &f).unwrap(),
            w.overlap_aabb(Aabb::new(v(-10, 0), v(10, 4)), &f).unwrap(),
            w.overlap_point(v(0, 0), &f).unwrap(),
        )
    };
    let (a, b) = (q(&w), q(&r));
    assert!(!a.0.is_empty() && !a.1.is_empty());
    assert_eq!(a, b);
    // Ray hits are sorted by fraction.
    assert!(a.0.windows(2).all(|p| p[0].fraction <= p[1].fraction));
}

#[test]
fn bad_query_input_is_an_error_not_a_panic() {
    let (w, _) = row();
    let f = QueryFilter::default();
    let far = Vec2::new(fx(20_000), fx(0));
    assert_eq!(
        w.cast_ray_all(far, v(1, 0), &f),
        Err(WorldError::OutOfBounds("ray"))
    );
    assert!(w
        .cast_ray_closest(v(0, 5), Vec2::new(Scalar::MAX, fx(0)), &f)
        .is_err());
    assert!(w
        .cast_ray_all(v(0, 5), Vec2::new(fx(15_000), fx(0)), &f)
        .is_err());
    assert!(w
        .cast_ray_all(v(0, 5), Vec2::new(Scalar::MIN, Scalar::MIN), &f)
        .is_err());
    assert_eq!(
        w.overlap_aabb(Aabb::new(v(1, 1), v(0, 0)), &f),
        Err(WorldError::BadQuery(
            "aabb lower corner is above its upper corner"
        ))
    );
    assert!(w.overlap_aabb(Aabb::new(v(0, 0), far), &f).is_err());
    assert!(w.overlap_point(far, &f).is_err());
    let probe = ShapeGeometry::Circle(Circle::new(Vec2::ZERO, fx(1)).unwrap());
    assert!(w
        .overlap_shape(&probe, Transform::new(far, Rot::IDENTITY), &f)
        .is_err());
    // A zero-length ray hits nothing.
    assert!(w.cast_ray_all(v(-5, 0), Vec2::ZERO, &f).unwrap().is_empty());
}

#[test]
fn shape_contacts_are_the_contacts_of_that_shape() {
    // Three boxes stacked on a ground box: each box touches its neighbours.
    let mut w = World::default();
    let d = ShapeDef::default();
    let (_, ground) = add(
        &mut w,
        BodyDef::fixed(Vec2::ZERO),
        &d,
        ShapeGeometry::Polygon(Polygon::make_box(fx(10), fx(1))),
    );
    let mut boxes = Vec::new();
    for k in 0..3 {
        let (b, s) = add(
            &mut w,
            BodyDef::dynamic(Vec2::new(fx(0), fx(2 * k + 2))),
            &d,
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::milli(990), fx(1))),
        );
        boxes.push((b, s));
    }
    for _ in 0..60 {
        w.step();
    }
    assert!(w.contacts().next().is_some());
    for s in [ground, boxes[0].1, boxes[1].1, boxes[2].1] {
        assert!(
            w.shape_contacts(s).next().is_some(),
            "every shape touches something"
        );
    }
    // Each shape's are the filtered list's, and each contact point belongs
    // to two of these shapes (the world's only ones).
    check_shape_contacts(&w, "the stack");
    // A destroyed shape's handle has no contacts.
    let (top_body, top) = boxes[2];
    w.destroy_body(top_body).unwrap();
    assert_eq!(w.shape_contacts(top).count(), 0);
}

/// Every shape's contacts, as [`World::shape_contacts`] gives them and as
/// the whole list filtered to the shape gives them.
fn check_shape_contacts(w: &World, when: &str) -> usize {
    let all: Vec<_> = w.contacts().collect();
    let mut seen = 0;
    for b in w.bodies().collect::<Vec<_>>() {
        for s in w.body_shapes(b).unwrap() {
            let mine: Vec<_> = w.shape_contacts(s).collect();
            let want: Vec<_> = all
                .iter()
                .filter(|c| c.shape_a == s || c.shape_b == s)
                .copied()
                .collect();
            assert_eq!(mine, want, "{when}: contacts of {s:?}");
            seen += mine.len();
        }
    }
    assert_eq!(seen, 2 * all.len(), "{when}: each point has two shapes");
    seen
}

/// `shape_contacts` looks a shape's contacts up through the broad phase
/// when no shape waits for the pair search, and passes over every contact
/// otherwise: both must be the filtered list, in scenes that settle, sleep,
/// tumble and break apart, after teleports (queued), after the step that
/// follows them, after destroying bodies, and after a snapshot round trip.
#[test]
fn shape_contacts_match_the_filtered_list_as_worlds_move() {
    use bitroom_sim::scene::build_named;
    let mut points = 0;
    for name in [
        "pyramid", "dominoes", "ragdoll", "tumbler", "car", "bridge", "arena",
    ] {
        let mut w = build_named(name).unwrap();
        for t in 1..=240 {
            w.step();
            if t % 20 == 0 {
                points += check_shape_contacts(&w, &format!("{name} tick {t}"));
            }
            if t % 60 == 30 {
                // Teleport a few bodies by a few centimetres (boxes kept)
                // and by metres (boxes re-made).
                let bodies: Vec<_> = w.bodies().collect();
                for (k, &b) in bodies.iter().enumerate().skip(1).step_by(7) {
                    let p = w.position(b).unwrap();
                    let d = if k % 2 == 0 {
                        Vec2::new(Scalar::milli(30), Scalar::ZERO)
                    } else {
                        Vec2::from_ints(0, 3)
                    };
                    w.set_transform(b, p + d, Rot::IDENTITY).unwrap();
                }
                check_shape_contacts(&w, &format!("{name} after teleports at {t}"));
                w.step();
                check_shape_contacts(&w, &format!("{name} the step after teleports at {t}"));
            }
            if t == 200 {
                let bodies: Vec<_> = w.bodies().collect();
                for &b in bodies.iter().skip(2).step_by(5) {
                    w.destroy_body(b).unwrap();
                }
                check_shape_contacts(&w, &format!("{name} after destroying at {t}"));
                let copy =
                    World::from_snapshot(&Snapshot::from_bytes(&w.snapshot().to_bytes()).unwrap());
                check_shape_contacts(&copy, &format!("{name} decoded at {t}"));
            }
        }
    }
    assert!(points > 1000, "the scenes touch: {points} points seen");
}
