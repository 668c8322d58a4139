//! State diffs for people (a table) and programs (JSON). Floats appear
//! here only to print fixed-point values.

use bitroom_sim::game::avatar_slot;
use bitroom_sim::game::diff::{BodyDiff, BodyFields, Field, StateDiff};
use bitroom_sim::{BodyKind, Scalar};
use serde_json::{json, Value};
use std::fmt::Write as _;

// Floats from here on: printing only.
fn f(x: Scalar) -> f64 {
    x.to_f64()
}

fn kind_name(k: BodyKind) -> &'static str {
    match k {
        BodyKind::Static => "static",
        BodyKind::Kinematic => "kinematic",
        BodyKind::Dynamic => "dynamic",
    }
}

/// One body as JSON (floats for reading and plotting; `id` is the slot
/// index).
pub fn body_json(b: &BodyFields) -> Value {
    let mut v = json!({
        "id": b.id.index,
        "generation": b.id.generation,
        "kind": kind_name(b.kind),
        "x": f(b.position.x),
        "y": f(b.position.y),
        "angle": f(b.angle()),
        "vx": f(b.linear_velocity.x),
        "vy": f(b.linear_velocity.y),
        "w": f(b.angular_velocity),
        "awake": b.awake,
        "contacts": b.contacts,
    });
    if let Some(s) = avatar_slot(b.user_data) {
        v["avatar_of_slot"] = json!(s);
    }
    v
}

/// A state diff as JSON.
pub fn diff_json(d: &StateDiff) -> Value {
    let bodies: Vec<Value> = d
        .bodies
        .iter()
        .map(|b| {
            json!({
                "index": b.index,
                "fields": b.fields.iter().map(|f| f.name()).collect::<Vec<_>>(),
                "a": b.a.as_ref().map(body_json),
                "b": b.b.as_ref().map(body_json),
            })
        })
        .collect();
    let slots: Vec<Value> = d
        .slots
        .iter()
        .map(|s| json!({ "slot": s.slot, "a": s.a, "b": s.b }))
        .collect();
    json!({
        "tick_a": d.tick_a,
        "tick_b": d.tick_b,
        "bodies": bodies,
        "slots": slots,
        "rules_state": d.rules_state.as_ref().map(|(a, b)| json!({ "a": a, "b": b })),
        "other": d.other,
        "other_omitted": d.other_omitted,
    })
}

/// Rows of one body: (field, a, b, b − a).
fn body_rows(b: &BodyDiff) -> Vec<(String, String, String, String)> {
    let mut rows = Vec::new();
    let (Some(x), Some(y)) = (&b.a, &b.b) else {
        let show = |v: &Option<BodyFields>| match v {
            Some(v) => format!(
                "{} at ({}, {})",
                kind_name(v.kind),
                f(v.position.x),
                f(v.position.y)
            ),
            None => "-".to_string(),
        };
        rows.push(("presence".into(), show(&b.a), show(&b.b), String::new()));
        return rows;
    };
    let num = |rows: &mut Vec<_>, name: &str, p: Scalar, q: Scalar| {
        if p == q {
            // The other component of a vector that differs.
            return;
        }
        rows.push((
            name.to_string(),
            f(p).to_string(),
            f(q).to_string(),
            f(q - p).to_string(),
        ));
    };
    for field in &b.fields {
        match field {
            Field::Position => {
                num(&mut rows, "position x", x.position.x, y.position.x);
                num(&mut rows, "position y", x.position.y, y.position.y);
            }
            Field::Angle if x.angle() != y.angle() => {
                num(&mut rows, "angle", x.angle(), y.angle());
            }
            Field::Angle => {
                // Rotations too close for the angle to show it.
                num(&mut rows, "rotation cos", x.rotation.c, y.rotation.c);
                num(&mut rows, "rotation sin", x.rotation.s, y.rotation.s);
            }
            Field::LinearVelocity => {
                num(
                    &mut rows,
                    "velocity x",
                    x.linear_velocity.x,
                    y.linear_velocity.x,
                );
                num(
                    &mut rows,
                    "velocity y",
                    x.linear_velocity.y,
                    y.linear_velocity.y,
                );
            }
            Field::AngularVelocity => num(
                &mut rows,
                "angular velocity",
                x.angular_velocity,
                y.angular_velocity,
            ),
            Field::Awake => rows.push((
                "awake".into(),
                x.awake.to_string(),
                y.awake.to_string(),
                String::new(),
            )),
            Field::Contacts => rows.push((
                "contacts".into(),
                x.contacts.to_string(),
                y.contacts.to_string(),
                (i64::from(y.contacts) - i64::from(x.contacts)).to_string(),
            )),
            Field::Generation => rows.push((
                "generation".into(),
                x.id.generation.to_string(),
                y.id.generation.to_string(),
                String::new(),
            )),
            Field::Kind => rows.push((
                "kind".into(),
                kind_name(x.kind).into(),
                kind_name(y.kind).into(),
                String::new(),
            )),
            Field::UserData => rows.push((
                "user data".into(),
                format!("{:#x}", x.user_data),
                format!("{:#x}", y.user_data),
                String::new(),
            )),
            Field::Internal => rows.push((
                "internal".into(),
                "(mass, force, sleep timer, ...)".into(),
                "differs".into(),
                String::new(),
            )),
            Field::Presence => {}
        }
    }
    rows
}

