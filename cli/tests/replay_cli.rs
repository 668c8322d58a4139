//! `bitroom-server replay ...` end to end: outputs and exit codes (0 fine,
//! 1 divergence, 2 bad input, 3 corrupt: damage followed by more data).

use bitroom_protocol::replay::{
    encode_header, encode_record, FORMAT_VERSION, OLDEST_FORMAT_VERSION,
};
use bitroom_sim::game::sandbox::PlayerInput;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The replay types for the sandbox's input.
type Record = bitroom_protocol::replay::Record<PlayerInput>;
type ReplayReader<Rd> = bitroom_protocol::replay::ReplayReader<Rd, PlayerInput>;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bitroom-server"))
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("replay-cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn run(args: &[&str]) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = bin().args(args).output().expect("runs");
    (
        status.code().expect("exit code"),
        String::from_utf8(stdout).expect("utf-8"),
        String::from_utf8(stderr).expect("utf-8"),
    )
}

/// Records a bot game: 150 ticks, keyframes every 50.
fn record(dir: &Path, name: &str, seed: u64) -> String {
    let out = dir.join(name);
    let out = out.to_str().expect("utf-8 path").to_string();
    let seed = seed.to_string();
    let (code, stdout, stderr) = run(&[
        "replay",
        "record",
        "--out",
        &out,
        "--loose-bodies",
        "40",
        "--players",
        "3",
        "--ticks",
        "150",
        "--keyframe-interval",
        "50",
        "--seed",
        &seed,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("recorded 150 ticks of 3 bots"), "{stdout}");
    out
}

/// Rewrites a replay with `edit` applied to its header and records.
fn rewrite(src: &str, dst: &Path, edit: impl Fn(&mut Record)) -> String {
    let bytes = std::fs::read(src).expect("read");
    let mut reader = ReplayReader::open(&bytes[..]).expect("valid");
    let mut header = Record::Header(reader.header().clone());
    edit(&mut header);
    let Record::Header(h) = header else {
        unreachable!()
    };
    let mut out = encode_header(&h);
    for mut r in &mut reader {
        edit(&mut r);
        encode_record(&r, &mut out);
    }
    std::fs::write(dst, out).expect("write");
    dst.to_str().expect("utf-8 path").to_string()
}

#[test]
fn a_recording_verifies_and_reports_speed() {
    let d = dir("verifies");
    let f = record(&d, "a.brr", 1);
    for jobs in ["1", "2", "4"] {
        let (code, out, err) = run(&["replay", "verify", "--jobs", jobs, &f]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("verified 150 ticks (1 to 150, from the state at tick 0)"),
            "{out}"
        );
        assert!(out.contains("checked 3 keyframe(s)"), "{out}");
        assert!(out.contains(&format!("on {jobs} thread(s)")), "{out}");
        assert!(
            out.contains("ticks/s") && out.contains("x real time"),
            "{out}"
        );
        assert!(out.contains(": OK"), "{out}");
    }

    let (code, out, _) = run(&[
        "replay",
        "verify",
        "--from-keyframe=120",
        "--synctest",
        "3",
        &f,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("verified 50 ticks (101 to 150, from the state at tick 100)"),
        "{out}"
    );
    assert!(out.contains("0 mismatches"), "{out}");
    let (code, out, _) = run(&["replay", "verify", "--from-keyframe", &f]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("verified 0 ticks (150 to 150, from the state at tick 150)"),
        "{out}"
    );
}

#[test]
fn a_truncated_tail_is_a_warning_with_the_recoverable_ticks() {
    let d = dir("truncated");
    let f = record(&d, "a.brr", 1);
    let bytes = std::fs::read(&f).expect("read");
    // Cut inside the keyframe of tick 100.
    let mut reader = ReplayReader::open(&bytes[..]).expect("valid");
    let mut cut = 0;
    while let Some(r) = reader.next() {
        if matches!(r, Record::Keyframe { tick: 100, .. }) {
            cut = reader.offset() as usize - 10;
        }
    }
    let t = d.join("cut.brr");
    std::fs::write(&t, &bytes[..cut]).expect("write");
    let t = t.to_str().expect("utf-8");
    let (code, out, err) = run(&["replay", "verify", t]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warning") && err.contains("is truncated"),
        "{err}"
    );
    assert!(out.contains("100 ticks recoverable, 100 verified"), "{out}");
    let (code, out, _) = run(&["replay", "info", t]);
    assert_eq!(code, 0);
    assert!(out.contains("integrity   damaged"), "{out}");
}

/// Every (record start, record end) of a file.
fn record_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut reader = ReplayReader::open(bytes).expect("valid");
    let mut spans = Vec::new();
    while reader.next().is_some() {
        spans.push((reader.record_offset() as usize, reader.offset() as usize));
    }
    spans
}

#[test]
fn damage_in_the_middle_exits_3_with_its_offset() {
    let d = dir("middle");
    let f = record(&d, "a.brr", 1);
    let bytes = std::fs::read(&f).expect("read");
    let spans = record_spans(&bytes);
    // One flipped byte in the payload of a record halfway through.
    let (start, _) = spans[spans.len() / 2];
    let mut b = bytes.clone();
    b[start + 12] ^= 0x40;
    let bad = d.join("flipped.brr");
    std::fs::write(&bad, &b).expect("write");
    let bad = bad.to_str().expect("utf-8");
    let at = format!("record at byte {start} fails its crc32 check");
    for jobs in ["1", "3"] {
        let (code, out, err) = run(&["replay", "verify", "--jobs", jobs, bad, &f]);
        assert_eq!(code, 3, "{out}{err}");
        assert!(err.contains("error: ") && err.contains(&at), "{err}");
        assert!(
            err.contains("damaged in the middle, not cut short"),
            "{err}"
        );
        assert!(out.contains("CORRUPT: "), "{out}");
        // The intact file next to it is still verified.
        assert!(out.contains(": OK"), "{out}");
    }
    let (code, out, _) = run(&["replay", "info", bad]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("integrity   CORRUPT: ") && out.contains(&at),
        "{out}"
    );
    let (code, out, err) = run(&["replay", "diff", bad]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains(&at), "{err}");
    let (code, _, err) = run(&["replay", "diff", &f, bad]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = run(&["replay", "export", "--json", bad]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&at), "{err}");

    // Garbage appended after the end record.
    let mut b = bytes.clone();
    b.extend_from_slice(b"garbage appended");
    let tail = d.join("appended.brr");
    std::fs::write(&tail, &b).expect("write");
    let tail = tail.to_str().expect("utf-8");
    let (code, out, err) = run(&["replay", "verify", tail]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains(&format!(
            "data after the end record, at byte {}",
            bytes.len()
        )),
        "{err}"
    );
    assert_eq!(run(&["replay", "info", tail]).0, 3);
}

#[test]
fn a_cut_at_every_byte_of_the_last_record_is_a_warning() {
    let d = dir("cut-every");
    let f = record(&d, "a.brr", 1);
    let bytes = std::fs::read(&f).expect("read");
    let spans = record_spans(&bytes);
    let (start, end) = *spans.last().expect("records");
    let cut = d.join("cut.brr");
    let cut = cut.to_str().expect("utf-8");
    for len in start + 1..end {
        std::fs::write(cut, &bytes[..len]).expect("write");
        let (code, out, err) = run(&["replay", "verify", cut]);
        assert_eq!(code, 0, "cut at {len}: {out}{err}");
        assert!(
            err.contains("warning: ") && err.contains(&format!("record at byte {start}")),
            "cut at {len}: {err}"
        );
        assert!(out.contains("150 ticks recoverable, 150 verified"), "{out}");
        let (code, out, _) = run(&["replay", "info", cut]);
        assert_eq!(code, 0, "cut at {len}: {out}");
        assert!(out.contains("integrity   damaged tail"), "{out}");
    }
}

#[test]
fn bad_files_exit_2_and_the_others_are_still_verified() {
    let d = dir("bad");
    let f = record(&d, "a.brr", 1);
    let junk = d.join("junk.brr");
    std::fs::write(&junk, b"definitely not a replay").expect("write");
    let junk = junk.to_str().expect("utf-8");
    let (code, out, err) = run(&["replay", "verify", junk, &f]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("not a bitroom replay"), "{err}");
    assert!(out.contains("verified 150 ticks"), "{out}");

    let next = FORMAT_VERSION + 1;
    let newer = rewrite(&f, &d.join("newer.brr"), |r| {
        if let Record::Header(h) = r {
            h.format_version = next;
        }
    });
    let (code, _, err) = run(&["replay", "verify", &newer]);
    assert_eq!(code, 2);
    let reads = if OLDEST_FORMAT_VERSION == FORMAT_VERSION {
        format!("version {FORMAT_VERSION}")
    } else {
        format!("versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}")
    };
    assert!(
        err.contains(&format!(
            "unsupported replay format version {next} (this build reads {reads})"
        )),
        "{err}"
    );

    // A recording of another game: these tools re-simulate the sandbox.
    let soccer = rewrite(&f, &d.join("soccer.brr"), |r| {
        if let Record::Header(h) = r {
            h.rules = "soccer".into();
        }
    });
    let (code, _, err) = run(&["replay", "verify", &soccer]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "rules \"soccer\" cannot be re-simulated by this build (it knows \"sandbox\")"
        ),
        "{err}"
    );

    // A flipped byte in the header: its CRC fails.
    let mut bytes = std::fs::read(&f).expect("read");
    bytes[200] ^= 1;
    let flipped = d.join("flipped.brr");
    std::fs::write(&flipped, bytes).expect("write");
    let flipped = flipped.to_str().expect("utf-8");
    for cmd in ["verify", "info", "diff"] {
        let (code, _, err) = run(&["replay", cmd, flipped]);
        assert_eq!(code, 2, "{cmd}");
        assert!(
            err.contains("record at byte 8 fails its crc32 check"),
            "{cmd}: {err}"
        );
    }
    let (code, _, err) = run(&["replay", "export", "--json", flipped]);
    assert_eq!(code, 2);
    assert!(err.contains("crc32"), "{err}");
    let missing = d.join("missing.brr");
    let (code, _, _) = run(&["replay", "verify", missing.to_str().expect("utf-8")]);
    assert_eq!(code, 2);
}

