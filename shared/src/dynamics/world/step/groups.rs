//! Groups of the solve: the awake bodies split into groups that no solved
//! contact or joint joins, each group's contacts and joints prepared and
//! its substeps run on a thread of its own, with one thread's bits.
//!
//! # Why the bits are the same
//!
//! A pass of the solver changes a body only through the contacts and
//! joints that hold it, so what a body ends with depends only on the order
//! of the passes over its own. Two contacts or joints of different groups
//! share no body (a kinematic body joins the groups of what it touches, since
//! its positions move in the substeps; the static dummy, slot 0, is never
//! changed). So each group, solved alone in the order the whole list is
//! solved in (window by window, colour by colour: `graph`), ends as it
//! would have in the whole solve, whichever thread solves it and whatever
//! the other groups do meanwhile. A contact's colour depends only on the
//! colours its two bodies already hold in its window, and those come from
//! contacts of the same group, so colouring the whole list, as alone, and
//! laying its bundles out group by group gives every group the same
//! colours ([`crate::dynamics::graph::Graph::layout_groups`]). The joints
//! likewise: each group prepares those of its bodies, in joint order, each
//! revolute in the window of its colouring that the whole list gives it
//! (`joint::revolute_windows`), and solves them where the whole solve
//! does (first in the warm start, last in each pass). The joints that
//! break are reported in joint order, as one solver finds them.
//!
//! Each group has its own solver states, numbered from its own static
//! dummy: copied in from the step's states after they are made, and
//! copied back once the substeps and restitution are done, so that the
//! finish stage reads the step's states as alone.
//!
//! # When
//!
//! With workers, enough solved contacts for the preparation to be shared
//! out (`PARALLEL_CONTACTS` a thread, as for its ranges of bundles),
//! nothing in the overflow list (the one-at-a-time contacts stay in one
//! solve, for now), and groups of about an even share: many piles, a field
//! of debris, many ragdolls. One big pile is one group: its substeps may be
//! shared out run by run instead (`colours`).

use crate::dynamics::joint::JointSolver;
use crate::dynamics::solver::States;

/// One group of the step's solve.
#[derive(Debug, Default)]
pub(crate) struct SolveGroup {
    /// The group's solver states: its static dummy in slot 0, then the
    /// bodies of `members`, in order.
    pub(crate) states: States,
    /// The step's solver slot of the group's slot `k + 1`.
    pub(crate) members: Vec<u32>,
    /// Its contacts' places in the step's key order.
    pub(crate) places: Vec<u32>,
    /// Its joints, prepared at its slots.
    pub(crate) joints: JointSolver,
}

/// The step's groups (scratch).
#[derive(Debug, Default)]
pub(crate) struct Groups {
    /// The groups; the first `used` are this step's.
    pub(crate) list: Vec<SolveGroup>,
    /// How many groups this step solves apart; zero when the step solves
    /// as one (alone).
    pub(crate) used: usize,
    /// Each group's bundles (first, end), from the layout.
    pub(crate) bundles: Vec<(usize, usize)>,
    /// Per body, its slot in its group (0: not solved this step).
    pub(crate) local_of: Vec<u32>,
    /// The step's slots of the bodies of each joint solved, in joint
    /// order (planned with the contacts').
    pub(crate) joint_links: Vec<(u32, u32)>,
    /// The window of each revolute solved, in order (see
    /// `joint::revolute_windows`), and its scratch.
    pub(crate) windows: Vec<u32>,
    pub(crate) masks: Vec<(u32, u64)>,
    /// Union-find over the step's slots (the root of a set its smallest
    /// slot).
    parent: Vec<u32>,
    /// Per slot: for a root, its set's work while planning; then each
    /// slot's group.
    pub(crate) group_of: Vec<u64>,
}

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        let p = parent[i as usize];
        parent[i as usize] = parent[p as usize];
        i = p;
    }
    i
}

