//! The joint pair filter: which body pairs joints keep from colliding.

use super::Joint;
use crate::dynamics::contact::pair_key;

/// Body pairs whose shapes must not collide because a joint with
/// `collide_connected == false` links them. Derived from the joints (not
/// serialized); rebuilt lazily after any joint is created or destroyed.
#[derive(Clone, Debug, Default)]
pub(crate) struct JointFilter {
    valid: bool,
    /// Sorted, unique `pair_key(min body, max body)`.
    pairs: Vec<u64>,
    /// Per body slot: whether it has such a joint (a cheap first test).
    has_joint: Vec<bool>,
}

impl JointFilter {
    /// Marks the filter stale.
    pub fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Rebuilds the filter if a joint changed since it was built.
    pub fn refresh(&mut self, joints: &[Joint], body_count: usize) {
        if self.valid {
            return;
        }
        self.valid = true;
        self.pairs.clear();
        self.has_joint.clear();
        self.has_joint.resize(body_count, false);
        for j in joints {
            if j.alive && !j.collide_connected {
                let (a, b) = (j.body_a.min(j.body_b), j.body_a.max(j.body_b));
                self.pairs.push(pair_key(a, b));
                self.has_joint[a as usize] = true;
                self.has_joint[b as usize] = true;
            }
        }
        // One sorted order for integers: the radix sort's is sort_unstable's.
        radsort::sort(&mut self.pairs);
        self.pairs.dedup();
    }

    /// Whether shapes of bodies `a` and `b` must not collide. Call
    /// [`JointFilter::refresh`] first.
    #[inline]
    pub fn blocks(&self, a: u32, b: u32) -> bool {
        let has = |i: u32| self.has_joint.get(i as usize).copied().unwrap_or(false);
        if self.pairs.is_empty() || !has(a) || !has(b) {
            return false;
        }
        self.pairs
            .binary_search(&pair_key(a.min(b), a.max(b)))
            .is_ok()
    }
}
