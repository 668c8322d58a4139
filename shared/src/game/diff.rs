//! Field-by-field comparison of two game states, for desync forensics:
//! which bodies differ and in which fields, then what else differs (seats,
//! rules state, shapes, contacts, id pools, settings).
//!
//! Two states are equal exactly when their canonical encodings are (that is
//! what the state hash covers), and every comparison here is on the encoded
//! values, so two states with different hashes always give a non-empty
//! [`StateDiff`]. A body difference that none of the listed public fields
//! shows (mass, sleep timer, pending force, ...) is reported as
//! [`Field::Internal`].
//!
//! Bodies are matched by slot index: a slot alive in one state only, or
//! holding another generation, is reported with [`Field::Presence`] or
//! [`Field::Generation`].

use super::{GameSnapshot, Rules};
use crate::dynamics::{BodyId, BodyKind, World, WorldState};
use crate::math::{Rot, Scalar, Vec2};
use crate::state::Snapshot;
use std::fmt;

/// Most entries in [`StateDiff::other`] (the rest are counted).
pub const MAX_OTHER_DIFFS: usize = 64;

/// The compared state of one body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyFields {
    /// Handle (slot index and generation).
    pub id: BodyId,
    /// Static, kinematic or dynamic.
    pub kind: BodyKind,
    /// Origin in world space.
    pub position: Vec2,
    /// Orientation.
    pub rotation: Rot,
    /// Velocity of the centre of mass.
    pub linear_velocity: Vec2,
    /// Angular velocity (rad/s).
    pub angular_velocity: Scalar,
    /// Whether the body is awake (not sleeping).
    pub awake: bool,
    /// Touching contacts the body takes part in.
    pub contacts: u32,
    /// The user's opaque id (the sandbox tags avatars with it).
    pub user_data: u64,
}

impl BodyFields {
    /// The orientation as an angle in `[−π, π]`.
    pub fn angle(&self) -> Scalar {
        self.rotation.angle()
    }
}

/// A body field that can differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// The slot holds a live body in one state only.
    Presence,
    /// The slot holds bodies of different generations.
    Generation,
    /// Body kind.
    Kind,
    /// Origin position.
    Position,
    /// Orientation.
    Angle,
    /// Linear velocity.
    LinearVelocity,
    /// Angular velocity.
    AngularVelocity,
    /// Awake / asleep.
    Awake,
    /// Number of touching contacts.
    Contacts,
    /// User data.
    UserData,
    /// Something not listed above (mass, forces, sleep timer, island, ...).
    Internal,
}

impl Field {
    /// Short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Field::Presence => "presence",
            Field::Generation => "generation",
            Field::Kind => "kind",
            Field::Position => "position",
            Field::Angle => "angle",
            Field::LinearVelocity => "linear velocity",
            Field::AngularVelocity => "angular velocity",
            Field::Awake => "awake",
            Field::Contacts => "contacts",
            Field::UserData => "user data",
            Field::Internal => "internal",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One body slot whose state differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyDiff {
    /// Body slot index.
    pub index: u32,
    /// The body in the first state (`None`: no live body in that slot).
    pub a: Option<BodyFields>,
    /// The body in the second state.
    pub b: Option<BodyFields>,
    /// The fields that differ, in [`Field`] order.
    pub fields: Vec<Field>,
}

/// A seat whose state differs (values rendered with `Debug`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotDiff {
    /// The seat.
    pub slot: u8,
    /// In the first state (`None`: the state has no such seat).
    pub a: Option<String>,
    /// In the second state.
    pub b: Option<String>,
}

/// Everything that differs between two states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateDiff {
    /// Tick of the first state.
    pub tick_a: u64,
    /// Tick of the second state.
    pub tick_b: u64,
    /// Differing body slots, by index.
    pub bodies: Vec<BodyDiff>,
    /// Differing seats.
    pub slots: Vec<SlotDiff>,
    /// The rules' game-wide state, when it differs (`Debug` renderings).
    pub rules_state: Option<(String, String)>,
    /// Other differing parts of the world, named ("shape 12", "contact
    /// between shapes 3 and 17", "free body list", "settings", ...), at most
    /// [`MAX_OTHER_DIFFS`].
    pub other: Vec<String>,
    /// Differing parts left out of `other`.
    pub other_omitted: u32,
}

impl StateDiff {
    /// Whether the states are equal.
    pub fn is_empty(&self) -> bool {
        self.tick_a == self.tick_b
            && self.bodies.is_empty()
            && self.slots.is_empty()
            && self.rules_state.is_none()
            && self.other.is_empty()
            && self.other_omitted == 0
    }
}

