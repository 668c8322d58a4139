//! What enters a tick: one input per seat, of a type the game chooses
//! ([`Rules::Input`](super::Rules::Input)), and the seats joining or
//! leaving.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

/// A game's input: what one player sends for one tick (buttons, axes, an
/// aim: small, fixed-size plain data).
///
/// Its encoding is the canonical one (bincode 2, fixed-int, little-endian:
/// the wire's and the replay's), and [`Input::MAX_ENCODED`] bounds it: a
/// tick frame carries up to one input per seat, so this bound is what
/// keeps datagrams under their size limit. Inputs that encode to more are
/// refused when they come from the network, and the protocol refuses to
/// host a game whose bound is over what a datagram can carry
/// (`bitroom_protocol::MAX_INPUT_BYTES`).
///
/// The default value is the neutral input: free seats, and seats waiting
/// for their player to reconnect, play it.
pub trait Input:
    Copy + Eq + Debug + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Most bytes one input takes in the canonical encoding. For a struct
    /// of integers and `bool`s, the sum of their sizes.
    const MAX_ENCODED: usize;

    /// Bytes this input takes in the canonical encoding.
    fn encoded_len(&self) -> usize {
        let mut size = bincode::enc::write::SizeWriter::default();
        match bincode::serde::encode_into_writer(
            self,
            &mut size,
            crate::encoding::canonical::CONFIG,
        ) {
            Ok(()) => size.bytes_written,
            // A value serde cannot encode counts as too large.
            Err(_) => usize::MAX,
        }
    }

    /// Whether this input keeps to [`Input::MAX_ENCODED`].
    fn fits(&self) -> bool {
        self.encoded_len() <= Self::MAX_ENCODED
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

impl SlotEvent {
    /// The seat the event is about.
    pub fn slot(self) -> u8 {
        match self {
            SlotEvent::Join(s) | SlotEvent::Leave(s) => s,
        }
    }
}

/// Everything that enters one tick: an input per slot and the seat changes.
///
/// Missing inputs count as the default input; inputs and events for slots
/// outside the game are ignored, so any decoded value is safe to apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSet<I> {
    /// Input of slot `i` at index `i`.
    pub inputs: Vec<I>,
    /// Join / leave events, applied in order before the inputs.
    pub events: Vec<SlotEvent>,
}

impl<I> Default for InputSet<I> {
    fn default() -> InputSet<I> {
        InputSet {
            inputs: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<I: Input> InputSet<I> {
    /// Default inputs for `slots` seats and one join event.
    pub fn join(slots: u8, slot: u8) -> InputSet<I> {
        InputSet {
            inputs: vec![I::default(); usize::from(slots)],
            events: vec![SlotEvent::Join(slot)],
        }
    }

    /// Inputs only.
    pub fn with_inputs(inputs: Vec<I>) -> InputSet<I> {
        InputSet {
            inputs,
            events: Vec::new(),
        }
    }

    /// The input of a slot (default when missing).
    pub fn input(&self, slot: u8) -> I {
        self.inputs
            .get(usize::from(slot))
            .copied()
            .unwrap_or_default()
    }
}
