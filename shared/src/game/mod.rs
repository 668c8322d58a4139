//! The game layer: per-tick player inputs applied to a world by pluggable
//! rules, plus the rollback timeline and the sync test built on it.
//!
//! A [`Game`] is a [`World`] plus one [`Slot`] per player seat plus the
//! rules' own state. It advances one tick at a time with an [`InputSet`]:
//! first the tick's join / leave events (in the order given), then every
//! active slot's input in slot order, then one world step, then the rules'
//! `post_step`. Nothing else changes a game, so the same inputs give the same
//! bits everywhere.
//!
//! # Writing your own rules
//!
//! Implement [`Rules`]. Keep every piece of state that affects the future in
//! the world, in [`Rules::Player`] or in [`Rules::State`] — those are hashed
//! and snapshotted; the rules value itself is configuration and is identified
//! by [`Rules::fingerprint`] (clients with a different fingerprint are
//! refused by the server).
//!
//! ```
//! use bitroom_sim::game::{Game, InputSet, PlayerInput, Rules, Slot};
//! use bitroom_sim::{fx, BodyDef, BodyId, ShapeDef, ShapeGeometry, Circle, Vec2, World};
//! use serde::{Deserialize, Serialize};
//!
//! /// Every player is a ball pushed by the move axes; the score counts jumps.
//! #[derive(Clone)]
//! struct Balls;
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Ball { body: Option<BodyId> }
//!
//! impl Rules for Balls {
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
//!     fn apply_input(&self, world: &mut World, jumps: &mut u32, slot: &mut Slot<Ball>, input: PlayerInput) {
//!         let Some(b) = slot.player.body else { return };
//!         let _ = world.apply_force_to_center(b, Vec2::new(fx(i32::from(input.move_x)), fx(0)));
//!         if slot.pressed(input, PlayerInput::JUMP) { *jumps += 1; }
//!     }
//! }
//!
//! let mut game = Game::new(Balls, 2);
//! game.step(&InputSet::join(2, 0));
//! let push = PlayerInput { move_x: 100, ..PlayerInput::default() };
//! for _ in 0..10 {
//!     game.step(&InputSet::with_inputs(vec![push, PlayerInput::default()]));
//! }
//! assert_eq!(game.tick(), 11);
//! ```

pub mod bots;
pub mod diff;
mod rollback;
pub mod sandbox;
mod synctest;

pub use rollback::{RollbackStats, Timeline, TimelineError};
pub use synctest::{SyncTest, SyncTestMismatch, SyncTestReport};

use crate::dynamics::World;
use crate::encoding::{canonical::CONFIG, Snapshot, SnapshotError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use xxhash_rust::xxh3::Xxh3;

/// Most player slots a game can have (the wire format uses a 32-bit mask).
pub const MAX_SLOTS: u8 = 32;

/// One player's input for one tick: 5 bytes on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlayerInput {
    /// Button bits ([`PlayerInput::JUMP`], [`PlayerInput::GRAB`], ...).
    pub buttons: u8,
    /// Horizontal move axis, −127 (left) … 127 (right).
    pub move_x: i8,
    /// Vertical move axis, −127 (down) … 127 (up).
    pub move_y: i8,
    /// Aim angle quantised to 1/65536 of a turn, counter-clockwise from +x.
    pub aim: u16,
}

impl PlayerInput {
    /// Jump button.
    pub const JUMP: u8 = 1;
    /// Grab button (held: keep holding).
    pub const GRAB: u8 = 2;
    /// Throw button (releases what is held with an impulse along the aim).
    pub const THROW: u8 = 4;

    /// Whether a button bit is set.
    pub fn held(self, button: u8) -> bool {
        self.buttons & button != 0
    }
}

/// A seat joining or leaving, applied at the start of a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlotEvent {
    /// The slot becomes active (the rules spawn its avatar).
    Join(u8),
    /// The slot becomes free (the rules remove its avatar).
    Leave(u8),
}

/// Everything that enters one tick: an input per slot and the seat changes.
///
/// Missing inputs count as the default input; inputs and events for slots
/// outside the game are ignored, so any decoded value is safe to apply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSet {
    /// Input of slot `i` at index `i`.
    pub inputs: Vec<PlayerInput>,
    /// Join / leave events, applied in order before the inputs.
    pub events: Vec<SlotEvent>,
}

impl InputSet {
    /// Default inputs for `slots` seats and one join event.
    pub fn join(slots: u8, slot: u8) -> InputSet {
        InputSet {
            inputs: vec![PlayerInput::default(); usize::from(slots)],
            events: vec![SlotEvent::Join(slot)],
        }
    }

    /// Inputs only.
    pub fn with_inputs(inputs: Vec<PlayerInput>) -> InputSet {
        InputSet {
            inputs,
            events: Vec::new(),
        }
    }

    /// The input of a slot (default when missing).
    pub fn input(&self, slot: u8) -> PlayerInput {
        self.inputs
            .get(usize::from(slot))
            .copied()
            .unwrap_or_default()
    }
}

