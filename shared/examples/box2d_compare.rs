//! Prints bitroom's behaviour scenarios side by side with Box2D v3's
//! figures for the same scenarios (see `tools/box2d-compare/README.md`):
//!
//! ```sh
//! cargo run --release -p bitroom-sim --example box2d_compare -- \
//!     [--only GROUP,...] [--reference FILE] [--before FILE] [--json OUT]
//! ```
//!
//! `--reference` reads Box2D's figures from FILE instead of the committed
//! `shared/tests/data/box2d_reference.json`; `--before` adds a column of
//! bitroom figures saved earlier with `--json` (e.g. from another commit).
//! `--only` runs some groups of scenarios (`fidelity::GROUPS`: columns,
//! pyramids, ramp, rolling, spin, rates, joints, pendulum, chain, bounce,
//! ragdolls, ragdoll_heaps, circle_bins, car, bridge, dominoes,
//! struck_wall, spinner; and
//! `heap_tail`, about 40 s, run only when named). Exits 1 when a figure
//! is outside its bound.

#[path = "../tests/fidelity/mod.rs"]
mod fidelity;

use serde_json::Value;

fn read(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let reference = opt("--reference").map_or_else(fidelity::reference, |p| read(&p));
    let before = opt("--before").map(|p| read(&p));
    let only: Vec<&str> = opt("--only").map_or(Vec::new(), |o| {
        let o: &'static str = Box::leak(o.into_boxed_str());
        o.split(',').collect()
    });
    let ours = fidelity::figures(&only);
    if let Some(out) = opt("--json") {
        let text = serde_json::to_string_pretty(&ours).expect("figures serialize");
        std::fs::write(&out, text).unwrap_or_else(|e| panic!("{out}: {e}"));
    }
    let checks = fidelity::check(&reference, &ours);
    let before_checks = before.map(|b| fidelity::check(&reference, &b));
    let fmt = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            format!("{x:.4}")
        }
    };
    print!("| scenario | figure | Box2D v3 |");
    if before_checks.is_some() {
        print!(" bitroom before |");
    }
    println!(" bitroom | bound | ok |");
    print!("|---|---|---:|");
    if before_checks.is_some() {
        print!("---:|");
    }
    println!("---:|---|---|");
    let mut failed = 0;
    for c in checks.iter() {
        print!("| {} | {} | {} |", c.scenario, c.figure, fmt(c.box2d));
        if let Some(b) = &before_checks {
            let same = b
                .iter()
                .find(|b| b.scenario == c.scenario && b.figure == c.figure);
            let mark = same.map_or(String::new(), |b| {
                format!("{}{}", fmt(b.bitroom), if b.pass { "" } else { " ✗" })
            });
            print!(" {mark} |");
        }
        println!(
            " {} | {} | {} |",
            fmt(c.bitroom),
            c.bound,
            if c.pass { "yes" } else { "**no**" }
        );
        failed += usize::from(!c.pass);
    }
    println!(
        "\n{} figures, {} within their bounds, {} outside",
        checks.len(),
        checks.len() - failed,
        failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