/// Compares two game states (see the module docs).
pub fn diff_states<R: Rules>(a: &GameSnapshot<R>, b: &GameSnapshot<R>) -> StateDiff {
    let mut d = diff_worlds(&a.world, &b.world);
    let n = a.slots.len().max(b.slots.len());
    for i in 0..n {
        let (sa, sb) = (a.slots.get(i), b.slots.get(i));
        if sa != sb {
            d.slots.push(SlotDiff {
                slot: i as u8,
                a: sa.map(|s| format!("{s:?}")),
                b: sb.map(|s| format!("{s:?}")),
            });
        }
    }
    if a.state != b.state {
        d.rules_state = Some((format!("{:?}", a.state), format!("{:?}", b.state)));
    }
    d
}

/// Compares two world states (see the module docs).
pub fn diff_worlds(a: &Snapshot, b: &Snapshot) -> StateDiff {
    let (sa, sb) = (a.world_state(), b.world_state());
    let mut d = StateDiff {
        tick_a: sa.tick,
        tick_b: sb.tick,
        ..StateDiff::default()
    };
    let mut other = Vec::new();
    if sa.settings != sb.settings {
        other.push("settings".to_string());
    }
    if sa.tick != sb.tick {
        other.push("tick".to_string());
    }
    let (ca, cb) = (contact_counts(sa), contact_counts(sb));
    for i in 0..sa.bodies.len().max(sb.bodies.len()) {
        // A slot and its settings.
        let slot = |s: &WorldState| s.bodies.get(i).copied().zip(s.body_config.get(i).copied());
        let (ba, bb) = (slot(sa), slot(sb));
        if ba == bb {
            continue;
        }
        let (fa, fb) = (fields_of(sa, i, &ca), fields_of(sb, i, &cb));
        let mut fields = Vec::new();
        match (fa, fb, ba, bb) {
            (Some(x), Some(y), Some(ba), Some(bb)) => {
                let checks = [
                    (x.id.generation != y.id.generation, Field::Generation),
                    (x.kind != y.kind, Field::Kind),
                    (x.position != y.position, Field::Position),
                    (x.rotation != y.rotation, Field::Angle),
                    (
                        x.linear_velocity != y.linear_velocity,
                        Field::LinearVelocity,
                    ),
                    (
                        x.angular_velocity != y.angular_velocity,
                        Field::AngularVelocity,
                    ),
                    (x.awake != y.awake, Field::Awake),
                    (x.contacts != y.contacts, Field::Contacts),
                    (x.user_data != y.user_data, Field::UserData),
                ];
                fields.extend(checks.iter().filter(|c| c.0).map(|c| c.1));
                // Copy the listed fields (and the centre of mass, which
                // follows the transform) across: what still differs is
                // internal.
                let mut y2 = bb;
                y2.0.generation = ba.0.generation;
                y2.0.kind = ba.0.kind;
                y2.0.transform = ba.0.transform;
                y2.0.center = ba.0.center;
                y2.0.linear_velocity = ba.0.linear_velocity;
                y2.0.angular_velocity = ba.0.angular_velocity;
                y2.0.awake = ba.0.awake;
                y2.1.user_data = ba.1.user_data;
                if y2 != ba {
                    fields.push(Field::Internal);
                }
            }
            (None, None, _, _) => {
                // Both slots free; they differ in their leftovers (the
                // generation a reused slot will get).
                other.push(format!("free body slot {i}"));
                continue;
            }
            _ => fields.push(Field::Presence),
        }
        if fields.is_empty() {
            // The contact count is derived; a difference shows elsewhere.
            continue;
        }
        d.bodies.push(BodyDiff {
            index: i as u32,
            a: fa,
            b: fb,
            fields,
        });
    }
    if sa.free_bodies != sb.free_bodies {
        other.push("free body list".to_string());
    }
    for i in 0..sa.shapes.len().max(sb.shapes.len()) {
        let (x, y) = (sa.shapes.get(i), sb.shapes.get(i));
        let same = match (x, y) {
            (Some(x), Some(y)) => {
                // The broad-phase proxy is derived, not state.
                let mut y = *y;
                y.proxy = x.proxy;
                *x == y && sa.geometry.get(i) == sb.geometry.get(i)
            }
            _ => false,
        };
        if !same {
            other.push(format!("shape {i}"));
        }
    }
    if sa.free_shapes != sb.free_shapes {
        other.push("free shape list".to_string());
    }
    let (mut i, mut j) = (0, 0);
    while i < sa.contacts.len() || j < sb.contacts.len() {
        let ka = sa.contacts.get(i).map(|c| c.key());
        let kb = sb.contacts.get(j).map(|c| c.key());
        let (c, tag) = match (ka, kb) {
            (Some(x), Some(y)) if x == y => {
                let same = sa.contacts[i] == sb.contacts[j];
                let c = sa.contacts[i];
                i += 1;
                j += 1;
                if same {
                    continue;
                }
                (c, "differs")
            }
            (Some(x), y) if y.is_none_or(|y| x < y) => {
                i += 1;
                (sa.contacts[i - 1], "only in the first state")
            }
            _ => {
                j += 1;
                (sb.contacts[j - 1], "only in the second state")
            }
        };
        other.push(format!(
            "contact between shapes {} and {} (bodies {} and {}) {tag}",
            c.shape_a, c.shape_b, c.body_a, c.body_b
        ));
    }
    if sa.moved != sb.moved {
        other.push("moved shape list".to_string());
    }
    if other.len() > MAX_OTHER_DIFFS {
        d.other_omitted = (other.len() - MAX_OTHER_DIFFS) as u32;
        other.truncate(MAX_OTHER_DIFFS);
    }
    d.other = other;
    d
}

