//! `bitroom-server sim`: run a scene headless.

use super::{bad_input, EXIT_BAD_INPUT};
use crate::sandbox::rules_for;
use crate::sandbox::BOT_STRATEGIES;
use crate::scene::load_sim_scene;
use bitroom_sim::game::bots::LocalBots;
use bitroom_sim::game::{Game, SyncTest};
use bitroom_sim::{Stage, World};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// A built-in scene name or a path to a JSON scene file.
    #[arg(long)]
    scene: String,
    /// Steps to run.
    #[arg(long, default_value_t = 600)]
    steps: u64,
    /// Print each requested state as a JSON line (tick, hash, bodies).
    #[arg(long)]
    json: bool,
    /// Print the state hash every K steps (and with --json, the state).
    #[arg(long, value_name = "K")]
    hash_every: Option<u64>,
    /// Draw the final state to a PNG or SVG file.
    #[arg(long, value_name = "OUT")]
    render: Option<PathBuf>,
    /// Benchmark mode: time every step and report min / median ms per step.
    #[arg(long)]
    bench: bool,
    /// Time every stage of every step (prepare, substeps, finish, pairs,
    /// collide, sleep) and report each one's min and median ms, like
    /// Box2D's step profile.
    #[arg(long)]
    profile: bool,
    /// Sync test: play the sandbox game on the scene with bot players,
    /// rolling back K ticks after every tick and comparing state hashes.
    #[arg(long, value_name = "K")]
    synctest: Option<u32>,
    /// Bot players in --synctest mode.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=32))]
    players: u8,
    /// Seed of the bots' inputs in --synctest mode.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Step on N threads (the parts of a step that are independent; the
    /// same bits for any N). Not with --synctest.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u8).range(1..=64), conflicts_with = "synctest")]
    threads: u8,
}

