//! End-to-end tests across the bitroom crates live in `tests/tests/`.
//! The simulated network harness will live here once the netcode lands.
