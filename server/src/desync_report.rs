//! Desync report files: when a client reports a desync, the server writes
//! both states (its own, rebuilt from the recording; the client's, as
//! sent) and their field diff into one JSON file next to the replay.

use crate::recording::safe_file_stem;
use bitroom_protocol::replay::{diff_json, diff_table};
use bitroom_sim::game::diff::diff_states;
use bitroom_sim::game::{GameSnapshot, Rules};
use serde_json::json;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Who saw a desync, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesyncContext {
    /// Room name.
    pub room: String,
    /// The client (name, slot or connection; goes into the file name).
    pub client: String,
    /// The client's build, if known.
    pub build: String,
    /// The first tick whose hashes differ.
    pub tick: u64,
    /// The server's hash at that tick.
    pub server_hash: u64,
    /// The client's hash at that tick.
    pub client_hash: u64,
}

/// Writes a desync report into `dir` (created if missing) as one JSON file,
/// `desync-<room>-t<tick>-<client>.json` (never overwriting: `-2`, `-3`, …
/// are appended), and returns its path. It holds the context, both states
/// (hex of their snapshot bytes; the client's as received, even when it
/// does not decode) and, when both are available, their field diff (first
/// state: the server's). `server` is the server's state at `ctx.tick`
/// (see [`Recorder::state_job`](bitroom_protocol::replay::Recorder::state_job)), `None` when
/// it is no longer available.
///
/// # Errors
/// Creating the directory or writing the file.
pub fn write_desync_report<R: Rules>(
    dir: &Path,
    ctx: &DesyncContext,
    server: Option<&GameSnapshot<R>>,
    client_state: &[u8],
) -> io::Result<PathBuf> {
    let text = desync_report_json(ctx, server, client_state)?;
    write_report_file(dir, ctx, &text)
}

/// The JSON text [`write_desync_report`] writes (to weigh it against the
/// record quota before writing).
///
/// # Errors
/// Serializing failed (should not happen).
pub fn desync_report_json<R: Rules>(
    ctx: &DesyncContext,
    server: Option<&GameSnapshot<R>>,
    client_state: &[u8],
) -> io::Result<Vec<u8>> {
    let client = if client_state.is_empty() {
        Err("the client sent no state".to_string())
    } else {
        GameSnapshot::<R>::decode(client_state).map_err(|e| e.to_string())
    };
    let diff = match (server, &client) {
        (Some(s), Ok(c)) => Some(diff_states(s, c)),
        _ => None,
    };
    let server_json = server.map(|s| {
        let bytes = s.to_bytes();
        json!({ "tick": s.tick(), "hash": format!("{:016x}", s.state_hash()), "bytes": bytes.len(), "hex": hex::encode(&bytes) })
    });
    let client_canonical = client.as_ref().ok().map(GameSnapshot::to_bytes);
    let client_json = json!({
        "decodes": client.is_ok(),
        "error": client.as_ref().err(),
        "tick": client.as_ref().ok().map(|c| c.tick()),
        "hash": client.as_ref().ok().map(|c| format!("{:016x}", c.state_hash())),
        "bytes": client_state.len(),
        // The canonical bytes when the state decodes (clients send it
        // packed), so both sides' hex compare field for field.
        "hex": hex::encode(client_canonical.as_deref().unwrap_or(client_state)),
        "hex_form": if client_canonical.is_some() { "canonical" } else { "as received" },
    });
    let report = json!({
        "report": "bitroom desync",
        "room": ctx.room,
        "client": ctx.client,
        "build": ctx.build,
        "server_build": env!("CARGO_PKG_VERSION"),
        "tick": ctx.tick,
        "server_hash": format!("{:016x}", ctx.server_hash),
        "client_hash": format!("{:016x}", ctx.client_hash),
        "diff": diff.as_ref().map(diff_json),
        "diff_table": diff.as_ref().map(|d| diff_table(d, ("server", "client"))),
        "server_state": server_json,
        "client_state": client_json,
    });
    let mut text = serde_json::to_vec_pretty(&report).map_err(io::Error::other)?;
    text.push(b'\n');
    Ok(text)
}

/// Writes a report's text under a new name in `dir` (see
/// [`write_desync_report`]).
pub(crate) fn write_report_file(
    dir: &Path,
    ctx: &DesyncContext,
    text: &[u8],
) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let stem = format!(
        "desync-{}-t{}-{}",
        safe_file_stem(&ctx.room),
        ctx.tick,
        safe_file_stem(&ctx.client)
    );
    let mut n = 1;
    loop {
        let name = if n == 1 {
            format!("{stem}.json")
        } else {
            format!("{stem}-{n}.json")
        };
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                file.write_all(text)?;
                file.sync_all()?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}
