//! `bitroom-server replay`: check, compare, inspect and export replay files
//! (format and re-simulation in `bitroom_protocol::replay`), and record bot
//! games without a network.
//!
//! Exit codes: 0 fine (a cut or damaged tail, which is what a crash
//! leaves, is a warning), 1 a divergence, 2 bad input (not a replay, a
//! corrupt header, an unsupported format version, a missing file), 3 a
//! corrupt file: a damaged record followed by more data, or data after the
//! end record (the message names the byte offset). `verify` with several
//! files exits with the highest code.

use super::{bad_input, EXIT_BAD_INPUT};
use crate::sandbox::{check_recorded_game, replay_rules, rules_for, BOT_STRATEGIES, SANDBOX_RULES};
use crate::scene::load_scene;
use bitroom_protocol::replay::{
    body_json, decode_initial, diff_against_resim, diff_json, diff_replays, diff_table,
    verify_parallel, Comparison, DiffReport, Recorder, RecordingMeta, ReplayIndex, ReplayReader,
    Side, StartAt, VerifyOptions, VerifyReport,
};
use bitroom_protocol::replay::{Record, DEFAULT_KEYFRAME_INTERVAL};
use bitroom_sim::game::bots::LocalBots;
use bitroom_sim::game::diff::body_fields;
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxConfig};
use bitroom_sim::game::{Game, GameSnapshot, SlotEvent};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fs::File;
use std::io::{BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Exit code for a divergence.
const EXIT_DIVERGED: u8 = 1;
/// Exit code for damage in the middle of a file (not a cut tail).
const EXIT_CORRUPT: u8 = 3;

/// Arguments of `replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(subcommand)]
    command: ReplayCommand,
}

