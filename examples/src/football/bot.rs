//! The football bot ([`Striker`]), in one of two [`Role`]s. A forward
//! gets behind the ball, on the line from the goal it attacks through the
//! ball, then walks up to it and kicks it goalwards; a keeper stands
//! between the ball and its own goal and clears the ball when it comes
//! close. Both keep off the ball during the other team's kick-off.
//! Fixed-point like the game; its only randomness is its seed.

use super::rules::KICK_REACH;
use super::{Football, Kick, PITCH_HALF_LENGTH, PITCH_HALF_WIDTH};
use bitroom_sim::game::bots::{Bot, BotRules};
use bitroom_sim::game::Game;
use bitroom_sim::{Scalar, Vec2};

/// How far behind the ball a forward lines up (m).
const BEHIND: Scalar = Scalar::ratio(7, 5);
/// Within this distance of the ball a forward slows down (m) …
const APPROACH: Scalar = Scalar::from_int(2);
/// … to this share of its top speed.
const SLOW: Scalar = Scalar::ratio(2, 5);
/// How far to the side it goes round a ball it is not behind (m).
const ROUND: Scalar = Scalar::ratio(3, 2);
/// Lined up: the ball is within about 11° of the aim.
const LINED_UP: Scalar = Scalar::ratio(49, 50);
/// Not behind the ball: it is more than about 72° off the aim.
const AROUND: Scalar = Scalar::ratio(3, 10);
/// Kick when the ball would go within about 18° of the aim.
const KICK_FORWARD: Scalar = Scalar::ratio(19, 20);
/// How far inside the lines a forward keeps its spots (m).
const EDGE: Scalar = Scalar::ratio(3, 4);

/// Where a keeper stands: this far in front of its goal, toward the
/// ball (m).
const GUARD: Scalar = Scalar::ONE;
/// Ticks between a forward's changes of approach.
const RETHINK: u32 = 60;
/// A ball this close to its kick-off spot is still waiting there (m).
const STILL: Scalar = Scalar::ratio(1, 10);
/// Where the other team waits for a kick-off: this share of the way to
/// its goal, and this far off the centre line (m).
const WAIT_BACK: Scalar = Scalar::HALF;
const WAIT_WIDE: Scalar = Scalar::from_int(4);
/// A forward shoots this far from the goal's centre, inside a post (m) …
const AIM: Scalar = Scalar::from_int(3);
/// … at a point this far behind the goal line (m).
const AIM_DEPTH: Scalar = Scalar::from_int(2);

/// What a bot does on the pitch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// Goes for the ball and shoots.
    Forward,
    /// Guards its goal and clears the ball.
    Keeper,
    /// By its seat, known once it has joined: a forward in seats 0 and 1,
    /// a keeper in seats 2 and 3, a forward after that (so four bots make
    /// a forward and a keeper a side, whatever order they join in).
    #[default]
    BySeat,
}

impl Role {
    /// The role played in `slot`.
    fn in_seat(self, slot: u8) -> Role {
        match self {
            Role::BySeat if (2..4).contains(&slot) => Role::Keeper,
            Role::BySeat => Role::Forward,
            r => r,
        }
    }
}

/// A football bot (see the module docs).
#[derive(Clone, Debug)]
pub struct Striker {
    role: Role,
    /// xorshift64 state, from the seed.
    rng: u64,
    /// Its slant on the line behind the ball (−0.5 … 0.5 m): where it
    /// lines up, changed every [`RETHINK`] ticks, so that forwards of a
    /// team do not stand on each other.
    slant: Scalar,
    /// Where it shoots: this far from the goal's centre, along the line.
    aim: Scalar,
    ticks: u32,
    /// The kick button was down last tick (a kick needs a fresh press).
    kicked: bool,
}

impl Striker {
    /// A bot in `role`, its choices drawn from `seed`.
    pub fn new(role: Role, seed: u64) -> Striker {
        // splitmix64's finaliser: a well-spread, non-zero state from any seed.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Striker {
            role,
            rng: (z ^ (z >> 31)) | 1,
            slant: Scalar::ZERO,
            aim: Scalar::ZERO,
            ticks: 0,
            kicked: false,
        }
    }

    /// The next value of its generator.
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

/// An axis value −1 … 1 as a move axis −127 … 127.
fn axis(v: Scalar) -> i8 {
    (v * Scalar::from_int(127))
        .clamp(-Scalar::from_int(127), Scalar::from_int(127))
        .floor_int() as i8
}