/// A state diff as a table, the two states named `labels`.
pub fn diff_table(d: &StateDiff, labels: (&str, &str)) -> String {
    let mut out = String::new();
    if d.is_empty() {
        out.push_str("the states are identical\n");
        return out;
    }
    if d.tick_a != d.tick_b {
        let _ = writeln!(
            out,
            "ticks differ: {} at {}, {} at {}",
            labels.0, d.tick_a, labels.1, d.tick_b
        );
    }
    if !d.bodies.is_empty() {
        let n = d.bodies.len();
        let _ = writeln!(
            out,
            "{n} {}:",
            if n == 1 {
                "body differs"
            } else {
                "bodies differ"
            }
        );
        let mut table = vec![(
            "body".to_string(),
            "field".to_string(),
            labels.0.to_string(),
            labels.1.to_string(),
            format!("{} - {}", labels.1, labels.0),
        )];
        for b in &d.bodies {
            let mut name = b.index.to_string();
            if let Some(s) =
                b.a.as_ref()
                    .or(b.b.as_ref())
                    .and_then(|f| avatar_slot(f.user_data))
            {
                let _ = write!(name, " (avatar of slot {s})");
            }
            for (i, (field, x, y, delta)) in body_rows(b).into_iter().enumerate() {
                let first = if i == 0 { name.clone() } else { String::new() };
                table.push((first, field, x, y, delta));
            }
        }
        let w = |k: fn(&(String, String, String, String, String)) -> &String| {
            table
                .iter()
                .map(|r| k(r).chars().count())
                .max()
                .unwrap_or(0)
        };
        let (w0, w1, w2, w3) = (w(|r| &r.0), w(|r| &r.1), w(|r| &r.2), w(|r| &r.3));
        for r in &table {
            let line = format!(
                "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
                r.0, r.1, r.2, r.3, r.4
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for s in &d.slots {
        let _ = writeln!(
            out,
            "slot {} differs:\n  {}: {}\n  {}: {}",
            s.slot,
            labels.0,
            s.a.as_deref().unwrap_or("-"),
            labels.1,
            s.b.as_deref().unwrap_or("-")
        );
    }
    if let Some((a, b)) = &d.rules_state {
        let _ = writeln!(
            out,
            "rules state differs:\n  {}: {a}\n  {}: {b}",
            labels.0, labels.1
        );
    }
    if !d.other.is_empty() {
        let _ = writeln!(out, "other differences:");
        for o in &d.other {
            let _ = writeln!(out, "  {o}");
        }
        if d.other_omitted > 0 {
            let _ = writeln!(out, "  ... and {} more", d.other_omitted);
        }
    }
    out
}
