//! The Agones manifests in `deploy/agones/` parse, and hold what
//! docs/fleet.md and the server rely on: a UDP container port that
//! `serve` binds, `--agones`, health checking on, the Counters `rooms`
//! and `players` declared with the capacities the server will set from
//! its own flags, an autoscaler buffering free rooms of the same Fleet,
//! and an allocation that picks a server with a free room and reserves
//! it. No cluster runs here: this checks the files, not Agones.

use serde_norway::Value;
use std::path::Path;

fn load(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/agones")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The value at a dotted path (`a.b.0.c`), or a panic naming it.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        cur = match key.parse::<usize>() {
            Ok(i) => cur.get(i),
            Err(_) => cur.get(key),
        }
        .unwrap_or_else(|| panic!("missing {path} (at {key})"));
    }
    cur
}

fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string"))
}

fn int_at(v: &Value, path: &str) -> i64 {
    at(v, path)
        .as_i64()
        .unwrap_or_else(|| panic!("{path} is not an integer"))
}

/// The value following `flag` in the container's args.
fn arg<'a>(args: &'a [Value], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a.as_str() == Some(flag))?;
    args.get(i + 1)?.as_str()
}

#[test]
fn fleet_autoscaler_and_allocation_agree() {
    let fleet = load("fleet.yaml");
    assert_eq!(str_at(&fleet, "apiVersion"), "agones.dev/v1");
    assert_eq!(str_at(&fleet, "kind"), "Fleet");
    let name = str_at(&fleet, "metadata.name");
    let gs = at(&fleet, "spec.template.spec");

    // The UDP port the server binds.
    let port = at(gs, "ports.0");
    assert_eq!(str_at(port, "protocol"), "UDP");
    let container_port = int_at(port, "containerPort");
    let container = str_at(gs, "container");
    let c = at(gs, "template.spec.containers.0");
    assert_eq!(str_at(c, "name"), container);
    let args = at(c, "args").as_sequence().expect("args");
    assert_eq!(args[0].as_str(), Some("serve"));
    assert!(
        args.iter().any(|a| a.as_str() == Some("--agones")),
        "no --agones"
    );
    let bind = arg(args, "--bind").expect("--bind");
    assert_eq!(
        bind,
        format!("0.0.0.0:{container_port}"),
        "--bind vs containerPort"
    );

    // Health checking on, with a window longer than the server's stall
    // limit (2 s) plus a report period.
    assert_eq!(at(gs, "health.disabled").as_bool(), Some(false));
    let window = int_at(gs, "health.periodSeconds") * int_at(gs, "health.failureThreshold");
    assert!(window >= 5, "health window {window} s");

    // Counters declared, with the capacities the server sets itself.
    let max_rooms: i64 = arg(args, "--max-rooms")
        .expect("--max-rooms")
        .parse()
        .unwrap();
    let seats: i64 = arg(args, "--max-players").unwrap_or("8").parse().unwrap();
    assert_eq!(int_at(gs, "counters.rooms.capacity"), max_rooms);
    assert_eq!(int_at(gs, "counters.players.capacity"), max_rooms * seats);
    assert_eq!(int_at(gs, "counters.rooms.count"), 0);
    // The capacity measured against a share of the CPU request.
    let budget: u32 = arg(args, "--cpu-budget")
        .expect("--cpu-budget")
        .parse()
        .unwrap();
    assert!((1..=100).contains(&budget), "--cpu-budget {budget}");

    // A CPU request and limit (sized in the file's comment).
    let cpu = str_at(c, "resources.requests.cpu");
    assert!(!cpu.is_empty());
    assert!(at(c, "resources.limits").get("cpu").is_some());

    // The autoscaler keeps free rooms in this Fleet.
    let fas = load("fleetautoscaler.yaml");
    assert_eq!(str_at(&fas, "kind"), "FleetAutoscaler");
    assert_eq!(str_at(&fas, "spec.fleetName"), name);
    assert_eq!(str_at(&fas, "spec.policy.type"), "Counter");
    assert_eq!(str_at(&fas, "spec.policy.counter.key"), "rooms");
    let buffer = int_at(&fas, "spec.policy.counter.bufferSize");
    assert!(buffer >= 1);
    let min = int_at(&fas, "spec.policy.counter.minCapacity");
    assert!(min >= buffer, "minCapacity below the buffer");
    assert!(int_at(&fas, "spec.policy.counter.maxCapacity") >= min);

    // The allocation: this Fleet's servers with a free room, Allocated
    // ones first, and the room reserved by the counter action.
    let gsa = load("gameserverallocation.yaml");
    assert_eq!(str_at(&gsa, "kind"), "GameServerAllocation");
    let selectors = at(&gsa, "spec.selectors").as_sequence().expect("selectors");
    let states: Vec<&str> = selectors
        .iter()
        .map(|s| str_at(s, "gameServerState"))
        .collect();
    assert_eq!(states, ["Allocated", "Ready"]);
    for s in selectors {
        let fleet_label = at(s, "matchLabels").get("agones.dev/fleet");
        assert_eq!(fleet_label.and_then(Value::as_str), Some(name));
        assert!(int_at(s, "counters.rooms.minAvailable") >= 1);
    }
    assert_eq!(str_at(&gsa, "spec.counters.rooms.action"), "Increment");
    assert_eq!(int_at(&gsa, "spec.counters.rooms.amount"), 1);
    assert_eq!(str_at(&gsa, "spec.priorities.0.key"), "rooms");
}