impl Groups {
    /// Plans the step's groups for `threads` threads from `links` (the
    /// slots of each contact solved, in key order; 0 for a body not
    /// solved) and [`Groups::joint_links`], the step's `states` and
    /// `awake` bodies (slot `k + 1` is
    /// body `awake[k]`) among `bodies` bodies. Sets of joined bodies are
    /// dealt to the groups in the order of their first slot, each group
    /// taking about an even share of the work (a body counts one, a
    /// contact or joint two). Returns whether the step solves in groups: at least
    /// two, none with more than three quarters of the work.
    pub(crate) fn plan(
        &mut self,
        threads: usize,
        links: &[(u32, u32)],
        states: &States,
        awake: &[u32],
        bodies: usize,
    ) -> bool {
        self.used = 0;
        let slots = states.len();
        if threads < 2 || slots < 3 {
            return false;
        }
        let parent = &mut self.parent;
        parent.clear();
        parent.extend(0..slots as u32);
        for &(a, b) in links.iter().chain(&self.joint_links) {
            if a != 0 && b != 0 {
                let (ra, rb) = (find(parent, a), find(parent, b));
                if ra != rb {
                    parent[ra.max(rb) as usize] = ra.min(rb);
                }
            }
        }
        let work = &mut self.group_of;
        work.clear();
        work.resize(slots, 0);
        for s in 1..slots as u32 {
            work[find(parent, s) as usize] += 1;
        }
        for &(a, b) in links.iter().chain(&self.joint_links) {
            let s = if a != 0 { a } else { b };
            if s != 0 {
                work[find(parent, s) as usize] += 2;
            }
        }
        let total: u64 = work.iter().sum();
        // Sets to groups: a set's root is its first slot, so each set is
        // dealt when its root comes; `work` then holds each slot's group.
        let mut shares = vec![0u64; threads];
        let (mut g, mut done) = (0, 0u64);
        for s in 1..slots {
            let root = find(parent, s as u32) as usize;
            if root == s {
                let w = work[s];
                shares[g] += w;
                done += w;
                work[s] = g as u64;
                if done * threads as u64 >= (g as u64 + 1) * total && g + 1 < threads {
                    g += 1;
                }
            } else {
                work[s] = work[root];
            }
        }
        let biggest = shares.iter().copied().max().unwrap_or(0);
        if shares.iter().filter(|&&w| w > 0).count() < 2 || biggest * 4 > total * 3 {
            return false;
        }
        if self.list.len() < threads {
            self.list.resize_with(threads, SolveGroup::default);
        }
        let list = &mut self.list[..threads];
        for grp in list.iter_mut() {
            grp.states.reset();
            grp.members.clear();
            grp.places.clear();
        }
        self.local_of.clear();
        self.local_of.resize(bodies, 0);
        for s in 1..slots {
            let grp = &mut list[work[s] as usize];
            grp.members.push(s as u32);
            grp.states
                .push(states.get(s as u32), states.center(s as u32));
            self.local_of[awake[s - 1] as usize] = grp.members.len() as u32;
        }
        // (A link always has a solved body: the contact loop skips the
        // others. One without would be laid out in no group.)
        for (k, &(a, b)) in links.iter().enumerate() {
            let s = if a != 0 { a } else { b };
            if s != 0 {
                list[work[s as usize] as usize].places.push(k as u32);
            }
        }
        self.used = threads;
        true
    }

