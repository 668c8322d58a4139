//! The game layer: per-tick player inputs applied to a world by pluggable
//! rules, plus the rollback timeline, the sync test and the bots built on
//! it.
//!
//! A [`Game`] is a [`World`] plus one [`Slot`] per player seat plus the
//! rules' own state. It advances one tick at a time with an [`InputSet`]:
//! first the tick's join / leave events (in the order given), then every
//! active slot's input in slot order, then one world step, then the rules'
//! `post_step`. Nothing else changes a game, so the same inputs give the same
//! bits everywhere.
//!
//! # Writing your own game
//!
//! Implement [`Rules`], with your own [`Input`] type (what one player sends
//! per tick: small fixed-size data, its largest encoding stated). Keep
//! every piece of state that affects the future in the world, in
//! [`Rules::Player`] or in [`Rules::State`] — those are hashed and
//! snapshotted; the rules value itself is configuration and is identified
//! by [`Rules::fingerprint`] (clients with a different fingerprint are
//! refused by the server).
//!
//! ```
//! use bitroom_sim::game::{Game, Input, InputSet, Rules, Slot};
//! use bitroom_sim::{fx, BodyDef, BodyId, ShapeDef, ShapeGeometry, Circle, Vec2, World};
//! use serde::{Deserialize, Serialize};
//!
//! /// What a player sends each tick: a push and a jump button.
//! #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
//! struct Push { x: i8, jump: bool }
//!
//! impl Input for Push {
//!     const MAX_ENCODED: usize = 2; // one i8, one bool
//! }
//!
//! /// Every player is a ball pushed sideways; the state counts jumps.
//! #[derive(Clone)]
//! struct Balls;
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Ball { body: Option<BodyId> }
//!
//! impl Rules for Balls {
//!     type Input = Push;
//!     type Player = Ball;
//!     type State = u32; // jumps so far
//!     fn fingerprint(&self) -> u64 { 0xba11 }
//!     fn build_world(&self) -> World { World::default() }
//!     fn join(&self, world: &mut World, _: &mut u32, slot: u8) -> Ball {
//!         let body = world.create_body(&BodyDef::dynamic(Vec2::from_ints(i32::from(slot), 5))).ok();
//!         if let Some(b) = body {
//!             let disc = Circle::new(Vec2::ZERO, fx(1) / fx(2)).unwrap();
//!             let _ = world.create_shape(b, &ShapeDef::default(), ShapeGeometry::Circle(disc));
//!         }
//!         Ball { body }
//!     }
//!     fn leave(&self, world: &mut World, _: &mut u32, _: u8, p: &mut Ball) {
//!         if let Some(b) = p.body.take() { let _ = world.destroy_body(b); }
//!     }
//!     fn apply_input(&self, world: &mut World, jumps: &mut u32, slot: &mut Slot<Ball, Push>, input: Push) {
//!         let Some(b) = slot.player.body else { return };
//!         let _ = world.apply_force_to_center(b, Vec2::new(fx(i32::from(input.x)), fx(0)));
//!         // `prev_input` is last tick's input: count presses, not holds.
//!         if input.jump && !slot.prev_input.jump { *jumps += 1; }
//!     }
//! }
//!
//! let mut game = Game::new(Balls, 2);
//! game.step(&InputSet::join(2, 0));
//! let push = Push { x: 100, jump: true };
//! for _ in 0..10 {
//!     game.step(&InputSet::with_inputs(vec![push, Push::default()]));
//! }
//! assert_eq!(game.tick(), 11);
//! assert_eq!(*game.state(), 1);
//! assert!(push.fits());
//! ```
//!
//! # Layout
//! - this file: [`Game`];
//! - `input.rs`: [`Input`], [`InputSet`], [`SlotEvent`];
//! - `rules.rs`: [`Rules`], [`Slot`], the avatar user-data convention;
//! - `snapshot.rs`: [`GameSnapshot`] and its byte forms;
//! - `rollback.rs`: [`Timeline`], prediction and rollback;
//! - `synctest.rs`: [`SyncTest`];
//! - [`bots`]: headless players ([`bots::Bot`], [`bots::BotRules`]);
//! - [`diff`]: field-by-field differences of two states;
//! - [`sandbox`]: the built-in game (its rules, input and bots).

pub mod bots;
pub mod diff;
mod input;
mod rollback;
mod rules;
pub mod sandbox;
mod snapshot;
mod synctest;

pub use input::{Input, InputSet, SlotEvent};
pub use rollback::{RollbackStats, Timeline, TimelineError};
pub use rules::{avatar_slot, avatar_user_data, Rules, Slot, SlotOf, AVATAR_TAG};
pub use snapshot::{GameSnapshot, GameSnapshotError, MAX_GAME_EXTRA_BYTES, PACKED_MAGIC};
pub use synctest::{SyncTest, SyncTestMismatch, SyncTestReport};

