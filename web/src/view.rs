//! What the page draws: the predicted world at display rate, each body's
//! pose interpolated between the last two present ticks, flattened into a
//! list of numbers the page's canvas code walks ([`DrawList`]).
//!
//! Floats live here and only here: this is the edge where fixed-point
//! state becomes pixels. Nothing computed here flows back into the
//! simulation.
//!
//! Interpolation: every time the present tick moves on, the poses of the
//! tick before become `prev` and the new ones `cur`; a frame drawn
//! `dt` after `cur` was reached shows `lerp(prev, cur, dt / period)`. That
//! costs one tick of display delay (16.7 ms at 60 Hz) and hides the
//! uneven arrival of ticks (timers, catch-up). A rollback that rewrites
//! the present re-samples `cur`.

use bitroom_sim::dynamics::{BodyKind, World};
use bitroom_sim::game::avatar_slot;
use bitroom_sim::{BodyId, ShapeGeometry, Transform, Vec2};

/// Kinds of records in a draw list (the first number of each record).
pub mod kind {
    /// `POLYGON style n radius x0 y0 … x(n-1) y(n-1)`.
    pub const POLYGON: f32 = 0.0;
    /// `CIRCLE style cx cy r ax ay` (`a`: a point on the rim, for the
    /// spoke that shows rotation).
    pub const CIRCLE: f32 = 1.0;
    /// `CAPSULE style x1 y1 x2 y2 r`.
    pub const CAPSULE: f32 = 2.0;
    /// `SEGMENT style x1 y1 x2 y2`.
    pub const SEGMENT: f32 = 3.0;
    /// `JOINT style xa ya xb yb` (the two world anchors).
    pub const JOINT: f32 = 4.0;
    /// `PLAYER slot x y` (the avatar's centre, for its name).
    pub const PLAYER: f32 = 5.0;
}

/// Styles of shapes (the second number of a shape record); avatars are
/// `AVATAR + slot`.
pub mod style {
    /// Static bodies.
    pub const STATIC: f32 = 0.0;
    /// Kinematic bodies.
    pub const KINEMATIC: f32 = 1.0;
    /// Awake dynamic bodies.
    pub const AWAKE: f32 = 2.0;
    /// Sleeping dynamic bodies.
    pub const ASLEEP: f32 = 3.0;
    /// Held by a player (carried).
    pub const HELD: f32 = 4.0;
    /// The avatar of slot `s` is `AVATAR + s`.
    pub const AVATAR: f32 = 16.0;
}

/// A body's pose for drawing: position and rotation as floats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Pose {
    generation: u32,
    valid: bool,
    x: f32,
    y: f32,
    c: f32,
    s: f32,
}

impl Pose {
    fn of(id: BodyId, xf: Transform) -> Pose {
        Pose {
            generation: id.generation,
            valid: true,
            x: xf.p.x.to_f64() as f32,
            y: xf.p.y.to_f64() as f32,
            c: xf.q.c.to_f64() as f32,
            s: xf.q.s.to_f64() as f32,
        }
    }

    /// Linear in position, normalised linear in rotation (nlerp: fine for
    /// the small turn of one tick).
    fn lerp(self, to: Pose, t: f32) -> Pose {
        let l = |a: f32, b: f32| a + (b - a) * t;
        let (c, s) = (l(self.c, to.c), l(self.s, to.s));
        let n = (c * c + s * s).sqrt();
        let (c, s) = if n > 1e-6 {
            (c / n, s / n)
        } else {
            (to.c, to.s)
        };
        Pose {
            generation: to.generation,
            valid: true,
            x: l(self.x, to.x),
            y: l(self.y, to.y),
            c,
            s,
        }
    }

    fn apply(self, v: Vec2) -> (f32, f32) {
        let (x, y) = (v.x.to_f64() as f32, v.y.to_f64() as f32);
        (
            self.x + self.c * x - self.s * y,
            self.y + self.s * x + self.c * y,
        )
    }
}

