//! The sandbox's input: buttons, a move axis and an aim, 5 bytes.

use crate::game::{Input, Slot};
use serde::{Deserialize, Serialize};

/// One sandbox player's input for one tick: 5 bytes on the wire.
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

impl Input for PlayerInput {
    const MAX_ENCODED: usize = 5;
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

impl<P> Slot<P, PlayerInput> {
    /// Whether `button` went down this tick.
    pub fn pressed(&self, input: PlayerInput, button: u8) -> bool {
        input.held(button) && !self.prev_input.held(button)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn player_input_encodes_to_its_stated_size() {
        let i = PlayerInput {
            buttons: 7,
            move_x: -127,
            move_y: 127,
            aim: u16::MAX,
        };
        assert_eq!(i.encoded_len(), PlayerInput::MAX_ENCODED);
        assert_eq!(PlayerInput::default().encoded_len(), 5);
        assert!(i.fits());
    }
}
