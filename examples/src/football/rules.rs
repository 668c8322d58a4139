//! The rules of football: the pitch, the players, running, kicking,
//! scoring, and the ball going out. Deterministic like every game on bitroom: fixed-point
//! arithmetic only, no clocks, no randomness.

use super::Kick;
use bitroom_sim::game::{avatar_user_data, Rules, Slot};
use bitroom_sim::{
    BodyDef, BodyId, Circle, Rot, Scalar, ShapeDef, ShapeGeometry, Vec2, World, WorldDef,
};
use serde::{Deserialize, Serialize};

/// Half the pitch's length, goal line to centre (m).
pub const PITCH_HALF_LENGTH: Scalar = Scalar::from_int(8);
/// Half the pitch's width, side line to centre (m).
pub const PITCH_HALF_WIDTH: Scalar = Scalar::from_int(8);
/// Half a goal's width (m).
pub const GOAL_HALF_WIDTH: Scalar = Scalar::from_int(5);
/// How far from the centre spot the ball waits for a kick-off, on the
/// side of the team to kick off (m).
const KICK_OFF: Scalar = Scalar::from_int(2);
/// A goal post's radius (m).
const POST_RADIUS: Scalar = Scalar::ratio(1, 4);
/// The ball's radius (m).
pub const BALL_RADIUS: Scalar = Scalar::ratio(2, 5);
/// A player's radius (m).
const PLAYER_RADIUS: Scalar = Scalar::ratio(3, 5);
/// Top running speed (m/s) and how hard a player chases it (1/s), with the
/// largest acceleration (m/s²).
const RUN_SPEED: Scalar = Scalar::from_int(7);
const RUN_GAIN: Scalar = Scalar::from_int(10);
const RUN_ACCEL_MAX: Scalar = Scalar::from_int(40);
/// A kick reaches a ball whose centre is this close to the player's (m).
pub(super) const KICK_REACH: Scalar = Scalar::ratio(3, 2);
/// Speed a kick gives the ball (m/s).
const KICK_SPEED: Scalar = Scalar::from_int(18);

/// The football rules. Configuration only: everything that changes is in
/// the world, the players and the [`Score`].
#[derive(Clone, Debug)]
pub struct Football {
    ball: BodyId,
}

/// A player: the disc it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FootballPlayer {
    /// Its body.
    pub body: Option<BodyId>,
}

/// The score: part of the game state, so snapshots carry it and every
/// state hash covers it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    /// Goals of the left team (even seats) and the right team (odd seats).
    pub goals: [u32; 2],
    /// The team whose kick-off is next (the ball waits on its side of
    /// the centre spot): the team that conceded, or, after the ball went
    /// out, the other team.
    pub kick_off: u8,
}

impl Football {
    /// The rules (one pitch, no parameters).
    pub fn new() -> Football {
        let (_, ball) = pitch();
        Football { ball }
    }

    /// The ball's body.
    pub fn ball(&self) -> BodyId {
        self.ball
    }

    /// The team of a seat: 0 (left, even seats) or 1 (right, odd seats).
    pub fn team(slot: u8) -> usize {
        usize::from(slot % 2)
    }

    /// Where the ball waits for `team`'s kick-off.
    pub fn kick_off_spot(team: u8) -> Vec2 {
        Vec2::new(if team == 0 { -KICK_OFF } else { KICK_OFF }, Scalar::ZERO)
    }

    /// The centre of the goal team `team` attacks (on its line).
    pub fn goal_to_attack(team: usize) -> Vec2 {
        let x = PITCH_HALF_LENGTH;
        Vec2::new(if team == 0 { x } else { -x }, Scalar::ZERO)
    }
}

impl Default for Football {
    fn default() -> Football {
        Football::new()
    }
}