/// The poses of every body at one tick, indexed by body index.
#[derive(Clone, Debug, Default)]
struct Poses {
    tick: u64,
    /// When this tick became the present (ms, the page's clock).
    at: f64,
    poses: Vec<Pose>,
}

impl Poses {
    fn sample(&mut self, world: &World, tick: u64, at: f64) {
        self.tick = tick;
        self.at = at;
        for p in &mut self.poses {
            p.valid = false;
        }
        for id in world.bodies() {
            let Ok(xf) = world.transform(id) else {
                continue;
            };
            let i = id.index as usize;
            if self.poses.len() <= i {
                self.poses.resize(i + 1, Pose::default());
            }
            self.poses[i] = Pose::of(id, xf);
        }
    }

    fn get(&self, id: BodyId) -> Option<Pose> {
        self.poses
            .get(id.index as usize)
            .copied()
            .filter(|p| p.valid && p.generation == id.generation)
    }
}

/// Poses of the last two present ticks (see the module docs).
#[derive(Debug, Default)]
pub struct Interpolator {
    prev: Poses,
    cur: Poses,
    started: bool,
}

impl Interpolator {
    /// Tells it the present world after the session ran: a new tick moves
    /// `cur` to `prev`; `rewritten` (a rollback, a resync) re-samples `cur`.
    pub fn observe(&mut self, world: &World, tick: u64, now_ms: f64, rewritten: bool) {
        if !self.started {
            self.cur.sample(world, tick, now_ms);
            self.prev.clone_from(&self.cur);
            self.started = true;
        } else if tick != self.cur.tick {
            std::mem::swap(&mut self.prev, &mut self.cur);
            self.cur.sample(world, tick, now_ms);
        } else if rewritten {
            let at = self.cur.at;
            self.cur.sample(world, tick, at);
        }
    }

    /// Forgets everything (a new session).
    pub fn reset(&mut self) {
        *self = Interpolator::default();
    }

    /// The interpolation fraction at `now_ms` for ticks `period_ms` apart.
    pub fn alpha(&self, now_ms: f64, period_ms: f64) -> f32 {
        if period_ms <= 0.0 {
            return 1.0;
        }
        ((now_ms - self.cur.at) / period_ms).clamp(0.0, 1.0) as f32
    }

    /// A body's pose at fraction `t` between the last two ticks (the
    /// present one when the body is new).
    fn pose(&self, id: BodyId, t: f32) -> Option<Pose> {
        let cur = self.cur.get(id)?;
        Some(match self.prev.get(id) {
            Some(prev) => prev.lerp(cur, t),
            None => cur,
        })
    }
}

/// A draw list: records of numbers (see [`kind`]); avatars and joints are
/// drawn over the bodies, so their records come last.
#[derive(Debug, Default)]
pub struct DrawList {
    /// The numbers.
    pub data: Vec<f32>,
    /// The world's extent at the last [`DrawList::build`] with
    /// `fit_bounds`: `[min x, min y, max x, max y]`.
    pub bounds: [f32; 4],
    /// Shapes drawn.
    pub shapes: u32,
}