/// Every live body's compared fields, in slot order (for exports).
pub fn body_fields(world: &World) -> Vec<BodyFields> {
    let s = &world.state;
    let counts = contact_counts(s);
    (0..s.bodies.len())
        .filter_map(|i| fields_of(s, i, &counts))
        .collect()
}

fn fields_of(s: &WorldState, i: usize, counts: &[u32]) -> Option<BodyFields> {
    s.bodies.get(i).filter(|b| b.alive).map(|b| BodyFields {
        id: BodyId {
            index: i as u32,
            generation: b.generation,
        },
        kind: b.kind,
        position: b.transform.p,
        rotation: b.transform.q,
        linear_velocity: b.linear_velocity,
        angular_velocity: b.angular_velocity,
        awake: b.awake,
        contacts: counts.get(i).copied().unwrap_or(0),
        user_data: s.body_config[i].user_data,
    })
}

/// Touching contacts per body slot.
fn contact_counts(s: &WorldState) -> Vec<u32> {
    let mut counts = vec![0u32; s.bodies.len()];
    for c in s.contacts.iter().filter(|c| c.touching) {
        for b in [c.body_a, c.body_b] {
            if let Some(n) = counts.get_mut(b as usize) {
                *n += 1;
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::sandbox::{Sandbox, SandboxConfig};
    use crate::game::{Game, InputSet};
    use crate::math::fx;

    fn game() -> Game<Sandbox> {
        let mut g = Game::new(Sandbox::new(SandboxConfig { loose_bodies: 12 }), 2);
        g.step(&InputSet::join(2, 0));
        for _ in 0..30 {
            g.step(&InputSet::default());
        }
        g
    }

    #[test]
    fn equal_states_give_an_empty_diff() {
        let g = game();
        assert!(diff_states(&g.snapshot(), &g.snapshot()).is_empty());
    }

    #[test]
    fn a_nudged_body_is_named_with_its_field() {
        let g = game();
        let mut h = Game::from_snapshot(g.rules().clone(), &g.snapshot());
        let body = h.world().bodies().nth(8).expect("a loose body");
        let xf = h.world().transform(body).expect("live");
        h.world_mut()
            .set_transform(body, xf.p + Vec2::new(fx(0), Scalar::from_bits(1)), xf.q)
            .expect("in bounds");
        let d = diff_states(&g.snapshot(), &h.snapshot());
        assert_eq!(d.bodies.len(), 1, "{d:?}");
        assert_eq!(d.bodies[0].index, body.index);
        assert!(d.bodies[0].fields.contains(&Field::Position));
        assert!(d.slots.is_empty() && d.rules_state.is_none());
    }

    #[test]
    fn a_hidden_difference_is_still_reported() {
        let g = game();
        let mut h = Game::from_snapshot(g.rules().clone(), &g.snapshot());
        let body = h.world().bodies().nth(8).expect("a loose body");
        h.world_mut()
            .apply_force_to_center(body, Vec2::new(fx(1), fx(0)))
            .expect("live");
        assert_ne!(g.state_hash(), h.state_hash());
        let d = diff_states(&g.snapshot(), &h.snapshot());
        assert_eq!(d.bodies.len(), 1, "{d:?}");
        assert_eq!(d.bodies[0].fields, vec![Field::Internal]);
    }

    #[test]
    fn seats_and_removed_bodies_are_reported() {
        let g = game();
        let mut h = Game::from_snapshot(g.rules().clone(), &g.snapshot());
        h.step(&InputSet::join(2, 1));
        let mut g2 = Game::from_snapshot(g.rules().clone(), &g.snapshot());
        g2.step(&InputSet::default());
        let d = diff_states(&g2.snapshot(), &h.snapshot());
        assert!(d.slots.iter().any(|s| s.slot == 1), "{d:?}");
        assert!(d
            .bodies
            .iter()
            .any(|b| b.a.is_none() && b.b.is_some() && b.fields == vec![Field::Presence]));
    }
}
