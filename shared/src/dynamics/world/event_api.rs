//! The world's event API: the last step's contact and sensor events and
//! their hash.

use super::World;
use crate::dynamics::events::{ContactEvents, SensorEvents};

impl World {
    /// Contact events of the last step (see the `events` module docs).
    pub fn contact_events(&self) -> &ContactEvents {
        &self.events.contact
    }

    /// Sensor events of the last step.
    pub fn sensor_events(&self) -> &SensorEvents {
        &self.events.sensor
    }

    /// XXH3-64 of the canonical encoding (as for the state hash) of the last
    /// step's events: contact begin, end, hit, then sensor begin, end, each
    /// list as its length (`u64`) and its events field by field.
    pub fn event_hash(&self) -> u64 {
        let bytes = bincode::serde::encode_to_vec(
            (&self.events.contact, &self.events.sensor),
            crate::encoding::canonical::CONFIG,
        )
        .expect("events encode");
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }
}