#[derive(Subcommand, Debug)]
enum ReplayCommand {
    /// Re-simulate replays and check every recorded state hash.
    Verify(VerifyArgs),
    /// First divergent tick and per-body field diff: two replays, or one
    /// replay against a fresh re-simulation.
    Diff(DiffArgs),
    /// Header, ticks, players, keyframes and integrity of a replay.
    Info(InfoArgs),
    /// Re-simulate and print states as JSON lines (tick, hash, bodies).
    Export(ExportArgs),
    /// Record a game of bots (no network): for trying the tools, benchmarks
    /// and fixtures.
    Record(RecordArgs),
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// Replay files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Start at the latest keyframe at or before TICK (`--from-keyframe=TICK`;
    /// alone: the last keyframe) instead of the initial state.
    #[arg(long, value_name = "TICK", require_equals = true)]
    from_keyframe: Option<Option<u64>>,
    /// Sync test: roll back K ticks after every tick and compare the
    /// re-simulated hashes too.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    synctest: Option<u32>,
    /// Threads: keyframe intervals are re-simulated in parallel, each from
    /// its keyframe (default: one per core; 1: one run from the start).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The replay (compared with a fresh re-simulation when alone).
    a: PathBuf,
    /// A second replay of the same room.
    b: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct InfoArgs {
    /// The replay.
    file: PathBuf,
}

#[derive(Args, Debug)]
struct ExportArgs {
    /// The replay.
    file: PathBuf,
    /// JSON lines (the only format).
    #[arg(long, required = true)]
    json: bool,
    /// Export every K-th tick (and the start).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
}

#[derive(Args, Debug)]
struct RecordArgs {
    /// Output file.
    #[arg(long)]
    out: PathBuf,
    /// A built-in scene name or a JSON scene file ("arena": the default game).
    #[arg(long, default_value = "arena")]
    scene: String,
    /// Loose bodies in the arena (only with `--scene arena`; default 200).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=5000))]
    loose_bodies: Option<u32>,
    /// Bot players (they join one per tick from tick 1).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=32))]
    players: u8,
    /// Ticks to record.
    #[arg(long, default_value_t = 600)]
    ticks: u64,
    /// Seed of the bots.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ticks between keyframes.
    #[arg(long, default_value_t = DEFAULT_KEYFRAME_INTERVAL, value_parser = clap::value_parser!(u32).range(1..))]
    keyframe_interval: u32,
    /// Room name in the header.
    #[arg(long, default_value = "bots")]
    room: String,
    /// Tick rate in the header.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    tick_rate: u32,
}

/// Runs `replay`.
pub fn run(args: ReplayArgs) -> ExitCode {
    match args.command {
        ReplayCommand::Verify(a) => verify_cmd(&a),
        ReplayCommand::Diff(a) => diff_cmd(&a),
        ReplayCommand::Info(a) => info_cmd(&a),
        ReplayCommand::Export(a) => export_cmd(&a),
        ReplayCommand::Record(a) => record_cmd(&a),
    }
}

type FileReader = ReplayReader<BufReader<File>, PlayerInput>;

/// Opens a sandbox replay and reads its header; the message names the
/// file.
fn open(path: &Path) -> Result<(FileReader, u64), String> {
    let named = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(|e| named(&e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reader =
        ReplayReader::open(BufReader::with_capacity(1 << 16, file)).map_err(|e| named(&e))?;
    check_recorded_game(reader.header()).map_err(|e| named(&e))?;
    Ok((reader, size))
}

fn progress_bar(size: u64, name: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(size), target);
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{bar:32}] {bytes}/{total_bytes} {msg} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(name.to_string());
    bar
}

fn verify_cmd(args: &VerifyArgs) -> ExitCode {
    let mut worst = 0u8;
    for path in &args.files {
        let code = verify_file(path, args);
        worst = worst.max(code);
    }
    ExitCode::from(worst)
}

fn verify_file(path: &Path, args: &VerifyArgs) -> u8 {
    let name = path.display().to_string();
    let (reader, size) = match open(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let h = reader.header().clone();
    println!(
        "{name}: room {:?}, scene {}, {} seats, {} Hz, rules {} {:016x}, recorded by bitroom {}",
        h.room, h.scene, h.slots, h.tick_rate, h.rules, h.rules_fingerprint, h.bitroom_version
    );
    let opts = VerifyOptions {
        start: args.from_keyframe.map(|k| match k {
            Some(t) => StartAt::AtOrBefore(t),
            None => StartAt::Latest,
        }),
        synctest: args.synctest,
    };
    let bar = progress_bar(size, &name);
    let start = Instant::now();
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let res = verify_parallel(reader, replay_rules, &opts, jobs, &mut |p| {
        bar.set_position(p.bytes);
        bar.set_message(format!("tick {}", p.tick));
    });
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let rep = match res {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {name}: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    print_verify(&name, &rep, secs, h.tick_rate, jobs)
}

fn print_verify(name: &str, rep: &VerifyReport, secs: f64, tick_rate: u32, jobs: usize) -> u8 {
    // Floats: timing figures only.
    let rate = rep.ticks_verified as f64 / secs.max(1e-9);
    let first = if rep.ticks_verified > 0 {
        rep.last_verified + 1 - rep.ticks_verified
    } else {
        rep.start_tick
    };
    println!(
        "{name}: verified {} ticks ({} to {}, from the state at tick {}) and checked {} keyframe(s) in {:.2} s on {jobs} thread(s): {:.0} ticks/s, {:.1}x real time; hash at tick {} {:016x}",
        rep.ticks_verified,
        first,
        rep.last_verified,
        rep.start_tick,
        rep.keyframes_checked,
        secs,
        rate,
        rate / f64::from(tick_rate),
        rep.last_verified,
        rep.final_hash
    );
    if let Some(st) = &rep.synctest {
        println!(
            "{name}: sync test: {} rollbacks, {} states compared, {} mismatches",
            st.rollbacks,
            st.checked,
            st.mismatches.len()
        );
    }
    if let Some(d) = &rep.divergence {
        println!("{name}: DIVERGED at {d}");
        println!(
            "{name}: first divergent tick {}; {} ticks verified before it (see `bitroom-server replay diff {name}`)",
            d.tick(),
            rep.ticks_verified
        );
        return EXIT_DIVERGED;
    }
    if let Some(e) = rep.damage.as_ref().filter(|e| e.is_corrupt()) {
        eprintln!("error: {name}: corrupt: {e}");
        println!(
            "{name}: CORRUPT: {} ticks verified before the damage at byte {}",
            rep.ticks_verified,
            e.offset().unwrap_or(rep.bytes_read)
        );
        return EXIT_CORRUPT;
    }
    if let Some(e) = &rep.damage {
        eprintln!("warning: {name}: damaged or truncated tail: {e}");
        println!(
            "{name}: {} ticks recoverable, {} verified (the readable prefix ends at byte {})",
            rep.ticks_read, rep.ticks_verified, rep.bytes_read
        );
    } else if !rep.ended_cleanly {
        println!(
            "{name}: no end record: the recording was not closed (still running, or the server stopped abruptly); all {} ticks present verified",
            rep.ticks_read
        );
    } else {
        println!("{name}: OK");
    }
    0
}

/// A replay opened for re-simulation.
struct Opened {
    name: String,
    index: ReplayIndex<PlayerInput>,
    src: BufReader<File>,
    initial: GameSnapshot<Sandbox>,
    rules: Sandbox,
}

impl Opened {
    fn open(path: &Path) -> Result<Opened, String> {
        let name = path.display().to_string();
        let (reader, _) = open(path)?;
        let index = ReplayIndex::build(reader);
        let initial =
            decode_initial::<Sandbox>(&index.header).map_err(|e| format!("{name}: {e}"))?;
        let rules = replay_rules(&index.header, &initial).map_err(|e| format!("{name}: {e}"))?;
        let src = BufReader::new(File::open(path).map_err(|e| format!("{name}: {e}"))?);
        match &index.damage {
            Some(e) if e.is_corrupt() => eprintln!(
                "error: {name}: corrupt: {e}; comparing the {} ticks before the damage",
                index.ticks.len()
            ),
            Some(e) => eprintln!(
                "warning: {name}: damaged or truncated tail ({e}); using the {} intact ticks",
                index.ticks.len()
            ),
            None => {}
        }
        Ok(Opened {
            name,
            index,
            src,
            initial,
            rules,
        })
    }

    fn side(&mut self) -> Side<'_, Sandbox, BufReader<File>> {
        Side {
            index: &self.index,
            src: &mut self.src,
            initial: &self.initial,
            rules: &self.rules,
        }
    }
}

fn diff_cmd(args: &DiffArgs) -> ExitCode {
    let mut a = match Opened::open(&args.a) {
        Ok(a) => a,
        Err(e) => return bad_input(&e),
    };
    let mut b = match args.b.as_deref().map(Opened::open).transpose() {
        Ok(b) => b,
        Err(e) => return bad_input(&e),
    };
    let res = match &mut b {
        Some(b) => diff_replays(a.side(), b.side()),
        None => diff_against_resim(a.side()),
    };
    let rep = match res {
        Ok(r) => r,
        Err(e) => return bad_input(e),
    };
    let labels = match &b {
        Some(_) => ("A", "B"),
        None => ("recorded", "re-simulated"),
    };
    if args.json {
        println!("{}", diff_report_json(&a, b.as_ref(), &rep));
    } else {
        print_diff(&a, b.as_ref(), &rep, labels);
    }
    let corrupt = |o: &Opened| o.index.damage.as_ref().is_some_and(|e| e.is_corrupt());
    if corrupt(&a) || b.as_ref().is_some_and(corrupt) {
        ExitCode::from(EXIT_CORRUPT)
    } else if rep.divergence.is_some() {
        ExitCode::from(EXIT_DIVERGED)
    } else {
        ExitCode::SUCCESS
    }
}

fn comparison_name(c: Comparison) -> &'static str {
    match c {
        Comparison::Initial => "initial",
        Comparison::Reconstructed => "reconstructed",
        Comparison::Keyframe => "keyframe",
    }
}

fn diff_report_json(a: &Opened, b: Option<&Opened>, rep: &DiffReport) -> serde_json::Value {
    serde_json::json!({
        "a": a.name,
        "b": b.map(|b| &b.name),
        "divergent_tick": rep.divergence,
        "hashes": rep.hashes.map(|(x, y)| [format!("{x:016x}"), format!("{y:016x}")]),
        "inputs_differ_at": rep.inputs_differ_at,
        "ticks_compared": rep.ticks_compared,
        "compared_at": rep.compared_at,
        "comparison": rep.comparison.map(comparison_name),
        "diff": rep.diff.as_ref().map(diff_json),
        "notes": rep.notes,
    })
}

fn print_diff(a: &Opened, b: Option<&Opened>, rep: &DiffReport, labels: (&str, &str)) {
    let span = |o: &Opened| format!("ticks {} to {}", o.index.start_tick(), o.index.last_tick());
    match b {
        Some(b) => {
            println!("A: {} ({})", a.name, span(a));
            println!("B: {} ({})", b.name, span(b));
        }
        None => println!(
            "{} ({}) against a fresh re-simulation of its inputs",
            a.name,
            span(a)
        ),
    }
    match rep.divergence {
        None => println!("no divergence over {} ticks", rep.ticks_compared),
        Some(t) => {
            let (x, y) = rep.hashes.unwrap_or_default();
            println!(
                "first divergent tick: {t} ({} hash {x:016x}, {} hash {y:016x})",
                labels.0, labels.1
            );
        }
    }
    if b.is_some() {
        match rep.inputs_differ_at {
            Some(t) => println!("inputs first differ at tick {t}"),
            None => println!("inputs identical over {} common ticks", rep.ticks_compared),
        }
    }
    for n in &rep.notes {
        println!("note: {n}");
    }
    if let (Some(t), Some(c), Some(d)) = (rep.compared_at, rep.comparison, &rep.diff) {
        let how = match c {
            Comparison::Initial => "the initial states",
            Comparison::Reconstructed => {
                "rebuilt from the latest keyframe before it and checked against the recorded hashes"
            }
            Comparison::Keyframe => "the first recorded keyframe after the divergence",
        };
        println!("states at tick {t} ({how}):");
        print!("{}", diff_table(d, labels));
    }
}

fn info_cmd(args: &InfoArgs) -> ExitCode {
    let name = args.file.display().to_string();
    let (reader, size) = match open(&args.file) {
        Ok(r) => r,
        Err(e) => return bad_input(&e),
    };
    let index = ReplayIndex::build(reader);
    let h = &index.header;
    let ticks = index.ticks.len() as u64;
    println!("file        {name} ({size} bytes)");
    println!(
        "format      version {}, recorded by bitroom {}",
        h.format_version, h.bitroom_version
    );
    println!("room        {:?}, scene {}", h.room, h.scene);
    println!(
        "rules       {}, fingerprint {:016x}",
        h.rules, h.rules_fingerprint
    );
    println!("seats       {}, tick rate {} Hz", h.slots, h.tick_rate);
    // Floats: durations for reading only.
    println!(
        "ticks       {} to {} ({ticks} ticks, {:.1} s); initial state {} bytes",
        index.start_tick(),
        index.last_tick(),
        ticks as f64 / f64::from(h.tick_rate),
        h.initial.len()
    );
    let kf = &index.keyframes;
    let kf_bytes: u64 = kf.iter().map(|k| k.len).sum();
    let at: Vec<String> = kf.iter().take(8).map(|k| k.tick.to_string()).collect();
    println!(
        "keyframes   every {} ticks: {} ({}{}), {} bytes on average",
        h.keyframe_interval,
        kf.len(),
        if at.is_empty() {
            "none".to_string()
        } else {
            format!("at {}", at.join(", "))
        },
        if kf.len() > 8 { ", ..." } else { "" },
        kf_bytes.checked_div(kf.len() as u64).unwrap_or(0)
    );
    let mut per_slot: Vec<Vec<String>> = vec![Vec::new(); usize::from(h.slots)];
    let mut unknown = 0;
    for t in &index.ticks {
        for e in &t.inputs.events {
            let (s, what) = match *e {
                SlotEvent::Join(s) => (s, "joined"),
                SlotEvent::Leave(s) => (s, "left"),
            };
            match per_slot.get_mut(usize::from(s)) {
                Some(v) => v.push(format!("{what} at {}", t.tick)),
                None => unknown += 1,
            }
        }
    }
    let active: Vec<String> = per_slot
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(i, v)| {
            const SHOWN: usize = 12;
            let more = match v.len().saturating_sub(SHOWN) {
                0 => String::new(),
                n => format!(", ... ({n} more)"),
            };
            let shown = &v[..v.len().min(SHOWN)];
            format!("slot {i} {}{more}", shown.join(", "))
        })
        .collect();
    if active.is_empty() {
        println!("players     none joined");
    }
    for (i, line) in active.iter().enumerate() {
        println!(
            "{}{line}",
            if i == 0 {
                "players     "
            } else {
                "            "
            }
        );
    }
    if unknown > 0 {
        println!("            ({unknown} events for seats outside the room, ignored)");
    }
    match &index.damage {
        Some(e) if e.is_corrupt() => {
            println!(
                "integrity   CORRUPT: {e}; {ticks} ticks readable before it (up to byte {})",
                index.bytes
            );
            return ExitCode::from(EXIT_CORRUPT);
        }
        Some(e) => println!(
            "integrity   damaged tail: {e}; {ticks} ticks readable (up to byte {})",
            index.bytes
        ),
        None if index.ended_cleanly => {
            println!("integrity   complete: every record intact, end record present")
        }
        None => println!(
            "integrity   every record intact, no end record (still recording, or the server stopped abruptly)"
        ),
    }
    ExitCode::SUCCESS
}

