//! Islands and sleep.
//!
//! Islands are rebuilt every step with a union-find over the awake dynamic
//! bodies joined by touching contacts and by joints: cheaper than maintaining persistent
//! islands, and trivially deterministic because contacts are visited in
//! canonical order. An island falls asleep when every body in it has been
//! slower than its sleep threshold for `time_to_sleep`. Sleeping bodies
//! remember their island by id (the smallest body index in it); waking an
//! island wakes every body with that id.

use super::body::{Body, BodyKind, NO_ISLAND};
use super::world::WorldState;
use crate::math::{Scalar, Vec2};

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        let p = parent[i as usize];
        parent[i as usize] = parent[p as usize];
        i = p;
    }
    i
}

/// Joins the islands of two solved bodies (solver slots `sa`, `sb`; slot
/// `k + 1` is body `awake[k]`) linked by a contact or joint.
#[inline]
fn link(bodies: &mut [Body], parent: &mut [u32], awake: &[u32], sa: u32, sb: u32) {
    if sa == 0 || sb == 0 {
        return;
    }
    let (a, b) = (awake[sa as usize - 1], awake[sb as usize - 1]);
    let ka = bodies[a as usize].kind;
    let kb = bodies[b as usize].kind;
    if ka == BodyKind::Dynamic && kb == BodyKind::Dynamic {
        let (ra, rb) = (find(parent, sa), find(parent, sb));
        if ra != rb {
            // Union by smaller slot keeps roots canonical.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            parent[hi as usize] = lo;
        }
    } else {
        // A moving kinematic body keeps what it touches awake.
        let (kin, dynb) = if ka == BodyKind::Kinematic {
            (a, b)
        } else {
            (b, a)
        };
        if bodies[dynb as usize].kind != BodyKind::Dynamic {
            return;
        }
        let k = &bodies[kin as usize];
        if k.linear_velocity != Vec2::ZERO || !k.angular_velocity.is_zero() {
            bodies[dynb as usize].sleep_time = Scalar::ZERO;
        }
    }
}

/// Puts islands to sleep whose bodies have all rested long enough.
///
/// `awake` maps solver slot `k + 1` to body index `awake[k]`; `links` holds
/// the solver slots (0 for bodies not being solved) of the bodies of every
/// touching non-sensor contact and every joint solved this step (a compact
/// list instead of a pass over the large contact and joint records; the
/// islands found do not depend on the order).
pub(crate) fn update_sleep(
    state: &mut WorldState,
    awake: &[u32],
    links: &[(u32, u32)],
    parent: &mut Vec<u32>,
    min_time: &mut Vec<Scalar>,
    min_index: &mut Vec<u32>,
) {
    let n = awake.len() + 1;
    parent.clear();
    parent.extend(0..n as u32);
    // Joined bodies share an island (a joint is never solved against a
    // sleeping body).
    for &(sa, sb) in links {
        link(&mut state.bodies, parent, awake, sa, sb);
    }
    min_time.clear();
    min_time.resize(n, Scalar::MAX);
    min_index.clear();
    min_index.resize(n, u32::MAX);
    for (k, &bi) in awake.iter().enumerate() {
        let slot = k as u32 + 1;
        let r = find(parent, slot) as usize;
        let b = &state.bodies[bi as usize];
        min_time[r] = min_time[r].min(b.sleep_time);
        min_index[r] = min_index[r].min(bi);
    }
    let time_to_sleep = state.settings.time_to_sleep;
    for (k, &bi) in awake.iter().enumerate() {
        let r = find(parent, k as u32 + 1) as usize;
        if min_time[r] >= time_to_sleep {
            let b = &mut state.bodies[bi as usize];
            b.awake = false;
            b.linear_velocity = Vec2::ZERO;
            b.angular_velocity = Scalar::ZERO;
            b.sleep_island = min_index[r];
        }
    }
}

/// Wakes every sleeping body whose island id is in `islands` (sorted, unique).
pub(crate) fn wake_islands(state: &mut WorldState, islands: &[u32]) {
    if islands.is_empty() {
        return;
    }
    for b in state.bodies.iter_mut() {
        if b.alive
            && !b.awake
            && b.sleep_island != NO_ISLAND
            && islands.binary_search(&b.sleep_island).is_ok()
        {
            b.awake = true;
            b.sleep_time = Scalar::ZERO;
            b.sleep_island = NO_ISLAND;
        }
    }
}
