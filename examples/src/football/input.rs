//! What a football player sends each tick.

use bitroom_sim::game::Input;
use serde::{Deserialize, Serialize};

/// One player's input for one tick: where to run, and whether the kick
/// button is down (a kick happens when it goes down).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kick {
    /// Run direction, x: −127 (left) … 127 (right).
    pub move_x: i8,
    /// Run direction, y: −127 (down) … 127 (up).
    pub move_y: i8,
    /// The kick button.
    pub kick: bool,
}

impl Input for Kick {
    /// Two `i8` and a `bool`.
    const MAX_ENCODED: usize = 3;
}