fn export_cmd(args: &ExportArgs) -> ExitCode {
    debug_assert!(args.json);
    let name = args.file.display().to_string();
    let (mut reader, _) = match open(&args.file) {
        Ok(r) => r,
        Err(e) => return bad_input(&e),
    };
    let header = reader.header().clone();
    let initial = match decode_initial::<Sandbox>(&header) {
        Ok(s) => s,
        Err(e) => return bad_input(format!("{name}: {e}")),
    };
    let rules = match replay_rules(&header, &initial) {
        Ok(r) => r,
        Err(e) => return bad_input(format!("{name}: {e}")),
    };
    let mut game = Game::from_snapshot(rules, &initial);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let line = |out: &mut BufWriter<_>, game: &Game<Sandbox>| {
        let bodies: Vec<serde_json::Value> =
            body_fields(game.world()).iter().map(body_json).collect();
        let v = serde_json::json!({
            "tick": game.tick(),
            "hash": format!("{:016x}", game.state_hash()),
            "bodies": bodies,
        });
        writeln!(out, "{v}")
    };
    if line(&mut out, &game).is_err() {
        return ExitCode::SUCCESS;
    }
    for rec in &mut reader {
        let Record::Tick { tick, inputs, hash } = rec else {
            continue;
        };
        game.step(&inputs);
        let computed = game.state_hash();
        if computed != hash {
            let _ = out.flush();
            eprintln!(
                "error: {name}: diverged at tick {tick} (recorded {hash:016x}, re-simulated {computed:016x}); export stopped"
            );
            return ExitCode::from(EXIT_DIVERGED);
        }
        if tick % args.every == 0 && line(&mut out, &game).is_err() {
            // The reader went away (`| head`).
            return ExitCode::SUCCESS;
        }
    }
    let _ = out.flush();
    match reader.stop_reason() {
        Some(e) if e.is_corrupt() => {
            eprintln!(
                "error: {name}: corrupt: {e}; exported up to tick {}",
                game.tick()
            );
            return ExitCode::from(EXIT_CORRUPT);
        }
        Some(e) => eprintln!(
            "warning: {name}: damaged or truncated tail: {e}; exported up to tick {}",
            game.tick()
        ),
        None => {}
    }
    ExitCode::SUCCESS
}