impl Bot<Football> for Striker {
    fn next_input(&mut self, game: &Game<Football>, slot: u8) -> Kick {
        let world = game.world();
        let me = game
            .slots()
            .get(usize::from(slot))
            .and_then(|s| s.player.body)
            .and_then(|b| world.world_center(b).ok());
        let ball = world.world_center(game.rules().ball()).ok();
        let (Some(me), Some(ball)) = (me, ball) else {
            self.kicked = false;
            return Kick::default();
        };
        if self.ticks.is_multiple_of(RETHINK) {
            self.slant = Scalar::ratio((self.next() % 1001) as i64 - 500, 1000);
            // Aim inside one post or the other, past the keeper.
            self.aim = if self.next().is_multiple_of(2) {
                AIM
            } else {
                -AIM
            };
        }
        self.ticks = self.ticks.wrapping_add(1);
        let team = Football::team(slot);
        // Aim at a point behind the goal line, so that a ball on the line
        // still gets pushed in.
        let goal = Football::goal_to_attack(team);
        let aim = goal + Vec2::new(goal.x.signum() * AIM_DEPTH, self.aim);
        let to_goal = (aim - ball).normalize();
        let own_goal = Football::goal_to_attack(1 - team);
        let (reach, to_ball) = (ball - me).length_and_normalize();
        let facing = to_ball.dot(to_goal);
        let on_pitch = |v: Vec2| {
            let (x, y) = (PITCH_HALF_LENGTH - EDGE, PITCH_HALF_WIDTH - EDGE);
            Vec2::new(v.x.clamp(-x, x), v.y.clamp(-y, y))
        };
        // The other team's kick-off: keep off the ball (and out of the
        // shot) until it is taken, as the laws of the game ask.
        let kick_off = game.state().kick_off;
        let waiting = usize::from(kick_off) != team
            && (ball - Football::kick_off_spot(kick_off)).length_squared() < STILL * STILL;
        let role = self.role.in_seat(slot);
        let target = if waiting {
            Vec2::new(
                own_goal.x * WAIT_BACK,
                // On its own side of the centre line: no crossing the shot.
                if me.y >= Scalar::ZERO {
                    WAIT_WIDE
                } else {
                    -WAIT_WIDE
                },
            )
        } else if role == Role::Keeper {
            // Between the ball and our goal.
            own_goal + (ball - own_goal).normalize() * GUARD
        } else if facing >= LINED_UP {
            // Lined up: walk up to the ball and kick it before touching it.
            ball
        } else if facing < AROUND {
            // On the wrong side of the ball: go round it.
            let side = if to_goal.cross(me - ball) >= Scalar::ZERO {
                to_goal.left_perp()
            } else {
                to_goal.right_perp()
            };
            on_pitch(ball - to_goal * BEHIND + side * ROUND)
        } else {
            // Behind the ball, on the line from the goal through it (with
            // this bot's slant).
            on_pitch(ball - to_goal * BEHIND + to_goal.left_perp() * self.slant)
        };
        let (distance, dir) = (target - me).length_and_normalize();
        // Full speed until close, then slow down onto the spot (and up to
        // the ball, so that the kick comes before the bump).
        let speed =
            distance
                .min(Scalar::ONE)
                .min(if reach < APPROACH { SLOW } else { Scalar::ONE });
        // Kick whenever the ball is in reach and would go forward.
        let kick = reach <= KICK_REACH && facing >= KICK_FORWARD && !self.kicked;
        self.kicked = kick;
        Kick {
            move_x: axis(dir.x * speed),
            move_y: axis(dir.y * speed),
            kick,
        }
    }
}

impl BotRules for Football {
    type Strategy = Role;
    type Bot = Striker;

    fn bot(&self, role: &Role, seed: u64) -> Striker {
        Striker::new(*role, seed)
    }

    /// A random run direction, kicking now and then (load clients).
    fn random_input(&self, bits: u64) -> Kick {
        Kick {
            move_x: bits as i8,
            move_y: (bits >> 8) as i8,
            kick: (bits >> 16).is_multiple_of(4),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_sim::game::bots::LocalBots;

    /// Two a side (a forward and a keeper each) on a local game score
    /// within ten seconds of play.
    #[test]
    fn strikers_score() {
        let rules = Football::new();
        let roles = [Role::Forward, Role::Forward, Role::Keeper, Role::Keeper];
        let mut bots = LocalBots::cycling(&rules, 4, &roles, 1);
        let mut game = Game::new(rules, 4);
        for _ in 0..600 {
            let set = bots.inputs(&game);
            game.step(&set);
        }
        let goals = game.state().goals;
        assert!(goals[0] + goals[1] > 0, "no goal in 10 s");
    }
}
