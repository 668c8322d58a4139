//! The rollback timeline: a ring of saved states and an input timeline in
//! which every tick's inputs are either confirmed (authoritative) or
//! predicted.
//!
//! Prediction rule (the same one the server uses for a missing input): a
//! slot's input at an unconfirmed tick is the local input when this peer
//! owns the slot and has set one, otherwise the slot's input at the latest
//! confirmed tick ("repeat the last"). Join and leave events are never
//! predicted.
//!
//! When a confirmed input set differs from the one a tick was simulated
//! with, the timeline restores the state before that tick and re-simulates
//! up to the present ([`Timeline::update`]).

use super::{Game, GameSnapshot, InputSet, Rules};
use std::collections::BTreeMap;

/// Why a timeline operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimelineError {
    /// Confirmed inputs must arrive in tick order.
    #[error("confirmed inputs for tick {got} arrived, expected tick {expected}")]
    OutOfOrder {
        /// The next tick to confirm.
        expected: u64,
        /// The tick given.
        got: u64,
    },
    /// Predicting further would overwrite the oldest state a rollback may need.
    #[error("prediction window of {0} ticks is full")]
    WindowFull(u32),
    /// The state of that tick is no longer (or not yet) in the ring.
    #[error("no saved state for tick {0}")]
    NotSaved(u64),
}

/// Rollback statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RollbackStats {
    /// Rollbacks performed.
    pub rollbacks: u64,
    /// Ticks re-simulated in total.
    pub resimulated: u64,
    /// Deepest rollback (ticks re-simulated at once).
    pub max_depth: u64,
    /// Depth of the latest rollback.
    pub last_depth: u64,
    /// Ticks simulated forward (not counting re-simulation).
    pub advanced: u64,
}

#[derive(Clone, Debug)]
struct Entry<I> {
    /// What the tick was (or will be) simulated with.
    used: Option<InputSet<I>>,
    /// The authoritative inputs, once known.
    confirmed: Option<InputSet<I>>,
    /// Local inputs set for this tick.
    local: Vec<(u8, I)>,
}

impl<I> Default for Entry<I> {
    fn default() -> Entry<I> {
        Entry {
            used: None,
            confirmed: None,
            local: Vec::new(),
        }
    }
}

/// A game with prediction and rollback (see the module docs).
#[derive(Debug)]
pub struct Timeline<R: Rules> {
    game: Game<R>,
    /// `ring[t % cap]` holds the state at tick `t` for recent ticks.
    ring: Vec<Option<GameSnapshot<R>>>,
    entries: BTreeMap<u64, Entry<R::Input>>,
    confirmed: u64,
    /// Inputs of every slot at the latest confirmed tick (the prediction).
    last_confirmed: Vec<R::Input>,
    /// Earliest tick whose confirmed inputs differ from what was simulated.
    pending: Option<u64>,
    stats: RollbackStats,
}

impl<R: Rules> Timeline<R> {
    /// Starts from `game` (its current tick counts as confirmed) keeping up
    /// to `capacity` saved states (at least 2).
    pub fn new(game: Game<R>, capacity: u32) -> Timeline<R> {
        let cap = capacity.max(2) as usize;
        let mut ring: Vec<Option<GameSnapshot<R>>> = (0..cap).map(|_| None).collect();
        let confirmed = game.tick();
        ring[(confirmed % cap as u64) as usize] = Some(game.snapshot());
        Timeline {
            last_confirmed: game.slots().iter().map(|s| s.prev_input).collect(),
            game,
            ring,
            entries: BTreeMap::new(),
            confirmed,
            pending: None,
            stats: RollbackStats::default(),
        }
    }

    /// Starts over from a snapshot (a resync); statistics are kept.
    pub fn reset(&mut self, snap: &GameSnapshot<R>) {
        self.game.restore(snap);
        for s in &mut self.ring {
            *s = None;
        }
        self.confirmed = snap.tick();
        self.entries.clear();
        self.pending = None;
        self.last_confirmed = self.game.slots().iter().map(|s| s.prev_input).collect();
        self.save();
    }

    /// The present (predicted) game.
    pub fn game(&self) -> &Game<R> {
        &self.game
    }

    /// The present game, mutable: for tests that corrupt a peer on purpose.
    pub fn game_mut(&mut self) -> &mut Game<R> {
        &mut self.game
    }

    /// Current (predicted) tick.
    pub fn tick(&self) -> u64 {
        self.game.tick()
    }

    /// Latest tick whose inputs (and all before) are confirmed.
    pub fn confirmed_tick(&self) -> u64 {
        self.confirmed
    }

    /// Ring capacity.
    pub fn capacity(&self) -> u32 {
        self.ring.len() as u32
    }

    /// Statistics.
    pub fn stats(&self) -> RollbackStats {
        self.stats
    }

    /// Sets this peer's input for `slot` at `tick` (used when predicting).
    pub fn set_local_input(&mut self, tick: u64, slot: u8, input: R::Input) {
        if tick <= self.confirmed {
            return;
        }
        let e = self.entries.entry(tick).or_default();
        match e.local.iter_mut().find(|(s, _)| *s == slot) {
            Some(l) => l.1 = input,
            None => e.local.push((slot, input)),
        }
    }