fn record_cmd(args: &RecordArgs) -> ExitCode {
    let rules = match (args.loose_bodies, args.scene.as_str()) {
        (Some(n), "arena") => Sandbox::new(SandboxConfig { loose_bodies: n }),
        (Some(_), _) => return bad_input("--loose-bodies needs --scene arena"),
        (None, scene) => match load_scene(scene) {
            Ok(w) => rules_for(scene, w),
            Err(e) => return bad_input(&e),
        },
    };
    let mut game = Game::new(rules, args.players);
    let file = match File::create(&args.out) {
        Ok(f) => f,
        Err(e) => return bad_input(format!("{}: {e}", args.out.display())),
    };
    let meta = RecordingMeta {
        keyframe_interval: args.keyframe_interval,
        ..RecordingMeta::new(SANDBOX_RULES, &args.room, &args.scene, args.tick_rate)
    };
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {}: {e}", args.out.display());
        ExitCode::from(1)
    };
    let mut rec = match Recorder::new(BufWriter::new(file), &game, meta) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    // Players join one per tick from tick 1.
    let mut bots = LocalBots::cycling(game.rules(), args.players, &BOT_STRATEGIES, args.seed);
    for t in 1..=args.ticks {
        let set = bots.inputs(&game);
        game.step(&set);
        if let Err(e) = rec.record_tick(&game, &set, game.state_hash()) {
            return fail(&e);
        }
        if t % u64::from(args.tick_rate) == 0 {
            if let Err(e) = rec.flush() {
                return fail(&e);
            }
        }
    }
    let stats = rec.stats();
    let size = match rec.finish() {
        Ok(w) => w.get_ref().metadata().map(|m| m.len()).unwrap_or(0),
        Err(e) => return fail(&e),
    };
    println!(
        "recorded {} ticks of {} bots on {} ({} bodies) to {}: {} keyframes, {} bytes, final hash {:016x}",
        stats.ticks,
        args.players,
        args.scene,
        game.world().body_count(),
        args.out.display(),
        stats.keyframes,
        size,
        game.state_hash()
    );
    ExitCode::SUCCESS
}
