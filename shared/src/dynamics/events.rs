//! Events reported by each step: contacts that begin and end touching, hits,
//! and sensor overlaps that begin and end.
//!
//! # Not state
//!
//! Event buffers describe what happened during the *last* step. They are not
//! part of the world state: they are not hashed by [`World::state_hash`], not
//! saved in snapshots, and [`World::restore`] empties them. Each step clears
//! them first. The state they are derived from (each contact's touching flag)
//! *is* state, so a restored world reports exactly the events the original
//! reported from the same tick on.
//!
//! Destroying a shape or body between steps ends its touching contacts and
//! sensor overlaps; those end events are reported by the next step.
//!
//! # Order
//!
//! Every buffer is sorted by shape pair — `(shape_a, shape_b)` for contact
//! events, `(sensor, visitor)` for sensor events, slot index first and then
//! generation — so the order is the same on every machine and every run.
//! [`World::event_hash`] digests the events of the last step.
//!
//! # Which events
//!
//! - **Contact begin/end**: a non-sensor contact whose manifold gains its first
//!   point or loses its last one, when either shape has
//!   `enable_contact_events` (on by default). Begin events carry the
//!   manifold computed before the step's solve.
//! - **Hit**: a touching contact point whose approach speed before the solve
//!   exceeded the world's `hit_event_threshold` and that received a normal
//!   impulse, when either shape has `enable_hit_events` (off by default). One
//!   event per contact: its fastest point.
//! - **Sensor begin/end**: a sensor shape and a non-sensor shape with
//!   `enable_sensor_events` (on by default) start or stop overlapping
//!   (touching counts). Sensors see neither other sensors nor, as they never
//!   move, pairs of bodies that are both asleep or static.

use super::body::ShapeId;
use super::contact::Contact;
use super::shape::Shape;
use super::solver::ContactCold;
use crate::collision::Manifold;
use crate::math::{Scalar, Vec2};
use serde::Serialize;

/// Two shapes started touching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ContactBeginTouchEvent {
    /// First shape (lower slot).
    pub shape_a: ShapeId,
    /// Second shape.
    pub shape_b: ShapeId,
    /// The manifold (world points, normal from A to B, separations).
    pub manifold: Manifold,
}

/// Two shapes stopped touching (or one of them was destroyed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ContactEndTouchEvent {
    /// First shape (lower slot). May be stale if the shape was destroyed.
    pub shape_a: ShapeId,
    /// Second shape. May be stale if the shape was destroyed.
    pub shape_b: ShapeId,
}

/// Two shapes hit each other faster than the world's hit threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ContactHitEvent {
    /// First shape (lower slot).
    pub shape_a: ShapeId,
    /// Second shape.
    pub shape_b: ShapeId,
    /// World point of the fastest contact point.
    pub point: Vec2,
    /// Normal from A to B.
    pub normal: Vec2,
    /// Approach speed along the normal before the solve (m/s, positive).
    pub approach_speed: Scalar,
}

/// Contact events of the last step, each list sorted by shape pair.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ContactEvents {
    /// Contacts that began touching.
    pub begin: Vec<ContactBeginTouchEvent>,
    /// Contacts that stopped touching.
    pub end: Vec<ContactEndTouchEvent>,
    /// Hits above the threshold.
    pub hit: Vec<ContactHitEvent>,
}

/// A shape started overlapping a sensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SensorBeginTouchEvent {
    /// The sensor shape.
    pub sensor: ShapeId,
    /// The shape that entered it.
    pub visitor: ShapeId,
}

/// A shape stopped overlapping a sensor (or one of them was destroyed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SensorEndTouchEvent {
    /// The sensor shape (may be stale if destroyed).
    pub sensor: ShapeId,
    /// The shape that left it (may be stale if destroyed).
    pub visitor: ShapeId,
}

/// Sensor events of the last step, each list sorted by `(sensor, visitor)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SensorEvents {
    /// Overlaps that began.
    pub begin: Vec<SensorBeginTouchEvent>,
    /// Overlaps that ended.
    pub end: Vec<SensorEndTouchEvent>,
}

/// The world's event buffers (never state; see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    pub contact: ContactEvents,
    pub sensor: SensorEvents,
    /// End events from destroying shapes between steps, for the next step.
    pending_contact_end: Vec<ContactEndTouchEvent>,
    pending_sensor_end: Vec<SensorEndTouchEvent>,
}

#[inline]
fn sid(shapes: &[Shape], i: u32) -> ShapeId {
    ShapeId {
        index: i,
        generation: shapes[i as usize].generation,
    }
}