use crate::dynamics::World;
use snapshot::hash_parts;

/// Most player slots a game can have (the wire format uses a 32-bit mask).
pub const MAX_SLOTS: u8 = 32;

/// A world driven by rules and per-tick inputs.
#[derive(Debug)]
pub struct Game<R: Rules> {
    rules: R,
    world: World,
    slots: Vec<SlotOf<R>>,
    state: R::State,
}

impl<R: Rules> Game<R> {
    /// A game at tick 0 with `slots` free seats (at most [`MAX_SLOTS`]).
    pub fn new(rules: R, slots: u8) -> Game<R> {
        let world = rules.build_world();
        Game {
            rules,
            world,
            slots: vec![Slot::default(); usize::from(slots.min(MAX_SLOTS))],
            state: R::State::default(),
        }
    }

    /// The rules.
    pub fn rules(&self) -> &R {
        &self.rules
    }

    /// The world (read only: changes go through inputs).
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, for tools and tests. Changing it outside the rules makes
    /// this game diverge from its peers; that is what desync tests do.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// The seats.
    pub fn slots(&self) -> &[SlotOf<R>] {
        &self.slots
    }

    /// Number of seats.
    pub fn slot_count(&self) -> u8 {
        // At most MAX_SLOTS by construction and by decoding.
        self.slots.len() as u8
    }

    /// The inputs applied at the current tick, one per slot (the default
    /// input for free slots): the base for delta-coding the next tick's.
    pub fn current_inputs(&self) -> Vec<R::Input> {
        self.slots
            .iter()
            .map(|s| {
                if s.active {
                    s.prev_input
                } else {
                    R::Input::default()
                }
            })
            .collect()
    }

    /// The rules' game-wide state.
    pub fn state(&self) -> &R::State {
        &self.state
    }

    /// Ticks taken.
    pub fn tick(&self) -> u64 {
        self.world.tick()
    }

    /// Advances one tick with `input`.
    pub fn step(&mut self, input: &InputSet<R::Input>) {
        for ev in &input.events {
            match *ev {
                SlotEvent::Join(s) => {
                    if let Some(slot) = self.slots.get_mut(usize::from(s)) {
                        if !slot.active {
                            slot.active = true;
                            slot.prev_input = R::Input::default();
                            slot.player = self.rules.join(&mut self.world, &mut self.state, s);
                        }
                    }
                }
                SlotEvent::Leave(s) => {
                    if let Some(slot) = self.slots.get_mut(usize::from(s)) {
                        if slot.active {
                            self.rules
                                .leave(&mut self.world, &mut self.state, s, &mut slot.player);
                            *slot = Slot::default();
                        }
                    }
                }
            }
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if !slot.active {
                continue;
            }
            let inp = input.inputs.get(i).copied().unwrap_or_default();
            self.rules
                .apply_input(&mut self.world, &mut self.state, slot, inp);
            slot.prev_input = inp;
        }
        self.world.step();
        self.rules
            .post_step(&mut self.world, &mut self.state, &mut self.slots);
    }

    /// XXH3-64 (seed 0) of: the world's state hash as 8 little-endian bytes,
    /// then the slots and the rules state in the canonical encoding (see
    /// `encoding::canonical`: bincode 2, fixed-int, little-endian).
    pub fn state_hash(&self) -> u64 {
        hash_parts(self.world.state_hash(), &self.slots, &self.state)
    }

    /// Saves the complete game state.
    pub fn snapshot(&self) -> GameSnapshot<R> {
        GameSnapshot {
            world: self.world.snapshot(),
            slots: self.slots.clone(),
            state: self.state.clone(),
        }
    }

    /// Saves into an existing snapshot, reusing its allocations.
    pub fn snapshot_into(&self, into: &mut GameSnapshot<R>) {
        self.world.snapshot_into(&mut into.world);
        into.slots.clone_from(&self.slots);
        into.state.clone_from(&self.state);
    }

    /// Replaces the state with a saved one, reusing this game's allocations.
    pub fn restore(&mut self, snap: &GameSnapshot<R>) {
        self.world.restore(&snap.world);
        self.slots.clone_from(&snap.slots);
        self.state.clone_from(&snap.state);
    }

    /// A game continuing from a snapshot.
    pub fn from_snapshot(rules: R, snap: &GameSnapshot<R>) -> Game<R> {
        Game {
            rules,
            world: World::from_snapshot(&snap.world),
            slots: snap.slots.clone(),
            state: snap.state.clone(),
        }
    }
}
