//! The game layer, the rollback timeline and the sync test.

use bitroom_sim::game::bots::Bot;
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox, SandboxBot, SandboxConfig, Strategy};
use bitroom_sim::game::{
    Game, GameSnapshot, GameSnapshotError, InputSet, Rules, Slot, SlotEvent, SyncTest, Timeline,
    TimelineError,
};
use bitroom_sim::{PackError, SnapshotError, Vec2, World};
use proptest::prelude::*;
use std::cell::Cell;
use std::rc::Rc;

fn small_sandbox() -> Sandbox {
    Sandbox::new(SandboxConfig { loose_bodies: 30 })
}

/// Scripted inputs: slot `s` at tick `t`.
fn scripted(slots: u8, t: u64) -> InputSet<PlayerInput> {
    let inputs = (0..slots)
        .map(|s| {
            let phase = (t / 17 + u64::from(s)) % 4;
            PlayerInput {
                buttons: if phase == 1 { PlayerInput::JUMP } else { 0 }
                    | if phase >= 2 { PlayerInput::GRAB } else { 0 },
                move_x: [100, -100, 40, 0][phase as usize],
                move_y: 0,
                aim: (t as u16).wrapping_mul(300),
            }
        })
        .collect();
    let mut set = InputSet::with_inputs(inputs);
    if t <= u64::from(slots) {
        set.events.push(SlotEvent::Join((t - 1) as u8));
    }
    set
}

fn play(game: &mut Game<Sandbox>, from: u64, to: u64) {
    for t in from..=to {
        game.step(&scripted(game.slot_count(), t));
    }
}

#[test]
fn players_join_move_and_leave() {
    let mut game = Game::new(small_sandbox(), 2);
    let bodies = game.world().body_count();
    game.step(&InputSet::join(2, 1));
    assert!(game.slots()[1].active && !game.slots()[0].active);
    assert_eq!(game.world().body_count(), bodies + 1);
    let avatar = game.slots()[1].player.avatar.expect("avatar spawned");
    // Let it land, then run right for a second.
    for _ in 0..60 {
        game.step(&InputSet::with_inputs(vec![PlayerInput::default(); 2]));
    }
    let x0 = game.world().position(avatar).unwrap().x;
    let right = PlayerInput {
        move_x: 127,
        ..PlayerInput::default()
    };
    for _ in 0..60 {
        game.step(&InputSet::with_inputs(vec![PlayerInput::default(), right]));
    }
    let x1 = game.world().position(avatar).unwrap().x;
    assert!(
        (x1 - x0).to_f64() > 3.0,
        "avatar ran {} m",
        (x1 - x0).to_f64()
    );
    // Jump from the ground: the avatar rises.
    let y0 = game.world().position(avatar).unwrap().y;
    let jump = PlayerInput {
        buttons: PlayerInput::JUMP,
        ..PlayerInput::default()
    };
    game.step(&InputSet::with_inputs(vec![PlayerInput::default(), jump]));
    for _ in 0..10 {
        game.step(&InputSet::with_inputs(vec![PlayerInput::default(), jump]));
    }
    let y1 = game.world().position(avatar).unwrap().y;
    assert!((y1 - y0).to_f64() > 0.5, "jumped {} m", (y1 - y0).to_f64());
    // Leaving removes the avatar.
    game.step(&InputSet {
        inputs: vec![],
        events: vec![SlotEvent::Leave(1)],
    });
    assert!(!game.slots()[1].active);
    assert!(!game.world().contains_body(avatar));
    assert_eq!(game.world().body_count(), bodies);
}

#[test]
fn out_of_range_inputs_and_events_are_ignored() {
    let mut a = Game::new(small_sandbox(), 2);
    let mut b = Game::new(small_sandbox(), 2);
    a.step(&InputSet::join(2, 0));
    b.step(&InputSet {
        inputs: vec![PlayerInput::default(); 40],
        events: vec![
            SlotEvent::Join(0),
            SlotEvent::Join(0),
            SlotEvent::Join(200),
            SlotEvent::Leave(7),
        ],
    });
    assert_eq!(a.state_hash(), b.state_hash());
}

