//! What a game defines: [`Rules`] (its input, its players, its state, and
//! how inputs move bodies), and the [`Slot`] each seat is.

use super::Input;
use crate::dynamics::World;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

/// Game rules: how players enter, how inputs move bodies.
///
/// Every method must be deterministic: use only its arguments (no clocks, no
/// OS randomness, no hash-map iteration, no floats).
pub trait Rules: Clone {
    /// One player's input for one tick (see [`Input`]).
    type Input: Input;
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

    /// Applies one active slot's input before the world steps (the slot
    /// still holds the previous tick's input, for edge detection).
    fn apply_input(
        &self,
        world: &mut World,
        state: &mut Self::State,
        slot: &mut Slot<Self::Player, Self::Input>,
        input: Self::Input,
    );

    /// Runs after the world stepped (scoring, respawns). Default: nothing.
    fn post_step(
        &self,
        _world: &mut World,
        _state: &mut Self::State,
        _slots: &mut [Slot<Self::Player, Self::Input>],
    ) {
    }
}

/// A player seat. Part of the game state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slot<P, I> {
    /// Whether a player occupies the seat.
    pub active: bool,
    /// The input applied last tick (for edge detection).
    pub prev_input: I,
    /// The rules' per-player state.
    pub player: P,
}

/// The seats of a game of rules `R`.
pub type SlotOf<R> = Slot<<R as Rules>::Player, <R as Rules>::Input>;

/// User data marking a body as the avatar of a seat: `AVATAR_TAG | slot`
/// ([`avatar_user_data`]). A convention, not a rule: tools name such
/// bodies "avatar of slot N" in state diffs; the sandbox follows it.
pub const AVATAR_TAG: u64 = 0xA7A7_0000_0000_0000;

/// The user data marking the avatar of `slot` ([`AVATAR_TAG`]).
pub fn avatar_user_data(slot: u8) -> u64 {
    AVATAR_TAG | u64::from(slot)
}

/// The seat whose avatar a body with this user data is ([`AVATAR_TAG`]).
pub fn avatar_slot(user_data: u64) -> Option<u8> {
    (user_data & 0xFFFF_FFFF_0000_0000 == AVATAR_TAG).then_some((user_data & 0xFF) as u8)
}