#[test]
fn altered_inputs_diverge_and_diff_names_the_avatar() {
    let d = dir("altered");
    let f = record(&d, "a.brr", 1);
    let bad = rewrite(&f, &d.join("bad.brr"), |r| {
        if let Record::Tick {
            tick: 77, inputs, ..
        } = r
        {
            let i = &mut inputs.inputs[2];
            i.move_x = if i.move_x > 0 { -127 } else { 127 };
        }
    });
    for jobs in ["1", "3"] {
        let (code, out, _) = run(&["replay", "verify", "--jobs", jobs, &bad]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("DIVERGED at tick 77: recorded hash"), "{out}");
        assert!(out.contains("76 ticks verified before it"), "{out}");
    }

    let (code, out, _) = run(&["replay", "diff", &bad]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("first divergent tick: 77"), "{out}");
    assert!(
        out.contains("states at tick 100 (the first recorded keyframe after the divergence)"),
        "{out}"
    );
    assert!(out.contains("(avatar of slot 2)"), "{out}");
    assert!(out.contains("velocity x"), "{out}");

    let (code, out, _) = run(&["replay", "diff", "--json", &bad]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["divergent_tick"], 77);
    assert_eq!(v["compared_at"], 100);
    assert_eq!(v["comparison"], "keyframe");
    let bodies = v["diff"]["bodies"].as_array().expect("bodies");
    assert!(
        bodies.iter().any(|b| b["a"]["avatar_of_slot"] == 2),
        "{out}"
    );

    // The untouched file against itself and against a re-simulation.
    let (code, out, _) = run(&["replay", "diff", &f]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no divergence over 150 ticks"), "{out}");
    let (code, out, _) = run(&["replay", "diff", &f, &f]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("inputs identical over 150 common ticks"),
        "{out}"
    );
}

#[test]
fn two_different_games_diverge_at_their_first_differing_hash() {
    let d = dir("two");
    let a = record(&d, "a.brr", 1);
    let b = record(&d, "b.brr", 2);
    let (code, out, _) = run(&["replay", "diff", &a, &b]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("first divergent tick: "), "{out}");
    assert!(out.contains("inputs first differ at tick 1"), "{out}");
    assert!(out.contains("avatar of slot"), "{out}");
    let (code, out, _) = run(&["replay", "diff", "--json", &a, &b]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let t = v["divergent_tick"].as_u64().expect("a tick");
    assert_eq!(v["compared_at"].as_u64(), Some(t));
    assert_eq!(v["comparison"], "reconstructed");
    assert!(!v["diff"]["bodies"].as_array().expect("bodies").is_empty());
}

#[test]
fn info_and_export() {
    let d = dir("info");
    let f = record(&d, "a.brr", 1);
    let (code, out, _) = run(&["replay", "info", &f]);
    assert_eq!(code, 0, "{out}");
    let format = format!("format      version {FORMAT_VERSION}");
    for want in [
        format.as_str(),
        "room        \"bots\", scene arena",
        "seats       3, tick rate 60 Hz",
        "ticks       0 to 150 (150 ticks, 2.5 s)",
        "keyframes   every 50 ticks: 3 (at 50, 100, 150)",
        "slot 2 joined at 3",
        "integrity   complete",
    ] {
        assert!(out.contains(want), "{want:?} missing from\n{out}");
    }

    let (code, out, err) = run(&["replay", "export", &f, "--json", "--every", "50"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let ticks: Vec<u64> = lines
        .iter()
        .map(|l| l["tick"].as_u64().expect("tick"))
        .collect();
    assert_eq!(ticks, vec![0, 50, 100, 150]);
    let bodies = lines[3]["bodies"].as_array().expect("bodies");
    assert_eq!(bodies.len(), 6 + 40 + 3, "walls, loose bodies, avatars");
    assert!(bodies[0]["x"].is_f64() && bodies[0]["awake"].is_boolean());
    let (_, vout, _) = run(&["replay", "verify", &f]);
    let hash = lines[3]["hash"].as_str().expect("hash");
    assert!(vout.contains(&format!("hash at tick 150 {hash}")), "{vout}");

    let (code, _, err) = run(&["replay", "export", &f]);
    assert_eq!(code, 2, "--json is required: {err}");
}

#[test]
fn the_committed_release_fixture_verifies_in_this_build() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../protocol/tests/fixtures/arena-4-bots-v15.brr");
    let (code, out, err) = run(&["replay", "verify", fixture.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("verified 240 ticks"), "{out}");
    assert!(out.contains("hash at tick 240 bafd3fde2e8a425d"), "{out}");
}