#[test]
fn grab_carries_and_throw_launches() {
    let mut game = Game::new(small_sandbox(), 1);
    game.step(&InputSet::join(1, 0));
    // Let the loose bodies settle, then walk into the pile grabbing.
    for t in 0..400u64 {
        let input = PlayerInput {
            buttons: if t > 200 && t % 30 == 0 {
                PlayerInput::GRAB
            } else {
                0
            },
            move_x: if t > 150 { 60 } else { 0 },
            move_y: 0,
            aim: 0,
        };
        game.step(&InputSet::with_inputs(vec![input]));
        if game.slots()[0].player.held.is_some() {
            break;
        }
    }
    let held = game.slots()[0].player.held.expect("grabbed something");
    let hold_input = PlayerInput {
        buttons: PlayerInput::GRAB,
        aim: 16384, // straight up
        ..PlayerInput::default()
    };
    for _ in 0..30 {
        game.step(&InputSet::with_inputs(vec![hold_input]));
    }
    let avatar = game.slots()[0].player.avatar.unwrap();
    let above =
        game.world().world_center(held).unwrap() - game.world().world_center(avatar).unwrap();
    assert!(above.y.to_f64() > 0.8, "held body {above:?} from avatar");
    let throw = PlayerInput {
        buttons: PlayerInput::GRAB | PlayerInput::THROW,
        aim: 16384,
        ..PlayerInput::default()
    };
    game.step(&InputSet::with_inputs(vec![throw]));
    assert!(game.slots()[0].player.held.is_none());
    assert!(game.world().linear_velocity(held).unwrap().y.to_f64() > 8.0);
}

#[test]
fn snapshot_restore_continues_bit_for_bit() {
    let mut a = Game::new(small_sandbox(), 3);
    play(&mut a, 1, 100);
    let snap = a.snapshot();
    let bytes = snap.to_bytes();
    play(&mut a, 101, 250);

    let mut b = Game::new(small_sandbox(), 3);
    b.restore(&snap);
    play(&mut b, 101, 250);
    assert_eq!(a.state_hash(), b.state_hash());

    let decoded = GameSnapshot::<Sandbox>::from_bytes(&bytes).expect("decodes");
    assert_eq!(decoded.state_hash(), snap.state_hash());
    let mut c = Game::from_snapshot(small_sandbox(), &decoded);
    play(&mut c, 101, 250);
    assert_eq!(a.state_hash(), c.state_hash());

    // The packed form (what a joining client receives) gives the same state
    // in a fraction of the bytes.
    let packed = snap.to_packed();
    assert!(
        packed.len() * 3 < bytes.len(),
        "{} vs {}",
        packed.len(),
        bytes.len()
    );
    let unpacked = GameSnapshot::<Sandbox>::from_packed(&packed).expect("decodes");
    assert_eq!(unpacked.to_bytes(), bytes);
    let mut d = Game::from_snapshot(small_sandbox(), &unpacked);
    play(&mut d, 101, 250);
    assert_eq!(a.state_hash(), d.state_hash());
    // Each form is refused by the other's decoder, and `decode` takes both.
    assert!(GameSnapshot::<Sandbox>::from_bytes(&packed).is_err());
    assert!(GameSnapshot::<Sandbox>::from_packed(&bytes).is_err());
    for form in [&bytes, &packed] {
        let any = GameSnapshot::<Sandbox>::decode(form).expect("decodes");
        assert_eq!(any.to_bytes(), bytes);
    }
}

#[test]
fn hash_covers_players() {
    let mut a = Game::new(small_sandbox(), 2);
    let mut b = Game::new(small_sandbox(), 2);
    a.step(&InputSet::join(2, 0));
    b.step(&InputSet::join(2, 0));
    assert_eq!(a.state_hash(), b.state_hash());
    // Same world, different player state: a pressed jump this tick.
    let jump = PlayerInput {
        buttons: PlayerInput::JUMP,
        ..PlayerInput::default()
    };
    a.step(&InputSet::with_inputs(vec![jump, PlayerInput::default()]));
    b.step(&InputSet::with_inputs(vec![
        PlayerInput {
            aim: 1,
            ..PlayerInput::default()
        },
        PlayerInput::default(),
    ]));
    assert_eq!(a.world().state_hash(), b.world().state_hash());
    assert_ne!(a.state_hash(), b.state_hash());
}

