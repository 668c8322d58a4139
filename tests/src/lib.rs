//! bitroom-tests: end-to-end tests across the crates, and the simulated
//! network harness they share ([`netsim`]).

pub mod loopback;
pub mod netsim;