/// The pitch seen from above (no gravity): the ball on the left team's
/// kick-off spot (the first body, so its id is the same in every build of
/// the world) and the four goal posts. The lines are rules, not walls: a ball that
/// crosses one is out (see [`Football::post_step`]).
fn pitch() -> (World, BodyId) {
    let mut w = World::new(WorldDef {
        gravity: Vec2::ZERO,
        ..WorldDef::default()
    })
    .expect("valid world settings");
    let ball = w
        .create_body(&BodyDef {
            linear_damping: Scalar::ratio(2, 5),
            angular_damping: Scalar::ONE,
            ..BodyDef::dynamic(Football::kick_off_spot(0))
        })
        .expect("in bounds");
    let leather = ShapeDef {
        density: Scalar::HALF,
        restitution: Scalar::ratio(3, 5),
        ..ShapeDef::default()
    };
    let disc = Circle::new(Vec2::ZERO, BALL_RADIUS).expect("ball radius");
    w.create_shape(ball, &leather, ShapeGeometry::Circle(disc))
        .expect("ball shape");
    for x in [PITCH_HALF_LENGTH, -PITCH_HALF_LENGTH] {
        for y in [GOAL_HALF_WIDTH, -GOAL_HALF_WIDTH] {
            let post = w
                .create_body(&BodyDef::fixed(Vec2::new(x, y)))
                .expect("in bounds");
            let round = Circle::new(Vec2::ZERO, POST_RADIUS).expect("post radius");
            w.create_shape(post, &ShapeDef::default(), ShapeGeometry::Circle(round))
                .expect("post shape");
        }
    }
    (w, ball)
}

/// Where a seat's player enters: its own half, spread out.
fn entry_spot(slot: u8) -> Vec2 {
    let side = if Football::team(slot) == 0 { -1 } else { 1 };
    let row = i32::from(slot / 2);
    Vec2::from_ints(side * (4 + 2 * (row % 3)), 2 * (row % 4) - 3)
}

impl Rules for Football {
    type Input = Kick;
    type Player = FootballPlayer;
    type State = Score;

    fn fingerprint(&self) -> u64 {
        // No parameters: one fixed value per version of these rules.
        0xf007_ba11_0000_0001
    }

    fn build_world(&self) -> World {
        pitch().0
    }

    fn join(&self, world: &mut World, _: &mut Score, slot: u8) -> FootballPlayer {
        let def = BodyDef {
            fixed_rotation: true,
            user_data: avatar_user_data(slot),
            ..BodyDef::dynamic(entry_spot(slot))
        };
        let Ok(body) = world.create_body(&def) else {
            return FootballPlayer::default();
        };
        let disc = Circle::new(Vec2::ZERO, PLAYER_RADIUS).expect("player radius");
        let _ = world.create_shape(body, &ShapeDef::default(), ShapeGeometry::Circle(disc));
        FootballPlayer { body: Some(body) }
    }

    fn leave(&self, world: &mut World, _: &mut Score, _: u8, player: &mut FootballPlayer) {
        if let Some(b) = player.body.take() {
            let _ = world.destroy_body(b);
        }
    }

    fn apply_input(
        &self,
        world: &mut World,
        _: &mut Score,
        slot: &mut Slot<FootballPlayer, Kick>,
        input: Kick,
    ) {
        let Some(me) = slot.player.body else { return };
        let (Ok(v), Ok(mass), Ok(at)) = (
            world.linear_velocity(me),
            world.mass_data(me),
            world.world_center(me),
        ) else {
            return;
        };
        // Run: chase the asked velocity with a bounded force.
        let axis = |a: i8| RUN_SPEED * Scalar::ratio(i64::from(a), 127);
        let target = Vec2::new(axis(input.move_x), axis(input.move_y));
        let accel =
            |t: Scalar, v: Scalar| ((t - v) * RUN_GAIN).clamp(-RUN_ACCEL_MAX, RUN_ACCEL_MAX);
        let force = Vec2::new(accel(target.x, v.x), accel(target.y, v.y)) * mass.mass;
        let _ = world.apply_force_to_center(me, force);
        // Kick when the button goes down and the ball is in reach.
        if input.kick && !slot.prev_input.kick {
            let (Ok(ball), Ok(ball_mass)) =
                (world.world_center(self.ball), world.mass_data(self.ball))
            else {
                return;
            };
            let to_ball = ball - at;
            if to_ball.length_squared() <= KICK_REACH * KICK_REACH {
                let impulse = to_ball.normalize() * (KICK_SPEED * ball_mass.mass);
                let _ = world.apply_linear_impulse(self.ball, impulse, ball);
            }
        }
    }

