//! The world's body API: create and destroy bodies, read them, push them,
//! wake them.

use super::{World, WorldError};
use crate::dynamics::body::{
    angular_speed_cap, Body, BodyConfig, BodyDef, BodyId, BodyKind, NONE, NO_ISLAND,
};
use crate::dynamics::island;
use crate::geometry::MassData;
use crate::math::{Rot, Scalar, Transform, Vec2, WORLD_BOUND};
use std::sync::Arc;

impl World {
    /// Creates a body.
    ///
    /// # Errors
    /// A position outside the world bounds or a negative damping.
    pub fn create_body(&mut self, def: &BodyDef) -> Result<BodyId, WorldError> {
        if def.position.x.abs() > WORLD_BOUND || def.position.y.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("position"));
        }
        let max_v = self.state.settings.max_linear_speed;
        if def.linear_velocity.x.abs() > max_v || def.linear_velocity.y.abs() > max_v {
            return Err(WorldError::OutOfBounds("linear_velocity"));
        }
        if def.linear_damping < Scalar::ZERO || def.angular_damping < Scalar::ZERO {
            return Err(WorldError::Negative("damping"));
        }
        let index = match self.state.free_bodies.pop() {
            Some(i) => i,
            None => {
                self.state.bodies.push(Body::vacant());
                Arc::make_mut(&mut self.state.body_config).push(BodyConfig::VACANT);
                (self.state.bodies.len() - 1) as u32
            }
        };
        *self.state.config_mut(index) = BodyConfig {
            linear_damping: def.linear_damping,
            angular_damping: def.angular_damping,
            gravity_scale: def.gravity_scale,
            sleep_threshold: def.sleep_threshold,
            enable_sleep: def.enable_sleep,
            fixed_rotation: def.fixed_rotation,
            user_data: def.user_data,
            bullet: def.bullet && def.kind == BodyKind::Dynamic,
            allow_fast_rotation: def.allow_fast_rotation,
            ..BodyConfig::VACANT
        };
        let b = &mut self.state.bodies[index as usize];
        let generation = b.generation;
        *b = Body::vacant();
        b.generation = generation;
        b.alive = true;
        b.kind = def.kind;
        b.transform = Transform::new(def.position, def.rotation.normalize());
        b.center = def.position;
        b.linear_velocity = def.linear_velocity;
        b.angular_velocity = def.angular_velocity;
        b.awake = def.kind != BodyKind::Static && def.awake;
        if def.kind != BodyKind::Static && !def.awake {
            b.sleep_island = index;
        }
        let id = BodyId { index, generation };
        self.update_mass(index);
        Ok(id)
    }

    pub(crate) fn body_index(&self, id: BodyId) -> Result<u32, WorldError> {
        match self.state.bodies.get(id.index as usize) {
            Some(b) if b.alive && b.generation == id.generation => Ok(id.index),
            _ => Err(WorldError::InvalidBody(id)),
        }
    }

    pub(super) fn body_ref(&self, id: BodyId) -> Result<&Body, WorldError> {
        let i = self.body_index(id)?;
        Ok(&self.state.bodies[i as usize])
    }

    /// Whether the handle names a live body.
    pub fn contains_body(&self, id: BodyId) -> bool {
        self.body_index(id).is_ok()
    }

    /// Destroys a body, its joints, shapes and contacts; wakes what touched
    /// it or was joined to it.
    ///
    /// # Errors
    /// A stale handle.
    pub fn destroy_body(&mut self, id: BodyId) -> Result<(), WorldError> {
        let index = self.body_index(id)?;
        self.destroy_joints_of(index);
        self.wake_touching(index);
        let st = &self.state;
        let gone = st
            .contacts
            .iter()
            .filter(|c| c.body_a == index || c.body_b == index);
        self.events.contacts_destroyed(&st.shapes, gone);
        let mut s = self.state.bodies[index as usize].first_shape;
        while s != NONE {
            let next = self.state.shapes[s as usize].next;
            self.free_shape(s);
            s = next;
        }
        self.state
            .contacts
            .retain(|c| c.body_a != index && c.body_b != index);
        let b = &mut self.state.bodies[index as usize];
        let generation = b.generation.wrapping_add(1);
        *b = Body::vacant();
        b.generation = generation;
        *self.state.config_mut(index) = BodyConfig::VACANT;
        self.state.free_bodies.push(index);
        Ok(())
    }

    /// Destroys several bodies with their joints, shapes and contacts, in
    /// one pass over the joints and contacts rather than one per body; wakes
    /// what touched them or was joined to them. Slots are freed in the order
    /// given (joints in slot order).
    ///
    /// # Errors
    /// A stale or repeated handle; then nothing is destroyed.
    pub fn destroy_bodies(&mut self, ids: &[BodyId]) -> Result<(), WorldError> {
        let mut doomed = vec![false; self.state.bodies.len()];
        for &id in ids {
            let i = self.body_index(id)? as usize;
            if doomed[i] {
                return Err(WorldError::InvalidBody(id));
            }
            doomed[i] = true;
        }
        for j in 0..self.state.joints.len() {
            let jj = &self.state.joints[j];
            if jj.alive && (doomed[jj.body_a as usize] || doomed[jj.body_b as usize]) {
                self.remove_joint(j as u32);
            }
        }
        let mut islands = Vec::new();
        for &id in ids {
            let b = &self.state.bodies[id.index as usize];
            if b.sleep_island != NO_ISLAND {
                islands.push(b.sleep_island);
            }
        }
        for c in &self.state.contacts {
            if doomed[c.body_a as usize] || doomed[c.body_b as usize] {
                for o in [c.body_a, c.body_b] {
                    let ob = &self.state.bodies[o as usize];
                    if ob.sleep_island != NO_ISLAND {
                        islands.push(ob.sleep_island);
                    }
                }
            }
        }
        islands.sort_unstable();
        islands.dedup();
        island::wake_islands(&mut self.state, &islands);
        for &id in ids {
            let mut s = self.state.bodies[id.index as usize].first_shape;
            while s != NONE {
                let next = self.state.shapes[s as usize].next;
                self.free_shape(s);
                s = next;
            }
        }
        self.state
            .contacts
            .retain(|c| !doomed[c.body_a as usize] && !doomed[c.body_b as usize]);
        for &id in ids {
            let b = &mut self.state.bodies[id.index as usize];
            let generation = b.generation.wrapping_add(1);
            *b = Body::vacant();
            b.generation = generation;
            *self.state.config_mut(id.index) = BodyConfig::VACANT;
            self.state.free_bodies.push(id.index);
        }
        Ok(())
    }

    /// Wakes the body's island and the islands of bodies touching it.
    pub(super) fn wake_touching(&mut self, index: u32) {
        let mut ids = Vec::new();
        let b = &self.state.bodies[index as usize];
        if b.sleep_island != NO_ISLAND {
            ids.push(b.sleep_island);
        }
        for c in &self.state.contacts {
            if c.body_a == index || c.body_b == index {
                for o in [c.body_a, c.body_b] {
                    let ob = &self.state.bodies[o as usize];
                    if ob.sleep_island != NO_ISLAND {
                        ids.push(ob.sleep_island);
                    }
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        island::wake_islands(&mut self.state, &ids);
    }

    pub(crate) fn wake_body(&mut self, index: u32) {
        let b = &self.state.bodies[index as usize];
        if b.kind == BodyKind::Static {
            return;
        }
        if b.sleep_island != NO_ISLAND {
            let id = [b.sleep_island];
            island::wake_islands(&mut self.state, &id);
        }
        self.state.bodies[index as usize].sleep_time = Scalar::ZERO;
    }

    /// Live bodies in slot order.
    pub fn bodies(&self) -> impl Iterator<Item = BodyId> + '_ {
        self.state
            .bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| b.alive)
            .map(|(i, b)| BodyId {
                index: i as u32,
                generation: b.generation,
            })
    }

    /// Number of live bodies.
    pub fn body_count(&self) -> usize {
        self.state.bodies.iter().filter(|b| b.alive).count()
    }

    /// Body kind.
    ///
    /// # Errors
    /// A stale handle.
    pub fn body_kind(&self, id: BodyId) -> Result<BodyKind, WorldError> {
        Ok(self.body_ref(id)?.kind)
    }

    /// Transform of the body origin.
    ///
    /// # Errors
    /// A stale handle.
    pub fn transform(&self, id: BodyId) -> Result<Transform, WorldError> {
        Ok(self.body_ref(id)?.transform)
    }

    /// Position of the body origin.
    ///
    /// # Errors
    /// A stale handle.
    pub fn position(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.transform.p)
    }

    /// World centre of mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn world_center(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.center)
    }

    /// Velocity of the centre of mass.
    ///
    /// # Errors
    /// A stale handle.
    pub fn linear_velocity(&self, id: BodyId) -> Result<Vec2, WorldError> {
        Ok(self.body_ref(id)?.linear_velocity)
    }

    /// Angular velocity (rad/s).
    ///
    /// # Errors
    /// A stale handle.
    pub fn angular_velocity(&self, id: BodyId) -> Result<Scalar, WorldError> {
        Ok(self.body_ref(id)?.angular_velocity)
    }

    /// Whether the body is awake (static bodies are never awake).
    ///
    /// # Errors
    /// A stale handle.
    pub fn is_awake(&self, id: BodyId) -> Result<bool, WorldError> {
        Ok(self.body_ref(id)?.awake)
    }

    /// Mass properties.
    ///
    /// # Errors
    /// A stale handle.
    pub fn mass_data(&self, id: BodyId) -> Result<MassData, WorldError> {
        let c = &self.state.body_config[self.body_index(id)? as usize];
        Ok(MassData {
            mass: c.mass,
            center: c.local_center,
            rotational_inertia: c.inertia,
        })
    }

    /// The user's id for the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn user_data(&self, id: BodyId) -> Result<u64, WorldError> {
        Ok(self.state.body_config[self.body_index(id)? as usize].user_data)
    }

    /// Sets the user's id for the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_user_data(&mut self, id: BodyId, data: u64) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        self.state.config_mut(i).user_data = data;
        Ok(())
    }

    /// Sets the velocity of the centre of mass; wakes the body.
    ///
    /// # Errors
    /// A stale handle or a speed beyond the limit.
    pub fn set_linear_velocity(&mut self, id: BodyId, v: Vec2) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        let max_v = self.state.settings.max_linear_speed;
        if v.x.abs() > max_v || v.y.abs() > max_v {
            return Err(WorldError::OutOfBounds("linear_velocity"));
        }
        if self.state.bodies[i as usize].kind == BodyKind::Static {
            return Ok(());
        }
        self.wake_body(i);
        self.state.bodies[i as usize].linear_velocity = v;
        Ok(())
    }

    /// Sets the angular velocity; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_angular_velocity(&mut self, id: BodyId, w: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        let b = &self.state.bodies[i as usize];
        if b.kind == BodyKind::Static || self.state.body_config[i as usize].fixed_rotation {
            return Ok(());
        }
        self.wake_body(i);
        let cap = self.angular_cap(i);
        self.state.bodies[i as usize].angular_velocity = w.clamp(-cap, cap);
        Ok(())
    }

    /// Applies a force at a world point for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_force(&mut self, id: BodyId, force: Vec2, point: Vec2) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let b = &mut self.state.bodies[i as usize];
        b.force += force;
        b.torque += (point - b.center).cross(force);
        Ok(())
    }

    /// Applies a force at the centre of mass for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_force_to_center(&mut self, id: BodyId, force: Vec2) -> Result<(), WorldError> {
        let c = self.body_ref(id)?.center;
        self.apply_force(id, force, c)
    }

    /// Applies a torque for the next step; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_torque(&mut self, id: BodyId, torque: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        self.state.bodies[i as usize].torque += torque;
        Ok(())
    }

    /// Applies an impulse at a world point, changing velocity at once; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_linear_impulse(
        &mut self,
        id: BodyId,
        impulse: Vec2,
        point: Vec2,
    ) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let cap = self.angular_cap(i);
        let c = &self.state.body_config[i as usize];
        let b = &mut self.state.bodies[i as usize];
        b.linear_velocity = b
            .linear_velocity
            .mul_add(c.inv_mass, impulse)
            .clamp_length(self.state.settings.max_linear_speed);
        let dw = c.inv_inertia * (point - b.center).cross(impulse);
        b.angular_velocity = (b.angular_velocity + dw).clamp(-cap, cap);
        Ok(())
    }

    /// Applies an angular impulse; wakes the body.
    ///
    /// # Errors
    /// A stale handle.
    pub fn apply_angular_impulse(&mut self, id: BodyId, impulse: Scalar) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if self.state.bodies[i as usize].kind != BodyKind::Dynamic {
            return Ok(());
        }
        self.wake_body(i);
        let cap = self.angular_cap(i);
        let inv_inertia = self.state.body_config[i as usize].inv_inertia;
        let b = &mut self.state.bodies[i as usize];
        b.angular_velocity = (b.angular_velocity + inv_inertia * impulse).clamp(-cap, cap);
        Ok(())
    }

    /// Teleports a body; wakes it and what touched it.
    ///
    /// # Errors
    /// A stale handle or a position outside the world bounds.
    pub fn set_transform(
        &mut self,
        id: BodyId,
        position: Vec2,
        rotation: Rot,
    ) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if position.x.abs() > WORLD_BOUND || position.y.abs() > WORLD_BOUND {
            return Err(WorldError::OutOfBounds("position"));
        }
        self.wake_touching(i);
        self.wake_body(i);
        let local_center = self.state.body_config[i as usize].local_center;
        let b = &mut self.state.bodies[i as usize];
        b.transform = Transform::new(position, rotation.normalize());
        b.center = b.transform.apply(local_center);
        self.refresh_shapes(i);
        Ok(())
    }

    /// Wakes or puts to sleep a body (and its island when waking).
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_awake(&mut self, id: BodyId, awake: bool) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        if awake {
            self.wake_body(i);
        } else {
            let b = &mut self.state.bodies[i as usize];
            if b.kind != BodyKind::Static && b.awake {
                b.awake = false;
                b.linear_velocity = Vec2::ZERO;
                b.angular_velocity = Scalar::ZERO;
                b.sleep_island = i;
            }
        }
        Ok(())
    }

    /// Makes a dynamic body a bullet (continuous collision against dynamic
    /// bodies too) or not. Ignored for static and kinematic bodies.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_bullet(&mut self, id: BodyId, bullet: bool) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        let dynamic = self.state.bodies[i as usize].kind == BodyKind::Dynamic;
        self.state.config_mut(i).bullet = bullet && dynamic;
        Ok(())
    }

    /// Whether the body is a bullet.
    ///
    /// # Errors
    /// A stale handle.
    pub fn is_bullet(&self, id: BodyId) -> Result<bool, WorldError> {
        let i = self.body_index(id)?;
        Ok(self.state.body_config[i as usize].bullet)
    }

    /// Lets the body spin past a quarter turn per step (a wheel), or not
    /// (see [`BodyDef::allow_fast_rotation`]). A body that may not keeps
    /// its angular speed until the next step caps it.
    ///
    /// # Errors
    /// A stale handle.
    pub fn set_allow_fast_rotation(&mut self, id: BodyId, allow: bool) -> Result<(), WorldError> {
        let i = self.body_index(id)?;
        self.state.config_mut(i).allow_fast_rotation = allow;
        Ok(())
    }

    /// Whether the body may spin past a quarter turn per step.
    ///
    /// # Errors
    /// A stale handle.
    pub fn allows_fast_rotation(&self, id: BodyId) -> Result<bool, WorldError> {
        let i = self.body_index(id)?;
        Ok(self.state.body_config[i as usize].allow_fast_rotation)
    }

    /// The cap on body `i`'s angular speed (rad/s).
    pub(crate) fn angular_cap(&self, i: u32) -> Scalar {
        let s = &self.state.settings;
        let fast = self.state.body_config[i as usize].allow_fast_rotation;
        angular_speed_cap(s.tick_rate, s.substeps, fast)
    }
}