    /// Copies the groups' states back into the step's.
    pub(crate) fn copy_out(&self, states: &mut States) {
        for grp in &self.list[..self.used] {
            for (k, &s) in grp.members.iter().enumerate() {
                states.bodies[s as usize] = grp.states.bodies[k + 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        BodyDef, BodyId, BodyKind, Circle, Polygon, Scalar, ShapeDef, ShapeGeometry, Vec2, World,
        WorldDef,
    };

    /// A world with a ground 1 200 m wide, and the ground's body.
    fn grounded() -> (World, BodyId) {
        let mut w = World::new(WorldDef::default()).unwrap();
        let g = super::super::test_ground(&mut w, 0, 600);
        (w, g)
    }

    /// A stack of `height` unit boxes at `x` on the ground, a centimetre
    /// apart; its top box.
    fn stack(w: &mut World, x: i32, height: i64) -> BodyId {
        let unit = ShapeGeometry::Polygon(Polygon::make_box(Scalar::HALF, Scalar::HALF));
        let mut top = None;
        for j in 0..height {
            let y = Scalar::HALF + Scalar::ratio(j * 101, 100);
            let at = Vec2::new(Scalar::from_int(x), y);
            let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
            w.create_shape(b, &ShapeDef::default(), unit).unwrap();
            top = Some(b);
        }
        top.expect("a stack of at least one box")
    }

    /// 1 500 stacks of six boxes, 2 m apart (a group each, or several
    /// stacks a group; 9 000 contacts, so a group's contacts span two
    /// windows), bouncy balls reporting hits dropped on them, and a
    /// kinematic plank sliding across the tops of the first two stacks:
    /// it joins their groups (it moves in the substeps), and is created
    /// last, so its slot comes after every other body's.
    fn piles() -> (World, [u32; 3]) {
        let (mut w, _) = grounded();
        // Ground for the stacks past x = 600, where the first ends.
        super::super::test_ground(&mut w, 2_100, 1_500);
        let tops: Vec<BodyId> = (0..1_500).map(|i| stack(&mut w, i * 2 - 500, 6)).collect();
        let ball = ShapeGeometry::Circle(Circle {
            center: Vec2::ZERO,
            radius: Scalar::ratio(1, 4),
        });
        for k in 0..24 {
            let def = ShapeDef {
                restitution: Scalar::HALF,
                enable_hit_events: true,
                ..ShapeDef::default()
            };
            let at = Vec2::new(
                Scalar::from_int(k * 10 - 500),
                Scalar::from_int(8 + k % 3 * 2),
            );
            let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
            w.create_shape(b, &def, ball).unwrap();
        }
        let plank = w
            .create_body(&BodyDef {
                kind: BodyKind::Kinematic,
                linear_velocity: Vec2::new(Scalar::ratio(1, 2), Scalar::ZERO),
                ..BodyDef::dynamic(Vec2::new(Scalar::ratio(-999, 2), Scalar::ratio(611, 100)))
            })
            .unwrap();
        let board =
            ShapeGeometry::Polygon(Polygon::make_box(Scalar::ratio(3, 2), Scalar::ratio(1, 10)));
        w.create_shape(plank, &ShapeDef::default(), board).unwrap();
        (w, [plank.index, tops[0].index, tops[1].index])
    }

    /// The piles on 2, 3 and 4 threads: every step's state and event
    /// hashes as on one thread; steps solved in groups, and in some the
    /// plank's group held both stacks it touches. (The step's buffers are
    /// looked at every fifth step; the steps between reuse them.)
    #[test]
    fn groups_keep_their_bits() {
        let run = |threads: usize| {
            let (mut w, [plank, top0, top1]) = piles();
            w.set_threads(threads).unwrap();
            let (mut digest, mut grouped, mut joined, mut spans, mut hits) = (0u64, 0, 0, 0, 0);
            for _ in 0..90 {
                w.step();
                hits += w.contact_events().hit.len();
                for v in [w.state_hash(), w.event_hash()] {
                    digest = (digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
                }
                // The step's buffers are the thread's: look at them here.
                if w.tick() % 5 != 0 {
                    continue;
                }
                w.take_shared_scratch();
                let sc = &w.scratch;
                if sc.groups.used == 0 {
                    continue;
                }
                grouped += 1;
                // A group whose contacts lie in two windows.
                let list = &sc.groups.list[..sc.groups.used];
                let window = crate::dynamics::graph::WINDOW as u32;
                if list.iter().any(|g| {
                    g.places.first().is_some_and(|&k| k < window)
                        && g.places.last().is_some_and(|&k| k >= window)
                }) {
                    spans += 1;
                }
                let group_of = |b: u32| {
                    let slot = sc.slot_of[b as usize];
                    let list = &sc.groups.list[..sc.groups.used];
                    list.iter().position(|g| g.members.contains(&slot))
                };
                let g = group_of(plank);
                if g.is_some() && g == group_of(top0) && g == group_of(top1) {
                    joined += 1;
                }
            }
            (digest, grouped, joined, spans, hits)
        };
        let (one, grouped, _, _, hits) = run(1);
        assert_eq!(grouped, 0, "one thread solves as one");
        assert!(hits > 10, "{hits} hits");
        for threads in [2, 3, 4] {
            let (digest, grouped, joined, spans, _) = run(threads);
            assert!(grouped > 6, "{threads} threads: {grouped} steps in groups");
            assert!(
                joined > 3,
                "{threads} threads: the plank joined its stacks {joined} times"
            );
            assert!(
                spans > 3,
                "{threads} threads: {spans} steps with a group in two windows"
            );
            assert_eq!(digest, one, "{threads} threads");
        }
    }

    /// Chains of ten links hanging from the ground (1 300 revolutes, so
    /// the revolutes' colouring has two windows; every seventh with a limit
    /// and a motor, every eleventh breakable), swinging down into
    /// stacks of boxes, two stacks' tops joined by a distance joint and two
    /// by a weld (joints of the general list that join groups), a kinematic
    /// lift hinged and sprung to two more, and a hub with seventy hinges
    /// (some solved one at a time, no colour left): on
    /// 2, 3 and 4 threads every step's state and event hashes and the
    /// broken joints as on one thread, and steps solved in groups.
    #[test]
    fn jointed_groups_keep_their_bits() {
        use crate::dynamics::joint::{DistanceJoint, RevoluteJoint, WeldJoint};
        use crate::{JointDef, JointKind};
        let build = || {
            let (mut w, ground) = grounded();
            // A hub with seventy spokes: more hinges on one body than a
            // window has colours, so some are solved one at a time; first,
            // so that the chains' windows count only the hinges coloured.
            let hub = w
                .create_body(&BodyDef::dynamic(Vec2::from_ints(300, 20)))
                .unwrap();
            let disc = ShapeGeometry::Circle(Circle {
                center: Vec2::ZERO,
                radius: Scalar::HALF,
            });
            w.create_shape(hub, &ShapeDef::default(), disc).unwrap();
            let pin = ShapeGeometry::Circle(Circle {
                center: Vec2::ZERO,
                radius: Scalar::ratio(1, 10),
            });
            for k in 0..70 {
                // Spokes in a row above the hub.
                let x = Scalar::from_int(300) + Scalar::ratio(k - 35, 4);
                let at = Vec2::new(x, Scalar::from_int(23));
                let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
                w.create_shape(b, &ShapeDef::default(), pin).unwrap();
                let hinge = JointKind::Revolute(RevoluteJoint::default());
                let mut def = JointDef::new(hub, b, hinge);
                // Hinged where it is, three metres above the hub.
                def.local_anchor_a = Vec2::new(Scalar::ratio(k - 35, 4), Scalar::from_int(3));
                w.create_joint(&def).unwrap();
            }
            let link = ShapeGeometry::Polygon(Polygon::make_box(
                Scalar::ratio(1, 4),
                Scalar::ratio(1, 10),
            ));
            // The links first, then their joints chain by chain from the
            // last: the joints' order is not the groups' (broken joints
            // are reported in joint order).
            // Low enough to swing into the stacks (revolutes and contacts
            // in one group).
            let y = Scalar::from_int(8);
            let x0 = |c: i32| Scalar::from_int(c * 8 - 520);
            let mut chains = Vec::new();
            for c in 0..130 {
                let links: Vec<_> = (0..10)
                    .map(|i| {
                        let at = Vec2::new(x0(c) + Scalar::ratio(2 * i + 1, 4), y);
                        let b = w.create_body(&BodyDef::dynamic(at)).unwrap();
                        w.create_shape(b, &ShapeDef::default(), link).unwrap();
                        b
                    })
                    .collect();
                chains.push(links);
            }
            let mut n = 0;
            for (c, links) in chains.iter().enumerate().rev() {
                let mut prev = ground;
                for (i, &b) in links.iter().enumerate() {
                    let kind = JointKind::Revolute(RevoluteJoint {
                        enable_limit: n % 7 == 0,
                        lower_angle: -Scalar::ONE,
                        upper_angle: Scalar::ONE,
                        enable_motor: n % 7 == 0,
                        motor_speed: Scalar::ONE,
                        max_motor_torque: Scalar::from_int(2),
                        ..RevoluteJoint::default()
                    });
                    let pivot = Vec2::new(x0(c as i32) + Scalar::ratio(i as i64, 2), y);
                    let mut def = JointDef::new(prev, b, kind);
                    def.local_anchor_a = if i == 0 {
                        pivot - Vec2::from_ints(0, -1)
                    } else {
                        Vec2::new(Scalar::ratio(1, 4), Scalar::ZERO)
                    };
                    def.local_anchor_b = Vec2::new(-Scalar::ratio(1, 4), Scalar::ZERO);
                    if n % 11 == 0 {
                        def.break_force = Scalar::from_int(6);
                    }
                    w.create_joint(&def).unwrap();
                    prev = b;
                    n += 1;
                }
            }
            // A stack between each even chain and the next, which both
            // strike (groups of two chains and a stack).
            let tops: Vec<BodyId> = (0..65).map(|i| stack(&mut w, i * 16 - 516, 5)).collect();
            let rod = JointKind::Distance(DistanceJoint::default());
            w.create_joint(&JointDef::new(tops[0], tops[1], rod))
                .unwrap();
            let weld = JointKind::Weld(WeldJoint::default());
            let mut def = JointDef::new(tops[4], tops[5], weld);
            def.local_anchor_a = Vec2::from_ints(8, 0);
            def.local_anchor_b = Vec2::from_ints(-8, 0);
            w.create_joint(&def).unwrap();
            // A kinematic lift joined to the last two stacks' tops by a
            // spring and a hinge (it joins their groups).
            let lift = w
                .create_body(&BodyDef {
                    kind: BodyKind::Kinematic,
                    linear_velocity: Vec2::new(Scalar::ZERO, Scalar::HALF),
                    ..BodyDef::dynamic(Vec2::from_ints(500, 7))
                })
                .unwrap();
            let spring = JointKind::Distance(DistanceJoint {
                enable_spring: true,
                hertz: Scalar::from_int(2),
                ..DistanceJoint::default()
            });
            w.create_joint(&JointDef::new(lift, tops[64], spring))
                .unwrap();
            let hinge = JointKind::Revolute(RevoluteJoint::default());
            let mut def = JointDef::new(lift, tops[63], hinge);
            def.local_anchor_a = Vec2::new(Scalar::from_int(-8), -Scalar::ratio(5, 2));
            w.create_joint(&def).unwrap();
            w
        };
        let run = |threads: usize| {
            let mut w = build();
            w.set_threads(threads).unwrap();
            let (mut digest, mut grouped, mut broken) = (0u64, 0, 0);
            for _ in 0..90 {
                w.step();
                broken += w.broken_joints().len();
                for b in w.broken_joints() {
                    digest = (digest ^ u64::from(b.id.index)).wrapping_mul(0x0000_0100_0000_01b3);
                }
                for v in [w.state_hash(), w.event_hash()] {
                    digest = (digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
                }
                if w.tick() % 5 == 0 {
                    w.take_shared_scratch();
                    grouped += usize::from(w.scratch.groups.used > 0);
                }
            }
            (digest, grouped, broken)
        };
        let (one, grouped, broken) = run(1);
        assert_eq!(grouped, 0, "one thread solves as one");
        assert!(broken > 3, "{broken} joints broke");
        for threads in [2, 3, 4] {
            let (digest, grouped, _) = run(threads);
            assert!(grouped > 5, "{threads} threads: {grouped} steps in groups");
            assert_eq!(digest, one, "{threads} threads");
        }
    }
}