/// Runs `sim`.
pub fn run(args: SimArgs) -> ExitCode {
    if let Some(path) = &args.render {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(ext, "png" | "svg") {
            eprintln!(
                "error: --render {}: use a .png or .svg file name",
                path.display()
            );
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    }
    let mut scene = match load_sim_scene(&args.scene) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    if let Some(k) = args.synctest {
        return synctest(&args, scene.world, k);
    }
    if let Err(e) = scene.world.set_threads(usize::from(args.threads)) {
        return bad_input(e);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let every = args.hash_every.filter(|&k| k > 0);
    let report = |w: &World, out: &mut dyn Write| {
        if args.json {
            let _ = writeln!(out, "{}", state_json(w));
        } else {
            let _ = writeln!(out, "tick {} hash {:016x}", w.tick(), w.state_hash());
        }
    };
    if args.json && every.is_some() {
        report(&scene.world, &mut out);
    }
    let mut times = Vec::with_capacity(if args.bench { args.steps as usize } else { 0 });
    // Per stage, each step's time (ms; floats at the edge: reporting only).
    let mut stages: Vec<Vec<f64>> = vec![Vec::new(); Stage::ALL.len()];
    let start = Instant::now();
    for _ in 0..args.steps {
        if args.profile {
            let mut row = [0.0f64; Stage::ALL.len()];
            let mut last = Instant::now();
            scene.step_observed(&mut |stage| {
                let now = Instant::now();
                let k = Stage::ALL.iter().position(|&s| s == stage).unwrap_or(0);
                row[k] += (now - last).as_secs_f64() * 1e3;
                last = now;
            });
            for (v, t) in stages.iter_mut().zip(row) {
                v.push(t);
            }
            if args.bench {
                times.push(row.iter().sum());
            }
        } else if args.bench {
            // The per-step function (rain's spawning) is timed with the step,
            // as in Box2D's driver.
            let t = Instant::now();
            scene.step();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        } else {
            scene.step();
        }
        if let Some(k) = every {
            if scene.world.tick() % k == 0 {
                report(&scene.world, &mut out);
            }
        }
    }
    let total = start.elapsed().as_secs_f64() * 1e3;
    let world = &scene.world;
    if args.json && every.is_none() {
        report(world, &mut out);
    }
    let per_step = if args.steps > 0 {
        total / args.steps as f64
    } else {
        0.0
    };
    let summary = format!(
        "scene {} steps {} bodies {} contacts {} hash {:016x} ms/step {:.3}",
        args.scene,
        args.steps,
        world.body_count(),
        world.touching_contact_count(),
        world.state_hash(),
        per_step
    );
    if args.json {
        eprintln!("{summary}");
    } else {
        let _ = writeln!(out, "{summary}");
    }
    if args.bench && !times.is_empty() {
        // The first step is excluded (initial pair finding), as in Box2D's driver.
        let mut t: Vec<f64> = times[1.min(times.len() - 1)..].to_vec();
        t.sort_by(|a, b| a.total_cmp(b));
        let min = t[0];
        let median = t[t.len() / 2];
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let _ = writeln!(
            out,
            "bench {}: steps {} min {:.3} ms median {:.3} ms mean {:.3} ms (first step excluded)",
            args.scene,
            t.len(),
            min,
            median,
            mean
        );
    }
    if args.profile && args.steps > 1 {
        let _ = writeln!(
            out,
            "profile {}: ms per stage over {} steps (first step excluded): min / median",
            args.scene,
            args.steps - 1
        );
        let min_median = |v: &[f64]| {
            let mut t = v[1..].to_vec();
            t.sort_by(|a, b| a.total_cmp(b));
            (t[0], t[t.len() / 2])
        };
        for (stage, v) in Stage::ALL.iter().zip(&stages) {
            let (min, median) = min_median(v);
            let _ = writeln!(out, "  {:<9} {:8.3} {:8.3}", stage.name(), min, median);
        }
        // The whole step, per step (its minimum is not the sum of the
        // stages' minimums).
        let steps: Vec<f64> = (0..stages[0].len())
            .map(|i| stages.iter().map(|v| v[i]).sum())
            .collect();
        let (min, median) = min_median(&steps);
        let _ = writeln!(out, "  {:<9} {:8.3} {:8.3}", "step", min, median);
    }
    if let Some(path) = &args.render {
        if let Err(e) = crate::render::render_to_file(world, path) {
            eprintln!("error: render {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

/// One JSON line describing the state (floats only here, for output).
pub fn state_json(w: &World) -> String {
    let bodies: Vec<serde_json::Value> = w
        .bodies()
        .map(|id| {
            let xf = w.transform(id).expect("live body");
            let v = w.linear_velocity(id).expect("live body");
            serde_json::json!({
                "id": id.index,
                "generation": id.generation,
                "x": xf.p.x.to_f64(),
                "y": xf.p.y.to_f64(),
                "angle": xf.q.angle().to_f64(),
                "vx": v.x.to_f64(),
                "vy": v.y.to_f64(),
                "w": w.angular_velocity(id).expect("live body").to_f64(),
                "awake": w.is_awake(id).expect("live body"),
            })
        })
        .collect();
    serde_json::json!({
        "tick": w.tick(),
        "hash": format!("{:016x}", w.state_hash()),
        "bodies": bodies,
    })
    .to_string()
}

fn synctest(args: &SimArgs, world: World, k: u32) -> ExitCode {
    if k == 0 {
        eprintln!("error: --synctest needs K >= 1");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let rules = rules_for(&args.scene, world);
    let players = args.players;
    // Players join one per tick from tick 1.
    let mut bots = LocalBots::cycling(&rules, players, &BOT_STRATEGIES, args.seed);
    let mut test = SyncTest::new(Game::new(rules, players), k);
    let start = Instant::now();
    for _ in 0..args.steps {
        let set = bots.inputs(test.game());
        test.step(set);
    }
    let secs = start.elapsed().as_secs_f64();
    let r = test.report();
    println!(
        "synctest scene {} K {} players {} ticks {} rollbacks {} states compared {} mismatches {} hash {:016x} ({:.1} ticks/s)",
        args.scene,
        k,
        players,
        r.ticks,
        r.rollbacks,
        r.checked,
        r.mismatches.len(),
        test.game().state_hash(),
        r.ticks as f64 / secs.max(1e-9)
    );
    for m in r.mismatches.iter().take(10) {
        println!(
            "mismatch at tick {}: first {:016x} resimulated {:016x}",
            m.tick, m.first, m.resimulated
        );
    }
    if r.mismatches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