#[test]
fn corrupt_game_snapshots_are_refused() {
    let mut g = Game::new(small_sandbox(), 2);
    play(&mut g, 1, 10);
    let bytes = g.snapshot().to_bytes();
    for cut in [0, 3, 4, 100, bytes.len() - 1] {
        assert!(GameSnapshot::<Sandbox>::from_bytes(&bytes[..cut]).is_err());
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_bytes(&long),
        Err(GameSnapshotError::Trailing(1))
    ));
    // A huge declared world length.
    let mut lie = bytes.clone();
    lie[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_bytes(&lie),
        Err(GameSnapshotError::Truncated)
    ));
}

#[test]
fn corrupt_packed_game_snapshots_are_refused() {
    let mut g = Game::new(small_sandbox(), 2);
    play(&mut g, 1, 10);
    let bytes = g.snapshot().to_packed();
    for cut in 0..bytes.len() {
        assert!(GameSnapshot::<Sandbox>::from_packed(&bytes[..cut]).is_err());
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_packed(&long),
        Err(GameSnapshotError::Trailing(1))
    ));
    // The magic, the world part's format byte, then its stated inflated
    // length.
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_packed(&bytes[4..]),
        Err(GameSnapshotError::NotPacked)
    ));
    let mut format = bytes.clone();
    format[8] = 9;
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_packed(&format),
        Err(GameSnapshotError::World(SnapshotError::Packed(
            PackError::Format(9)
        )))
    ));
    let mut huge = bytes.clone();
    huge[9..13].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        GameSnapshot::<Sandbox>::from_packed(&huge),
        Err(GameSnapshotError::World(SnapshotError::Packed(
            PackError::TooLarge(_)
        )))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = GameSnapshot::<Sandbox>::from_bytes(&bytes);
        let _ = GameSnapshot::<Sandbox>::from_packed(&bytes);
    }

    /// Flipped bytes of a packed snapshot are refused or decode to a state
    /// that validates; never a panic.
    #[test]
    fn mutated_packed_snapshots_never_panic(at in any::<proptest::sample::Index>(), flip in 1u8..) {
        let mut g = Game::new(small_sandbox(), 2);
        play(&mut g, 1, 5);
        let mut bytes = g.snapshot().to_packed();
        let i = at.index(bytes.len());
        bytes[i] ^= flip;
        let _ = GameSnapshot::<Sandbox>::from_packed(&bytes);
    }
}

/// The straight-line simulation with the authoritative inputs.
fn reference(ticks: u64, slots: u8) -> Vec<u64> {
    let mut g = Game::new(small_sandbox(), slots);
    (1..=ticks)
        .map(|t| {
            g.step(&scripted(slots, t));
            g.state_hash()
        })
        .collect()
}

#[test]
fn mispredictions_roll_back_and_converge() {
    const SLOTS: u8 = 3;
    const TICKS: u64 = 200;
    let want = reference(TICKS, SLOTS);
    let mut tl = Timeline::new(Game::new(small_sandbox(), SLOTS), 32);
    // This peer owns slot 0 and learns the others' inputs 6 ticks late.
    let lag = 6;
    for t in 1..=TICKS {
        tl.set_local_input(t, 0, scripted(SLOTS, t).input(0));
        tl.advance().expect("window has room");
        if t > lag {
            let c = t - lag;
            tl.confirm(c, scripted(SLOTS, c)).unwrap();
            tl.update();
            assert_eq!(tl.hash_at(c), Some(want[(c - 1) as usize]), "tick {c}");
        }
    }
    for c in TICKS - lag + 1..=TICKS {
        tl.confirm(c, scripted(SLOTS, c)).unwrap();
    }
    tl.update();
    assert_eq!(tl.game().state_hash(), want[(TICKS - 1) as usize]);
    let s = tl.stats();
    assert!(s.rollbacks > 10, "{s:?}");
    assert!(s.max_depth <= lag + 1, "{s:?}");
}

