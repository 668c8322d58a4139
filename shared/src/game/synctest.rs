//! The sync test (after GGRS's `SyncTestSession`): every tick, roll back
//! `K` ticks, re-simulate, and compare every re-simulated state's hash with
//! the hash first computed for that tick. Any difference means the state
//! does not capture everything (or something non-deterministic crept in).

use super::{Game, InputSet, Rules, Timeline};

/// A tick whose re-simulated hash differs from the first run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncTestMismatch {
    /// The tick.
    pub tick: u64,
    /// Hash from the first simulation.
    pub first: u64,
    /// Hash after rolling back and re-simulating.
    pub resimulated: u64,
}

/// Outcome of a sync test run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncTestReport {
    /// Ticks advanced.
    pub ticks: u64,
    /// Rollbacks performed.
    pub rollbacks: u64,
    /// States compared.
    pub checked: u64,
    /// Mismatching ticks (first occurrence of each tick).
    pub mismatches: Vec<SyncTestMismatch>,
}

/// Runs a game forward while rolling back `K` ticks after every tick.
#[derive(Debug)]
pub struct SyncTest<R: Rules> {
    timeline: Timeline<R>,
    depth: u32,
    /// First-run hash of each of the last `depth + 1` ticks.
    hashes: Vec<(u64, u64)>,
    report: SyncTestReport,
}

impl<R: Rules> SyncTest<R> {
    /// A sync test of `game` with rollbacks of `depth` ticks (at least 1).
    pub fn new(game: Game<R>, depth: u32) -> SyncTest<R> {
        let depth = depth.max(1);
        SyncTest {
            timeline: Timeline::new(game, depth + 2),
            depth,
            hashes: Vec::new(),
            report: SyncTestReport::default(),
        }
    }

    /// The game at the present tick.
    pub fn game(&self) -> &Game<R> {
        self.timeline.game()
    }

    /// Advances one tick with `inputs`, then rolls back and checks.
    pub fn step(&mut self, inputs: InputSet<R::Input>) {
        let t = self.timeline.tick() + 1;
        // Inputs are confirmed before they are used, so the rollback below
        // re-simulates with exactly the same inputs.
        self.timeline
            .confirm(t, inputs)
            .expect("sync test confirms in order");
        self.timeline.advance().expect("ring holds depth + 2");
        self.timeline.update();
        let h = self.timeline.hash_at(t).expect("present state saved");
        self.hashes.push((t, h));
        let keep = self.depth as usize + 1;
        if self.hashes.len() > keep {
            self.hashes.remove(0);
        }
        self.report.ticks += 1;
        let back = t.saturating_sub(u64::from(self.depth));
        if back == t || self.timeline.rollback_to(back).is_err() {
            return;
        }
        self.report.rollbacks += 1;
        for &(tick, first) in &self.hashes {
            if tick <= back {
                continue;
            }
            let again = self.timeline.hash_at(tick).unwrap_or(!first);
            self.report.checked += 1;
            if again != first && !self.report.mismatches.iter().any(|m| m.tick == tick) {
                self.report.mismatches.push(SyncTestMismatch {
                    tick,
                    first,
                    resimulated: again,
                });
            }
        }
    }

    /// The results so far.
    pub fn report(&self) -> &SyncTestReport {
        &self.report
    }
}