/// `(sensor, visitor)` of a sensor contact.
fn sensor_pair(shapes: &[Shape], c: &Contact) -> (ShapeId, ShapeId) {
    let (s, v) = if shapes[c.shape_a as usize].def.is_sensor {
        (c.shape_a, c.shape_b)
    } else {
        (c.shape_b, c.shape_a)
    };
    (sid(shapes, s), sid(shapes, v))
}

#[inline]
fn key(a: ShapeId, b: ShapeId) -> (u32, u32, u32, u32) {
    (a.index, b.index, a.generation, b.generation)
}

impl Events {
    /// Start of a step: forget the last step, keep what destruction ended.
    pub fn begin_step(&mut self) {
        self.contact.begin.clear();
        self.contact.hit.clear();
        self.contact.end.clear();
        self.sensor.begin.clear();
        self.sensor.end.clear();
        self.contact.end.append(&mut self.pending_contact_end);
        self.sensor.end.append(&mut self.pending_sensor_end);
    }

    /// End of a step: canonical order.
    pub fn finish_step(&mut self) {
        self.contact
            .begin
            .sort_by_key(|e| key(e.shape_a, e.shape_b));
        self.contact.end.sort_by_key(|e| key(e.shape_a, e.shape_b));
        self.contact.hit.sort_by_key(|e| key(e.shape_a, e.shape_b));
        self.sensor.begin.sort_by_key(|e| key(e.sensor, e.visitor));
        self.sensor.end.sort_by_key(|e| key(e.sensor, e.visitor));
    }

    /// Empties everything, pending end events included (after a restore).
    pub fn clear_all(&mut self) {
        self.pending_contact_end.clear();
        self.pending_sensor_end.clear();
        self.begin_step();
    }

    /// A contact changed its touching flag to `touching` during the step.
    pub fn touching_changed(
        &mut self,
        shapes: &[Shape],
        c: &Contact,
        touching: bool,
        manifold: &Manifold,
    ) {
        if !touching {
            self.ended(shapes, c, false);
        } else if c.sensor {
            let (sensor, visitor) = sensor_pair(shapes, c);
            self.sensor
                .begin
                .push(SensorBeginTouchEvent { sensor, visitor });
        } else if c.contact_events {
            self.contact.begin.push(ContactBeginTouchEvent {
                shape_a: sid(shapes, c.shape_a),
                shape_b: sid(shapes, c.shape_b),
                manifold: *manifold,
            });
        }
    }

    /// End event for a touching contact; `pending` defers it to the next step.
    fn ended(&mut self, shapes: &[Shape], c: &Contact, pending: bool) {
        if c.sensor {
            let (sensor, visitor) = sensor_pair(shapes, c);
            let e = SensorEndTouchEvent { sensor, visitor };
            if pending {
                self.pending_sensor_end.push(e);
            } else {
                self.sensor.end.push(e);
            }
        } else if c.contact_events {
            let e = ContactEndTouchEvent {
                shape_a: sid(shapes, c.shape_a),
                shape_b: sid(shapes, c.shape_b),
            };
            if pending {
                self.pending_contact_end.push(e);
            } else {
                self.contact.end.push(e);
            }
        }
    }

    /// Contacts about to be destroyed with a shape or body (call before the
    /// shapes' generations change): end events for the touching ones, for
    /// the next step.
    pub fn contacts_destroyed<'a>(
        &mut self,
        shapes: &[Shape],
        contacts: impl Iterator<Item = &'a Contact>,
    ) {
        for c in contacts.filter(|c| c.touching) {
            self.ended(shapes, c, true);
        }
    }

    /// After the solve: a hit event for a contact whose fastest approaching,
    /// impulse-carrying point exceeded `threshold`.
    pub fn check_hit(
        &mut self,
        shapes: &[Shape],
        c: &Contact,
        cold: &ContactCold,
        threshold: Scalar,
    ) {
        let mut best: Option<(Scalar, Vec2)> = None;
        for k in 0..usize::from(c.manifold.count) {
            let approach = -cold.relative_velocity[k];
            let top = best.map_or(threshold, |b| b.0);
            if approach > top && cold.max_normal_impulse[k] > Scalar::ZERO {
                best = Some((approach, c.manifold.points[k].point));
            }
        }
        if let Some((approach_speed, point)) = best {
            self.contact.hit.push(ContactHitEvent {
                shape_a: sid(shapes, c.shape_a),
                shape_b: sid(shapes, c.shape_b),
                point,
                normal: c.manifold.normal,
                approach_speed,
            });
        }
    }
}