impl DrawList {
    /// Rebuilds the list for `world` at interpolation fraction `t`, marking
    /// the bodies in `held` as carried.
    pub fn build(&mut self, world: &World, interp: &Interpolator, t: f32, held: &[BodyId]) {
        self.data.clear();
        self.shapes = 0;
        let mut bounds = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
        let mut players: Vec<(u8, Pose)> = Vec::new();
        // Static shapes first, then the rest, so moving bodies are on top.
        for pass in 0..2 {
            for id in world.bodies() {
                let Ok(kind) = world.body_kind(id) else {
                    continue;
                };
                if (kind == BodyKind::Static) != (pass == 0) {
                    continue;
                }
                let Some(pose) = interp.pose(id, t) else {
                    continue;
                };
                let avatar = world.user_data(id).ok().and_then(avatar_slot);
                let style = match (avatar, kind) {
                    (Some(slot), _) => {
                        players.push((slot, pose));
                        style::AVATAR + f32::from(slot)
                    }
                    (None, BodyKind::Static) => style::STATIC,
                    (None, BodyKind::Kinematic) => style::KINEMATIC,
                    (None, BodyKind::Dynamic) if held.contains(&id) => style::HELD,
                    (None, BodyKind::Dynamic) => {
                        if world.is_awake(id).unwrap_or(true) {
                            style::AWAKE
                        } else {
                            style::ASLEEP
                        }
                    }
                };
                let Ok(shapes) = world.body_shapes(id) else {
                    continue;
                };
                for sid in shapes {
                    if let Ok(g) = world.shape_geometry(sid) {
                        self.shape(g, pose, style, &mut bounds);
                    }
                }
            }
        }
        for j in world.joints() {
            let (Ok((a, b)), Ok((pa, pb))) = (world.joint_bodies(j), world.joint_world_anchors(j))
            else {
                continue;
            };
            // Anchors follow their bodies' interpolated poses: each anchor
            // is taken in its body's frame at the present tick, then
            // placed with the drawn pose.
            let anchor = |body: BodyId, p: Vec2| -> Option<(f32, f32)> {
                let xf = world.transform(body).ok()?;
                let local = xf.inv_apply(p);
                Some(interp.pose(body, t)?.apply(local))
            };
            let (Some((ax, ay)), Some((bx, by))) = (anchor(a, pa), anchor(b, pb)) else {
                continue;
            };
            self.data
                .extend_from_slice(&[kind::JOINT, style::STATIC, ax, ay, bx, by]);
        }
        for (slot, pose) in players {
            self.data
                .extend_from_slice(&[kind::PLAYER, f32::from(slot), pose.x, pose.y]);
        }
        if bounds[0] <= bounds[2] {
            self.bounds = bounds;
        }
    }

