//! bitroom-cli: the command-line tools, hosting the sandbox game.
//!
//! Two binaries, each parsing its arguments and calling one command:
//!
//! - `bitroom-server` ([`cmd::serve`], [`cmd::demo`], [`cmd::sim`],
//!   [`cmd::replay`]): host rooms, run the loopback demo, run a scene
//!   headless, check and compare recordings;
//! - `bitroom-client` ([`cmd::bots`]): bot players for load and soak tests.
//!
//! The libraries they drive are game-agnostic (`bitroom-server`,
//! `bitroom-client`, `bitroom-protocol`); this crate is where the
//! sandbox game is chosen: [`sandbox`] turns a scene name or file (or a
//! recording's header) into the sandbox rules.
//!
//! ```
//! use bitroom_cli::sandbox::rules_for_scene;
//! use bitroom_sim::game::Rules;
//!
//! // What `serve --scene arena:50` hosts; a client must bring the same rules.
//! let rules = rules_for_scene("arena:50").unwrap();
//! assert_eq!(rules.fingerprint(), rules_for_scene("arena:50").unwrap().fingerprint());
//! assert_ne!(rules.fingerprint(), rules_for_scene("arena").unwrap().fingerprint());
//! assert!(rules_for_scene("no-such-scene").is_err());
//! ```
//!
//! # Layout
//! - `bin/bitroom-server.rs`, `bin/bitroom-client.rs`: parse and call;
//! - [`cmd`]: one file per command, with its arguments;
//! - [`args`]: argument groups several commands share (certificate pin,
//!   link conditioner);
//! - [`sandbox`]: the sandbox rules for a scene or a recording;
//! - [`scene`]: scenes by name or file;
//! - [`status`]: the live status line of the long-running commands;
//! - `render.rs`: drawing a world to PNG or SVG (`sim --render`).

pub mod args;
pub mod cmd;
mod render;
pub mod sandbox;
pub mod scene;
pub mod status;

/// Logs to stderr, filtered by `RUST_LOG` (default: `default_level`).
pub fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colours only on a terminal: a log redirected to a file stays plain.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .try_init();
}
