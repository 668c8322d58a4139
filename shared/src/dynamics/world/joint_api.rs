//! The world's joint API: create, destroy, inspect and steer joints.

use super::{World, WorldError, WorldState};
use crate::dynamics::body::{BodyId, NONE};
use crate::dynamics::contact::pair_key;
use crate::dynamics::joint::{
    frame_of, reaction, BrokenJoint, Joint, JointDef, JointId, JointKind,
};
use crate::math::{Rot, Scalar, Vec2, WORLD_BOUND};

fn in_bounds(v: Vec2) -> bool {
    v.x.abs() <= WORLD_BOUND && v.y.abs() <= WORLD_BOUND
}

impl World {
    /// Creates a joint between two bodies.
    ///
    /// A distance joint without a `length`, or a pulley joint without a
    /// `total_length`, measures it from the bodies' current poses. When
    /// `collide_connected` is false, contacts between the two bodies are
    /// removed and no new ones form while the joint exists. Sleeping bodies
    /// linked to awake ones are woken at the next step.
    ///
    /// # Errors
    /// A stale body handle, a body joined to itself, an anchor or target
    /// outside the world bounds, a negative break threshold, or parameters
    /// that make no sense (lower limit above upper, ratio ≤ 0, negative
    /// length, …), each naming the problem.
    pub fn create_joint(&mut self, def: &JointDef) -> Result<JointId, WorldError> {
        let a = self.body_index(def.body_a)?;
        let b = self.body_index(def.body_b)?;
        if a == b {
            return Err(WorldError::BadJoint("a joint needs two different bodies"));
        }
        if !in_bounds(def.local_anchor_a) || !in_bounds(def.local_anchor_b) {
            return Err(WorldError::OutOfBounds("joint anchor"));
        }
        if def.reference_angle.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("reference angle"));
        }
        if def.break_force < Scalar::ZERO {
            return Err(WorldError::Negative("break force"));
        }
        if def.break_torque < Scalar::ZERO {
            return Err(WorldError::Negative("break torque"));
        }
        def.kind.validate().map_err(WorldError::BadJoint)?;
        let (ba, bb) = (self.state.bodies[a as usize], self.state.bodies[b as usize]);
        let anchor_a = ba.transform.apply(def.local_anchor_a);
        let anchor_b = bb.transform.apply(def.local_anchor_b);
        let mut kind = def.kind;
        match &mut kind {
            JointKind::Distance(d) if d.length.is_none() => {
                d.length = Some((anchor_b - anchor_a).length());
            }
            JointKind::Pulley(p) => {
                if !in_bounds(p.ground_anchor_a) || !in_bounds(p.ground_anchor_b) {
                    return Err(WorldError::OutOfBounds("pulley ground anchor"));
                }
                if p.total_length.is_none() {
                    let la = (anchor_a - p.ground_anchor_a).length();
                    let lb = (anchor_b - p.ground_anchor_b).length();
                    p.total_length = Some(la + p.ratio * lb);
                }
            }
            JointKind::Target(t) if !in_bounds(t.target) => {
                return Err(WorldError::OutOfBounds("joint target"));
            }
            _ => {}
        }
        let index = match self.state.free_joints.pop() {
            Some(i) => i,
            None => {
                self.state.joints.push(Joint::vacant());
                (self.state.joints.len() - 1) as u32
            }
        };
        let generation = self.state.joints[index as usize].generation;
        self.state.joints[index as usize] = Joint {
            generation,
            alive: true,
            body_a: a,
            body_b: b,
            local_anchor_a: def.local_anchor_a,
            local_anchor_b: def.local_anchor_b,
            reference: if def.reference_angle.is_zero() {
                Rot::IDENTITY
            } else {
                Rot::from_angle(def.reference_angle)
            },
            collide_connected: def.collide_connected,
            break_force: def.break_force,
            break_torque: def.break_torque,
            user_data: def.user_data,
            kind,
            impulses: Default::default(),
        };
        if !def.collide_connected {
            self.state.joint_filter.invalidate();
            remove_contacts_between(&mut self.state, a, b);
        }
        Ok(JointId { index, generation })
    }

    /// A world point in a body's frame (for joint anchors given in world
    /// space).
    ///
    /// # Errors
    /// A stale handle.
    pub fn local_point(&self, body: BodyId, world_point: Vec2) -> Result<Vec2, WorldError> {
        let i = self.body_index(body)?;
        Ok(self.state.bodies[i as usize]
            .transform
            .inv_apply(world_point))
    }

    pub(crate) fn joint_index(&self, id: JointId) -> Result<u32, WorldError> {
        match self.state.joints.get(id.index as usize) {
            Some(j) if j.alive && j.generation == id.generation => Ok(id.index),
            _ => Err(WorldError::InvalidJoint(id)),
        }
    }

    fn joint_ref(&self, id: JointId) -> Result<&Joint, WorldError> {
        let i = self.joint_index(id)?;
        Ok(&self.state.joints[i as usize])
    }

    /// Whether the handle names a live joint.
    pub fn contains_joint(&self, id: JointId) -> bool {
        self.joint_index(id).is_ok()
    }

    /// Destroys a joint and wakes its bodies.
    ///
    /// # Errors
    /// A stale handle.
    pub fn destroy_joint(&mut self, id: JointId) -> Result<(), WorldError> {
        let i = self.joint_index(id)?;
        self.remove_joint(i);
        Ok(())
    }

    /// Frees joint slot `i`: wakes both bodies, and lets their shapes pair
    /// up again if the joint kept them apart.
    pub(crate) fn remove_joint(&mut self, i: u32) {
        let j = self.state.joints[i as usize];
        for body in [j.body_a, j.body_b] {
            if self.state.bodies[body as usize].alive {
                self.wake_body(body);
            }
        }
        if !j.collide_connected {
            self.state.joint_filter.invalidate();
            // Re-queue the shapes of one body for the pair search.
            let count = |w: &WorldState, b: u32| {
                let mut n = 0usize;
                let mut s = w.bodies[b as usize].first_shape;
                while s != NONE {
                    n += 1;
                    s = w.shapes[s as usize].next;
                }
                n
            };
            let (na, nb) = (count(&self.state, j.body_a), count(&self.state, j.body_b));
            let body = if na <= nb { j.body_a } else { j.body_b };
            if self.state.bodies[body as usize].alive {
                self.state.queue_shapes(body);
            }
        }
        let jj = &mut self.state.joints[i as usize];
        let generation = jj.generation.wrapping_add(1);
        *jj = Joint::vacant();
        jj.generation = generation;
        self.state.free_joints.push(i);
    }

    /// Destroys every joint attached to body slot `body`.
    pub(crate) fn destroy_joints_of(&mut self, body: u32) {
        for i in 0..self.state.joints.len() {
            let j = &self.state.joints[i];
            if j.alive && (j.body_a == body || j.body_b == body) {
                self.remove_joint(i as u32);
            }
        }
    }

    /// Destroys the joints in `broken` (slot indices, from the solver) and
    /// records them for [`World::broken_joints`].
    pub(crate) fn break_joints(&mut self, broken: &[u32]) {
        let inv_h = self.substep_rate();
        for &i in broken {
            let j = self.state.joints[i as usize];
            let (ba, bb) = (
                &self.state.bodies[j.body_a as usize],
                &self.state.bodies[j.body_b as usize],
            );
            let (force, torque) = reaction(&j, ba, bb, &self.state.body_config, inv_h);
            self.broken_joints.push(BrokenJoint {
                id: JointId {
                    index: i,
                    generation: j.generation,
                },
                user_data: j.user_data,
                force,
                torque,
            });
            self.remove_joint(i);
        }
    }

    fn substep_rate(&self) -> Scalar {
        let s = &self.state.settings;
        Scalar::from_int((s.tick_rate * s.substeps) as i32)
    }

    /// Joints destroyed at the end of the last step because they exceeded
    /// their break force or torque, in joint slot order.
    pub fn broken_joints(&self) -> &[BrokenJoint] {
        &self.broken_joints
    }

    /// Live joints in slot order.
    pub fn joints(&self) -> impl Iterator<Item = JointId> + '_ {
        self.state
            .joints
            .iter()
            .enumerate()
            .filter(|(_, j)| j.alive)
            .map(|(i, j)| JointId {
                index: i as u32,
                generation: j.generation,
            })
    }

    /// Number of live joints.
    pub fn joint_count(&self) -> usize {
        self.state.joints.iter().filter(|j| j.alive).count()
    }

    /// Joints attached to a body, in slot order.
    ///
    /// # Errors
    /// A stale handle.
    pub fn body_joints(&self, body: BodyId) -> Result<Vec<JointId>, WorldError> {
        let b = self.body_index(body)?;
        Ok(self
            .joints()
            .filter(|id| {
                let j = &self.state.joints[id.index as usize];
                j.body_a == b || j.body_b == b
            })
            .collect())
    }

    /// The two bodies of a joint.
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_bodies(&self, id: JointId) -> Result<(BodyId, BodyId), WorldError> {
        let j = self.joint_ref(id)?;
        let handle = |i: u32| BodyId {
            index: i,
            generation: self.state.bodies[i as usize].generation,
        };
        Ok((handle(j.body_a), handle(j.body_b)))
    }

    /// The joint's type and parameters (a distance or pulley joint created
    /// without a length reports the measured one).
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_kind(&self, id: JointId) -> Result<JointKind, WorldError> {
        Ok(self.joint_ref(id)?.kind)
    }

    /// The joint's user data.
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_user_data(&self, id: JointId) -> Result<u64, WorldError> {
        Ok(self.joint_ref(id)?.user_data)
    }

    /// Reaction force the joint applied to body B in the last step (N)
    /// (zero when the joint was not solved, e.g. while its bodies sleep).
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_reaction_force(&self, id: JointId) -> Result<Vec2, WorldError> {
        let j = self.joint_ref(id)?;
        let (ba, bb) = (
            &self.state.bodies[j.body_a as usize],
            &self.state.bodies[j.body_b as usize],
        );
        Ok(reaction(j, ba, bb, &self.state.body_config, self.substep_rate()).0)
    }

    /// Reaction torque the joint applied to body B in the last step (N·m).
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_reaction_torque(&self, id: JointId) -> Result<Scalar, WorldError> {
        let j = self.joint_ref(id)?;
        let (ba, bb) = (
            &self.state.bodies[j.body_a as usize],
            &self.state.bodies[j.body_b as usize],
        );
        Ok(reaction(j, ba, bb, &self.state.body_config, self.substep_rate()).1)
    }

    /// Current joint angle: B's rotation relative to A minus the reference
    /// angle, in `[−π, π]`.
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_angle(&self, id: JointId) -> Result<Scalar, WorldError> {
        let j = self.joint_ref(id)?;
        let (ba, bb) = (
            &self.state.bodies[j.body_a as usize],
            &self.state.bodies[j.body_b as usize],
        );
        Ok(frame_of(j, ba, bb, &self.state.body_config).angle0)
    }

    /// World positions of the two anchors (for drawing and inspection).
    ///
    /// # Errors
    /// A stale handle.
    pub fn joint_world_anchors(&self, id: JointId) -> Result<(Vec2, Vec2), WorldError> {
        let j = self.joint_ref(id)?;
        let (ba, bb) = (
            &self.state.bodies[j.body_a as usize],
            &self.state.bodies[j.body_b as usize],
        );
        Ok((
            ba.transform.apply(j.local_anchor_a),
            bb.transform.apply(j.local_anchor_b),
        ))
    }

    /// Moves a target joint's target point; wakes body B.
    ///
    /// # Errors
    /// A stale handle, a joint that is not a target joint, or a point
    /// outside the world bounds.
    pub fn set_joint_target(&mut self, id: JointId, target: Vec2) -> Result<(), WorldError> {
        let i = self.joint_index(id)?;
        if !in_bounds(target) {
            return Err(WorldError::OutOfBounds("joint target"));
        }
        let j = &mut self.state.joints[i as usize];
        let JointKind::Target(t) = &mut j.kind else {
            return Err(WorldError::BadJoint("not a target joint"));
        };
        t.target = target;
        let b = j.body_b;
        self.wake_body(b);
        Ok(())
    }

    /// Sets the motor speed of a revolute, prismatic, wheel or distance
    /// joint; wakes its bodies.
    ///
    /// # Errors
    /// A stale handle or a joint type without a motor.
    pub fn set_joint_motor_speed(&mut self, id: JointId, speed: Scalar) -> Result<(), WorldError> {
        let i = self.joint_index(id)?;
        let j = &mut self.state.joints[i as usize];
        match &mut j.kind {
            JointKind::Revolute(r) => r.motor_speed = speed,
            JointKind::Prismatic(p) => p.motor_speed = speed,
            JointKind::Wheel(w) => w.motor_speed = speed,
            JointKind::Distance(d) => d.motor_speed = speed,
            _ => return Err(WorldError::BadJoint("joint type has no motor")),
        }
        let (a, b) = (j.body_a, j.body_b);
        self.wake_body(a);
        self.wake_body(b);
        Ok(())
    }

    /// Sets the pose a motor joint drives body B to: anchor B onto
    /// `linear_offset` in A's frame, joint angle zero at `angular_offset`.
    /// Wakes the bodies.
    ///
    /// # Errors
    /// A stale handle, a joint that is not a motor joint, or an offset
    /// outside the world bounds.
    pub fn set_motor_joint_offsets(
        &mut self,
        id: JointId,
        linear_offset: Vec2,
        angular_offset: Scalar,
    ) -> Result<(), WorldError> {
        let i = self.joint_index(id)?;
        if !in_bounds(linear_offset) || angular_offset.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("motor joint offset"));
        }
        let j = &mut self.state.joints[i as usize];
        if !matches!(j.kind, JointKind::Motor(_)) {
            return Err(WorldError::BadJoint("not a motor joint"));
        }
        j.local_anchor_a = linear_offset;
        j.reference = Rot::from_angle(angular_offset);
        let (a, b) = (j.body_a, j.body_b);
        self.wake_body(a);
        self.wake_body(b);
        Ok(())
    }
}

/// Removes contacts between the shapes of bodies `a` and `b` (binary search
/// on the sorted contact list: shapes per body are few).
fn remove_contacts_between(st: &mut WorldState, a: u32, b: u32) {
    let mut sa = st.bodies[a as usize].first_shape;
    while sa != NONE {
        let mut sb = st.bodies[b as usize].first_shape;
        while sb != NONE {
            let key = pair_key(sa.min(sb), sa.max(sb));
            if let Ok(k) = st.contacts.binary_search_by_key(&key, |c| c.key()) {
                st.contacts.remove(k);
            }
            sb = st.shapes[sb as usize].next;
        }
        sa = st.shapes[sa as usize].next;
    }
}