    /// Records the authoritative inputs of `tick`, which must be the next
    /// unconfirmed tick (earlier ticks are ignored as duplicates). If the
    /// tick was already simulated with other inputs, a rollback is queued
    /// for [`Timeline::update`].
    ///
    /// # Errors
    /// [`TimelineError::OutOfOrder`] for a tick beyond the next one.
    pub fn confirm(&mut self, tick: u64, inputs: InputSet<R::Input>) -> Result<(), TimelineError> {
        if tick <= self.confirmed {
            return Ok(());
        }
        if tick != self.confirmed + 1 {
            return Err(TimelineError::OutOfOrder {
                expected: self.confirmed + 1,
                got: tick,
            });
        }
        let n = self.last_confirmed.len();
        for (i, p) in self.last_confirmed.iter_mut().enumerate().take(n) {
            *p = inputs.input(i as u8);
        }
        let e = self.entries.entry(tick).or_default();
        if tick <= self.game.tick() && e.used.as_ref() != Some(&inputs) {
            self.pending = Some(self.pending.map_or(tick, |p| p.min(tick)));
        }
        e.confirmed = Some(inputs);
        self.confirmed = tick;
        Ok(())
    }

    /// Oldest tick whose state must stay in the ring.
    fn oldest_needed(&self) -> u64 {
        match self.pending {
            Some(p) => (p - 1).min(self.confirmed),
            None => self.confirmed,
        }
    }

    /// Whether [`Timeline::advance`] has room.
    pub fn can_advance(&self) -> bool {
        self.game.tick() + 1 < self.oldest_needed() + self.ring.len() as u64
    }

    /// Steps the present one tick, with confirmed inputs where known and
    /// predictions elsewhere.
    ///
    /// # Errors
    /// [`TimelineError::WindowFull`] when the oldest state a rollback may
    /// need would be overwritten.
    pub fn advance(&mut self) -> Result<(), TimelineError> {
        if !self.can_advance() {
            return Err(TimelineError::WindowFull(self.capacity()));
        }
        self.step_one();
        self.stats.advanced += 1;
        Ok(())
    }

    fn inputs_for(&self, tick: u64) -> InputSet<R::Input> {
        let e = self.entries.get(&tick);
        if let Some(c) = e.and_then(|e| e.confirmed.as_ref()) {
            return c.clone();
        }
        let mut inputs = self.last_confirmed.clone();
        if let Some(e) = e {
            for &(s, i) in &e.local {
                if let Some(slot) = inputs.get_mut(usize::from(s)) {
                    *slot = i;
                }
            }
        }
        InputSet::with_inputs(inputs)
    }

    fn step_one(&mut self) {
        let t = self.game.tick() + 1;
        let inputs = self.inputs_for(t);
        self.game.step(&inputs);
        self.entries.entry(t).or_default().used = Some(inputs);
        self.save();
    }

    fn save(&mut self) {
        let cap = self.ring.len() as u64;
        let i = (self.game.tick() % cap) as usize;
        match &mut self.ring[i] {
            Some(s) => self.game.snapshot_into(s),
            none => *none = Some(self.game.snapshot()),
        }
    }

    /// Performs a queued rollback (restore and re-simulate to the present)
    /// and forgets inputs no longer needed (confirmed, and older than the
    /// oldest saved state). Returns the depth re-simulated.
    pub fn update(&mut self) -> u64 {
        let mut depth = 0;
        if let Some(p) = self.pending.take() {
            let now = self.game.tick();
            // The window check in `advance` keeps state p - 1 in the ring.
            if self.rollback_to(p - 1).is_ok() {
                depth = now - (p - 1);
            }
        }
        // Inputs stay while their tick may still be re-simulated: confirmed
        // and older than every state in the ring.
        let now = self.game.tick();
        let cap = self.ring.len() as u64;
        while let Some((&t, _)) = self.entries.first_key_value() {
            if t > self.confirmed || t + cap > now + 1 {
                break;
            }
            self.entries.pop_first();
        }
        depth
    }

    /// Restores the state at `tick` and re-simulates up to the present tick.
    ///
    /// # Errors
    /// [`TimelineError::NotSaved`] when that state is not in the ring.
    pub fn rollback_to(&mut self, tick: u64) -> Result<(), TimelineError> {
        let now = self.game.tick();
        let i = (tick % self.ring.len() as u64) as usize;
        let Some(saved) = self.ring[i]
            .as_ref()
            .filter(|s| s.tick() == tick && tick <= now)
        else {
            return Err(TimelineError::NotSaved(tick));
        };
        self.game.restore(saved);
        let depth = now - tick;
        for _ in 0..depth {
            self.step_one();
        }
        self.stats.rollbacks += 1;
        self.stats.resimulated += depth;
        self.stats.last_depth = depth;
        self.stats.max_depth = self.stats.max_depth.max(depth);
        Ok(())
    }

    /// The saved state at `tick`, if still in the ring.
    pub fn state_at(&self, tick: u64) -> Option<&GameSnapshot<R>> {
        let i = (tick % self.ring.len() as u64) as usize;
        self.ring[i]
            .as_ref()
            .filter(|s| s.tick() == tick && tick <= self.game.tick())
    }

    /// State hash at `tick`, if its state is still in the ring.
    pub fn hash_at(&self, tick: u64) -> Option<u64> {
        self.state_at(tick).map(GameSnapshot::state_hash)
    }

    /// The inputs `tick` was simulated with, if still known.
    pub fn used_inputs(&self, tick: u64) -> Option<&InputSet<R::Input>> {
        self.entries.get(&tick).and_then(|e| e.used.as_ref())
    }
}
