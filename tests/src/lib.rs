//! bitroom-tests: end-to-end tests across the crates, and the simulated
//! network harness they share ([`netsim`]), the loopback server harness
//! ([`loopback`]) and a hostile low-level client for attack tests
//! ([`raw`]).

pub mod loopback;
pub mod netsim;
pub mod raw;