    fn shape(&mut self, g: ShapeGeometry, pose: Pose, style: f32, bounds: &mut [f32; 4]) {
        self.shapes += 1;
        let start = self.data.len();
        match g {
            ShapeGeometry::Polygon(p) => {
                let pts = p.points();
                self.data.extend_from_slice(&[
                    kind::POLYGON,
                    style,
                    pts.len() as f32,
                    p.radius.to_f64() as f32,
                ]);
                for &v in pts {
                    let (x, y) = pose.apply(v);
                    self.data.extend_from_slice(&[x, y]);
                }
            }
            ShapeGeometry::Circle(c) => {
                let (x, y) = pose.apply(c.center);
                let r = c.radius.to_f64() as f32;
                self.data.extend_from_slice(&[
                    kind::CIRCLE,
                    style,
                    x,
                    y,
                    r,
                    x + pose.c * r,
                    y + pose.s * r,
                ]);
            }
            ShapeGeometry::Capsule(c) => {
                let (x1, y1) = pose.apply(c.c1);
                let (x2, y2) = pose.apply(c.c2);
                let r = c.radius.to_f64() as f32;
                self.data
                    .extend_from_slice(&[kind::CAPSULE, style, x1, y1, x2, y2, r]);
            }
            // A chain's segments draw as segments (one-sided or not).
            ShapeGeometry::Segment(s)
            | ShapeGeometry::ChainSegment(bitroom_sim::geometry::ChainSegment {
                segment: s, ..
            }) => {
                let (x1, y1) = pose.apply(s.p1);
                let (x2, y2) = pose.apply(s.p2);
                self.data
                    .extend_from_slice(&[kind::SEGMENT, style, x1, y1, x2, y2]);
            }
        }
        // Bounds: every coordinate pair after the header, padded by the
        // radius where there is one (a loose bound is fine for framing).
        let rec = &self.data[start..];
        let (pairs, pad): (&[f32], f32) = match g {
            ShapeGeometry::Polygon(_) => (&rec[4..], rec[3]),
            ShapeGeometry::Circle(_) => (&rec[2..4], rec[4]),
            ShapeGeometry::Capsule(_) => (&rec[2..6], rec[6]),
            ShapeGeometry::Segment(_) | ShapeGeometry::ChainSegment(_) => (&rec[2..6], 0.0),
        };
        for xy in pairs.chunks_exact(2) {
            bounds[0] = bounds[0].min(xy[0] - pad);
            bounds[1] = bounds[1].min(xy[1] - pad);
            bounds[2] = bounds[2].max(xy[0] + pad);
            bounds[3] = bounds[3].max(xy[1] + pad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::sandbox::Sandbox;
    use bitroom_sim::game::{Game, InputSet, Rules, SlotEvent};

    fn records(data: &[f32]) -> Vec<(f32, f32)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < data.len() {
            let k = data[i];
            out.push((k, data[i + 1]));
            i += match k {
                kind::POLYGON => 4 + 2 * data[i + 2] as usize,
                kind::CIRCLE => 7,
                kind::CAPSULE => 7,
                kind::SEGMENT | kind::JOINT => 6,
                kind::PLAYER => 4,
                _ => panic!("unknown record kind {k} at {i}"),
            };
        }
        out
    }

    #[test]
    fn draw_list_holds_every_shape_and_each_player() {
        let rules = Sandbox::default();
        let mut game = Game::new(rules.clone(), 4);
        let join = InputSet {
            inputs: vec![Default::default(); 4],
            events: vec![SlotEvent::Join(2)],
        };
        game.step(&join);
        let mut interp = Interpolator::default();
        interp.observe(game.world(), game.tick(), 0.0, false);
        let mut list = DrawList::default();
        list.build(game.world(), &interp, 1.0, &[]);
        let recs = records(&list.data);
        let shapes = recs.iter().filter(|(k, _)| *k <= kind::SEGMENT).count();
        assert_eq!(shapes as u32, list.shapes);
        assert_eq!(
            shapes,
            rules.build_world().body_count() + 1,
            "one shape per body"
        );
        let players: Vec<_> = recs.iter().filter(|(k, _)| *k == kind::PLAYER).collect();
        assert_eq!(players, vec![&(kind::PLAYER, 2.0)]);
        // Statics first.
        assert_eq!(recs[0].1, style::STATIC);
        // The arena is 84 m wide.
        assert!(
            list.bounds[0] < -41.0 && list.bounds[2] > 41.0,
            "{:?}",
            list.bounds
        );
    }

    #[test]
    fn poses_are_interpolated_between_the_last_two_ticks() {
        let rules = Sandbox::default();
        let mut game = Game::new(rules, 1);
        let none = InputSet {
            inputs: vec![Default::default()],
            events: vec![],
        };
        let mut interp = Interpolator::default();
        interp.observe(game.world(), game.tick(), 0.0, false);
        for _ in 0..10 {
            game.step(&none);
        }
        let before = World::from_snapshot(&game.world().snapshot());
        interp.observe(&before, game.tick(), 100.0, false);
        game.step(&none);
        interp.observe(game.world(), game.tick(), 116.0, false);
        assert_eq!(interp.alpha(116.0, 16.0), 0.0);
        assert_eq!(interp.alpha(124.0, 16.0), 0.5);
        assert_eq!(interp.alpha(200.0, 16.0), 1.0);
        // A falling body: halfway between its two positions.
        let falling = game
            .world()
            .bodies()
            .find(|&b| game.world().body_kind(b) == Ok(BodyKind::Dynamic))
            .unwrap();
        let y0 = before.transform(falling).unwrap().p.y.to_f64() as f32;
        let y1 = game.world().transform(falling).unwrap().p.y.to_f64() as f32;
        assert!(y1 < y0, "it falls");
        let mid = interp.pose(falling, 0.5).unwrap().y;
        assert!((mid - (y0 + y1) / 2.0).abs() < 1e-4, "{y0} {mid} {y1}");
        assert_eq!(interp.pose(falling, 1.0).unwrap().y, y1);
    }
}
