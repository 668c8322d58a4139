//! Headless players: a game's bot brain ([`Bot`]), how a game makes its
//! bots ([`BotRules`]; the sandbox's are in [`super::sandbox`]), and
//! [`LocalBots`], bots in every seat of a game run in-process (sync tests,
//! recordings, benchmarks). Bots are deterministic: seeded, no clocks, no
//! OS randomness.

use super::{Game, InputSet, Rules, SlotEvent};
use std::fmt::Debug;
use std::marker::PhantomData;

/// A bot's brain: chooses a seat's input for the next tick from the game
/// as the bot sees it (a client's predicted game, or a local one).
///
/// Closures `FnMut(&Game<R>, u8) -> R::Input` are bots too.
pub trait Bot<R: Rules>: Send {
    /// The input for the next tick of the seat `slot`.
    fn next_input(&mut self, game: &Game<R>, slot: u8) -> R::Input;
}

impl<R: Rules, F: FnMut(&Game<R>, u8) -> R::Input + Send> Bot<R> for F {
    fn next_input(&mut self, game: &Game<R>, slot: u8) -> R::Input {
        self(game, slot)
    }
}

/// Rules whose seats bots can play: the game's own bot brain. The bot
/// fleets of the client library (`bitroom_client::bots`) and the tools
/// make bots through it.
pub trait BotRules: Rules {
    /// What sets one bot apart from another beyond its seed (the sandbox:
    /// its [`Strategy`](super::sandbox::Strategy); `()` when all bots play
    /// alike).
    type Strategy: Clone + Debug + Send + Sync + 'static;
    /// The game's bot brain.
    type Bot: Bot<Self> + 'static;

    /// A bot that plays `strategy`, its choices drawn from `seed`.
    fn bot(&self, strategy: &Self::Strategy, seed: u64) -> Self::Bot;

    /// An input made from 64 random bits, for load clients, which send a
    /// player's traffic without simulating the game (each input is held
    /// for a few dozen ticks). Default: the neutral input.
    fn random_input(&self, _bits: u64) -> Self::Input {
        Self::Input::default()
    }
}

/// Bots in every seat of a game run in-process: seat `i` joins at tick
/// `i + 1`, and from then on its bot chooses its input every tick.
#[derive(Debug)]
pub struct LocalBots<R: Rules, B: Bot<R>> {
    bots: Vec<B>,
    rules: PhantomData<fn() -> R>,
}

impl<R: Rules, B: Bot<R>> LocalBots<R, B> {
    /// One bot per seat, seat `i` played by `bots[i]` (at most
    /// [`MAX_SLOTS`](super::MAX_SLOTS) are used).
    pub fn new(bots: Vec<B>) -> LocalBots<R, B> {
        LocalBots {
            bots,
            rules: PhantomData,
        }
    }

    /// The inputs of `game`'s next tick: every bot's input, and the join
    /// of the seat whose turn it is.
    pub fn inputs(&mut self, game: &Game<R>) -> InputSet<R::Input> {
        let inputs = self
            .bots
            .iter_mut()
            .enumerate()
            .map(|(i, b)| b.next_input(game, i as u8))
            .collect();
        let mut set = InputSet::with_inputs(inputs);
        let t = game.tick() + 1;
        if t <= self.bots.len() as u64 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        set
    }
}

impl<R: BotRules> LocalBots<R, R::Bot> {
    /// `players` of the game's bots, cycling through `strategies`, bot `i`
    /// seeded with `seed + i`.
    pub fn cycling(
        rules: &R,
        players: u8,
        strategies: &[R::Strategy],
        seed: u64,
    ) -> LocalBots<R, R::Bot> {
        LocalBots::new(
            (0..players)
                .zip(strategies.iter().cycle())
                .map(|(i, s)| rules.bot(s, seed.wrapping_add(u64::from(i))))
                .collect(),
        )
    }
}