/// A player seat. Part of the game state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slot<P> {
    /// Whether a player occupies the seat.
    pub active: bool,
    /// The input applied last tick (for edge detection).
    pub prev_input: PlayerInput,
    /// The rules' per-player state.
    pub player: P,
}

impl<P> Slot<P> {
    /// Whether `button` went down this tick.
    pub fn pressed(&self, input: PlayerInput, button: u8) -> bool {
        input.held(button) && !self.prev_input.held(button)
    }
}

/// Game rules: how players enter, how inputs move bodies.
///
/// Every method must be deterministic: use only its arguments (no clocks, no
/// OS randomness, no hash-map iteration, no floats).
pub trait Rules: Clone {
    /// Per-player state (part of the hash and the snapshot).
    type Player: Clone + Debug + Default + PartialEq + Serialize + DeserializeOwned;
    /// Game-wide state beyond the world (part of the hash and the snapshot).
    type State: Clone + Debug + Default + PartialEq + Serialize + DeserializeOwned;

    /// Identifies the rules, their parameters and their scene. Two builds
    /// that disagree here cannot play together.
    fn fingerprint(&self) -> u64;

    /// The world at tick 0.
    fn build_world(&self) -> World;

    /// A player takes `slot`: spawn what it controls.
    fn join(&self, world: &mut World, state: &mut Self::State, slot: u8) -> Self::Player;

    /// A player leaves `slot`: remove what it controlled.
    fn leave(
        &self,
        world: &mut World,
        state: &mut Self::State,
        slot: u8,
        player: &mut Self::Player,
    );

    /// Applies one active slot's input before the world steps.
    fn apply_input(
        &self,
        world: &mut World,
        state: &mut Self::State,
        slot: &mut Slot<Self::Player>,
        input: PlayerInput,
    );

    /// Runs after the world stepped (scoring, respawns). Default: nothing.
    fn post_step(
        &self,
        _world: &mut World,
        _state: &mut Self::State,
        _slots: &mut [Slot<Self::Player>],
    ) {
    }
}

/// A world driven by rules and per-tick inputs.
#[derive(Debug)]
pub struct Game<R: Rules> {
    rules: R,
    world: World,
    slots: Vec<Slot<R::Player>>,
    state: R::State,
}

/// A saved game: `restore` + N ticks equals N ticks, bit for bit.
#[derive(Debug)]
pub struct GameSnapshot<R: Rules> {
    world: Snapshot,
    slots: Vec<Slot<R::Player>>,
    state: R::State,
}

impl<R: Rules> Clone for GameSnapshot<R> {
    fn clone(&self) -> Self {
        GameSnapshot {
            world: self.world.clone(),
            slots: self.slots.clone(),
            state: self.state.clone(),
        }
    }

    fn clone_from(&mut self, o: &Self) {
        self.world.clone_from(&o.world);
        self.slots.clone_from(&o.slots);
        self.state.clone_from(&o.state);
    }
}

/// Largest game-state part (slots + rules state) accepted when decoding.
pub const MAX_GAME_EXTRA_BYTES: usize = 1 << 20;

/// The first bytes of a packed game snapshot ([`GameSnapshot::to_packed`]).
/// Read as the canonical form's world length (`u32` LE) they would be
/// 1.26 GB, over [`crate::state::MAX_SNAPSHOT_BYTES`], so the two forms
/// cannot be confused.
pub const PACKED_MAGIC: &[u8; 4] = b"BRPK";