    fn post_step(
        &self,
        world: &mut World,
        score: &mut Score,
        _: &mut [Slot<FootballPlayer, Kick>],
    ) {
        let Ok(ball) = world.world_center(self.ball) else {
            return;
        };
        // A ball is out once it has wholly crossed a line; across a goal
        // line between the posts, it is a goal.
        let over = |half: Scalar, v: Scalar| v.abs() > half + BALL_RADIUS;
        if over(PITCH_HALF_LENGTH, ball.x) && ball.y.abs() < GOAL_HALF_WIDTH {
            let team = if ball.x > Scalar::ZERO { 0 } else { 1 };
            score.goals[team] += 1;
            score.kick_off = 1 - team as u8;
        } else if over(PITCH_HALF_LENGTH, ball.x) || over(PITCH_HALF_WIDTH, ball.y) {
            score.kick_off = 1 - score.kick_off.min(1);
        } else {
            return;
        }
        // To the kick-off spot, at rest.
        let spot = Football::kick_off_spot(score.kick_off);
        let _ = world.set_transform(self.ball, spot, Rot::IDENTITY);
        let _ = world.set_linear_velocity(self.ball, Vec2::ZERO);
        let _ = world.set_angular_velocity(self.ball, Scalar::ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::{Game, InputSet};

    /// A player behind the ball runs at it and kicks it into the goal:
    /// the score counts it, the ball returns to the centre, and the score
    /// is part of the state hash.
    #[test]
    fn a_kick_into_the_goal_scores() {
        let mut game = Game::new(Football::new(), 2);
        game.step(&InputSet::join(2, 0));
        let before = game.snapshot();
        let run = Kick {
            move_x: 127,
            ..Kick::default()
        };
        let mut scored_at = None;
        for t in 0..600 {
            // Seat 0 starts at (-4, -3), the ball at (-2, 0): steer onto
            // the centre line, then run through the ball, kicking.
            let me = game.slots()[0].player.body.expect("joined");
            let at = game.world().world_center(me).expect("live");
            let steer = (-at.y * Scalar::from_int(100))
                .clamp(-Scalar::from_int(127), Scalar::from_int(127));
            let input = Kick {
                move_x: if at.y.abs() < Scalar::ratio(1, 10) {
                    run.move_x
                } else {
                    0
                },
                move_y: steer.floor_int() as i8,
                kick: t % 2 == 0,
            };
            game.step(&InputSet::with_inputs(vec![input, Kick::default()]));
            if game.state().goals[0] == 1 {
                scored_at = Some(game.tick());
                break;
            }
        }
        assert!(scored_at.is_some(), "no goal in 600 ticks");
        assert_eq!(game.state().goals, [1, 0]);
        assert_eq!(game.state().kick_off, 1, "the team that conceded kicks off");
        let ball = game
            .world()
            .world_center(game.rules().ball())
            .expect("ball");
        assert_eq!(ball, Football::kick_off_spot(1));
        // The score is state: a snapshot carries it, and it is hashed:
        // the same bytes with another score (the canonical form ends with
        // the two goal counts and the kick-off) give another hash.
        let after = game.snapshot();
        assert_eq!(after.state().goals, [1, 0]);
        let mut bytes = after.to_bytes();
        let n = bytes.len();
        bytes[n - 5..n - 1].copy_from_slice(&7u32.to_le_bytes());
        let other =
            bitroom_sim::game::GameSnapshot::<Football>::from_bytes(&bytes).expect("decodes");
        assert_eq!(other.state().goals, [1, 7]);
        assert_eq!(other.world().state_hash(), after.world().state_hash());
        assert_ne!(other.state_hash(), after.state_hash());
        let mut again = Game::from_snapshot(Football::new(), &before);
        again.restore(&after);
        assert_eq!(again.state_hash(), after.state_hash());
    }

    #[test]
    fn the_ball_is_the_same_body_in_every_build() {
        let a = Football::new();
        let b = Football::new();
        assert_eq!(a.ball(), b.ball());
        assert_eq!(a.build_world().state_hash(), b.build_world().state_hash());
    }
}