#[test]
fn timeline_refuses_out_of_order_and_full_window() {
    let mut tl = Timeline::new(Game::new(small_sandbox(), 1), 4);
    assert!(matches!(
        tl.confirm(3, InputSet::default()),
        Err(TimelineError::OutOfOrder {
            expected: 1,
            got: 3
        })
    ));
    for _ in 0..3 {
        tl.advance().unwrap();
    }
    assert_eq!(tl.advance(), Err(TimelineError::WindowFull(4)));
    tl.confirm(1, InputSet::default()).unwrap();
    tl.update();
    tl.advance().unwrap();
    // Duplicates of confirmed ticks are ignored.
    tl.confirm(1, InputSet::join(1, 0)).unwrap();
    assert_eq!(tl.confirmed_tick(), 1);
    assert_eq!(tl.rollback_to(0), Err(TimelineError::NotSaved(0)));
}

#[test]
fn confirmed_inputs_ahead_of_the_present_are_used() {
    const SLOTS: u8 = 2;
    let want = reference(20, SLOTS);
    let mut tl = Timeline::new(Game::new(small_sandbox(), SLOTS), 8);
    for t in 1..=5 {
        tl.confirm(t, scripted(SLOTS, t)).unwrap();
    }
    for _ in 0..5 {
        tl.advance().unwrap();
    }
    tl.update();
    assert_eq!(tl.stats().rollbacks, 0);
    assert_eq!(tl.hash_at(5), Some(want[4]));
}

#[test]
fn sync_test_passes_on_the_arena() {
    let mut test = SyncTest::new(Game::new(Sandbox::default(), 4), 8);
    let mut bots: Vec<SandboxBot> = [
        Strategy::Random,
        Strategy::Chaser,
        Strategy::Circle,
        Strategy::Random,
    ]
    .iter()
    .enumerate()
    .map(|(i, &s)| SandboxBot::new(s, i as u64))
    .collect();
    for t in 1..=120u64 {
        let inputs = (0..4u8)
            .map(|i| bots[usize::from(i)].next_input(test.game(), i))
            .collect();
        let mut set = InputSet::with_inputs(inputs);
        if t <= 4 {
            set.events.push(SlotEvent::Join((t - 1) as u8));
        }
        test.step(set);
    }
    let r = test.report();
    assert_eq!(r.ticks, 120);
    assert!(r.checked >= 100 * 8, "{r:?}");
    assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);
}

/// Rules that keep a counter outside the game state: the kind of bug the
/// sync test exists to catch.
#[derive(Clone)]
struct Leaky {
    inner: Sandbox,
    hidden: Rc<Cell<u32>>,
}

impl Rules for Leaky {
    type Input = PlayerInput;
    type Player = <Sandbox as Rules>::Player;
    type State = ();
    fn fingerprint(&self) -> u64 {
        1
    }
    fn build_world(&self) -> World {
        self.inner.build_world()
    }
    fn join(&self, w: &mut World, s: &mut (), slot: u8) -> Self::Player {
        self.inner.join(w, s, slot)
    }
    fn leave(&self, w: &mut World, s: &mut (), slot: u8, p: &mut Self::Player) {
        self.inner.leave(w, s, slot, p)
    }
    fn apply_input(
        &self,
        w: &mut World,
        _: &mut (),
        slot: &mut Slot<Self::Player, PlayerInput>,
        _: PlayerInput,
    ) {
        let n = self.hidden.get() + 1;
        self.hidden.set(n);
        if let Some(a) = slot.player.avatar {
            // Pushes harder every time it is called, re-simulation included.
            let _ = w.apply_force_to_center(a, Vec2::from_ints(n as i32, 0));
        }
    }
}

#[test]
fn sync_test_catches_state_outside_the_snapshot() {
    let rules = Leaky {
        inner: small_sandbox(),
        hidden: Rc::new(Cell::new(0)),
    };
    let mut test = SyncTest::new(Game::new(rules, 1), 4);
    for t in 1..=20 {
        test.step(scripted(1, t));
    }
    let r = test.report();
    assert!(!r.mismatches.is_empty());
    assert_eq!(r.mismatches[0].tick, 1, "{:?}", r.mismatches);
}