/// Why game snapshot bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum GameSnapshotError {
    /// The world part was refused.
    #[error("world part: {0}")]
    World(#[from] SnapshotError),
    /// The bytes end before the declared world part.
    #[error("game snapshot is truncated")]
    Truncated,
    /// The slots or rules state do not decode.
    #[error("game part does not decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// Bytes left over.
    #[error("game snapshot has {0} trailing bytes")]
    Trailing(usize),
    /// Packed bytes were expected and [`PACKED_MAGIC`] is missing.
    #[error("not a packed game snapshot")]
    NotPacked,
    /// More slots than [`MAX_SLOTS`], or a different count than expected.
    #[error("game snapshot has {0} slots")]
    Slots(usize),
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
    pub fn slots(&self) -> &[Slot<R::Player>] {
        &self.slots
    }

    /// Number of seats.
    pub fn slot_count(&self) -> u8 {
        // At most MAX_SLOTS by construction and by decoding.
        self.slots.len() as u8
    }

    /// The inputs applied at the current tick, one per slot (the default
    /// input for free slots): the base for delta-coding the next tick's.
    pub fn current_inputs(&self) -> Vec<PlayerInput> {
        self.slots
            .iter()
            .map(|s| {
                if s.active {
                    s.prev_input
                } else {
                    PlayerInput::default()
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
    pub fn step(&mut self, input: &InputSet) {
        for ev in &input.events {
            match *ev {
                SlotEvent::Join(s) => {
                    if let Some(slot) = self.slots.get_mut(usize::from(s)) {
                        if !slot.active {
                            slot.active = true;
                            slot.prev_input = PlayerInput::default();
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

fn hash_parts<P: Serialize, S: Serialize>(world_hash: u64, slots: &[Slot<P>], state: &S) -> u64 {
    let mut h = Xxh3::new();
    h.update(&world_hash.to_le_bytes());
    let mut extra = Vec::new();
    crate::encoding::canonical::encode_into(&(slots, state), &mut extra)
        .expect("game state encodes");
    h.update(&extra);
    h.digest()
}

impl<R: Rules> GameSnapshot<R> {
    /// Tick at which the snapshot was taken.
    pub fn tick(&self) -> u64 {
        self.world.tick()
    }

    /// The same hash [`Game::state_hash`] gives for this state.
    pub fn state_hash(&self) -> u64 {
        hash_parts(self.world.state_hash(), &self.slots, &self.state)
    }

    /// The world part.
    pub fn world(&self) -> &Snapshot {
        &self.world
    }

    /// Canonical bytes: the world snapshot's length as `u32` LE, its bytes,
    /// then the slots and rules state (bincode 2, fixed-int, LE).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_with(&mut out, |world, out| world.encode_into(out));
        out
    }

    /// The packed form, for sending and storing: [`PACKED_MAGIC`], then the
    /// layout of [`GameSnapshot::to_bytes`] with the world part in
    /// [`Snapshot::to_packed`]'s form (the slots and rules state are small
    /// and stay canonical).
    pub fn to_packed(&self) -> Vec<u8> {
        let mut out = PACKED_MAGIC.to_vec();
        self.encode_with(&mut out, |world, out| {
            out.extend_from_slice(&world.to_packed())
        });
        out
    }

    fn encode_with(&self, out: &mut Vec<u8>, world: impl FnOnce(&Snapshot, &mut Vec<u8>)) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        world(&self.world, out);
        // The world part is at most MAX_SNAPSHOT_BYTES (64 MiB) < 4 GiB
        // (packed, it is smaller still).
        let world_len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&world_len.to_le_bytes());
        crate::encoding::canonical::encode_into(&(&self.slots, &self.state), out)
            .expect("game state encodes");
    }

    /// Decodes and validates untrusted bytes.
    ///
    /// # Errors
    /// Truncated, oversized or malformed input; more than [`MAX_SLOTS`] slots.
    pub fn from_bytes(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        GameSnapshot::decode_with(bytes, Snapshot::from_bytes)
    }

    /// Decodes and validates untrusted bytes of [`GameSnapshot::to_packed`].
    ///
    /// # Errors
    /// As [`GameSnapshot::from_bytes`].
    pub fn from_packed(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        let rest = bytes
            .strip_prefix(PACKED_MAGIC)
            .ok_or(GameSnapshotError::NotPacked)?;
        GameSnapshot::decode_with(rest, Snapshot::from_packed)
    }

    /// Decodes either form, told apart by the first four bytes: the packed
    /// form starts with [`PACKED_MAGIC`], which as the canonical form's
    /// world length (`u32` LE) would be over 1 GiB, past what it allows.
    /// For stores that hold both (replay files before and after format 4).
    ///
    /// # Errors
    /// As [`GameSnapshot::from_bytes`].
    pub fn decode(bytes: &[u8]) -> Result<GameSnapshot<R>, GameSnapshotError> {
        if bytes.starts_with(PACKED_MAGIC) {
            GameSnapshot::from_packed(bytes)
        } else {
            GameSnapshot::from_bytes(bytes)
        }
    }

    fn decode_with(
        bytes: &[u8],
        world: impl FnOnce(&[u8]) -> Result<Snapshot, SnapshotError>,
    ) -> Result<GameSnapshot<R>, GameSnapshotError> {
        let (len, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or(GameSnapshotError::Truncated)?;
        let len = u32::from_le_bytes(*len) as usize;
        if rest.len() < len {
            return Err(GameSnapshotError::Truncated);
        }
        let (world_bytes, extra) = rest.split_at(len);
        let world = world(world_bytes)?;
        let config = CONFIG.with_limit::<MAX_GAME_EXTRA_BYTES>();
        #[allow(clippy::type_complexity)]
        let ((slots, state), used): ((Vec<Slot<R::Player>>, R::State), usize) =
            bincode::serde::decode_from_slice(extra, config)?;
        if used != extra.len() {
            return Err(GameSnapshotError::Trailing(extra.len() - used));
        }
        if slots.len() > usize::from(MAX_SLOTS) {
            return Err(GameSnapshotError::Slots(slots.len()));
        }
        Ok(GameSnapshot {
            world,
            slots,
            state,
        })
    }

    /// Number of seats in the snapshot.
    pub fn slot_count(&self) -> u8 {
        self.slots.len() as u8
    }
}
