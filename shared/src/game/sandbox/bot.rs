//! The sandbox's bots: deterministic input generators for load tests,
//! soak tests, sync tests and the demo. Seeded; no clocks, no OS
//! randomness.

use super::{PlayerInput, Sandbox};
use crate::game::bots::{Bot, BotRules};
use crate::game::{Game, AVATAR_TAG};
use crate::math::{atan2, Scalar};
use std::fmt;
use std::str::FromStr;

/// How a bot plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Sends neutral input.
    Idle,
    /// Holds random inputs for random spans, jumps, grabs and throws.
    Random,
    /// Runs back and forth, aiming around in a circle.
    Circle,
    /// Runs at the nearest other player and jumps when it is above.
    Chaser,
}

impl Strategy {
    /// Every strategy name.
    pub const NAMES: [&'static str; 4] = ["idle", "random", "circle", "chaser"];
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Strategy, String> {
        Ok(match s {
            "idle" => Strategy::Idle,
            "random" => Strategy::Random,
            "circle" => Strategy::Circle,
            "chaser" => Strategy::Chaser,
            _ => {
                return Err(format!(
                    "unknown strategy {s:?} (expected one of {})",
                    Strategy::NAMES.join(", ")
                ))
            }
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = *self as usize;
        f.write_str(Strategy::NAMES[i])
    }
}

/// The sandbox's bot brain: one of the [`Strategy`]s, seeded.
#[derive(Clone, Debug)]
pub struct SandboxBot {
    strategy: Strategy,
    rng: u64,
    hold: u32,
    current: PlayerInput,
    ticks: u64,
}

impl SandboxBot {
    /// A bot with a seed (0 is replaced by a fixed non-zero seed).
    pub fn new(strategy: Strategy, seed: u64) -> SandboxBot {
        SandboxBot {
            strategy,
            rng: splitmix(seed),
            hold: 0,
            current: PlayerInput::default(),
            ticks: 0,
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The input for the next tick, given the game as this bot sees it.
    fn input(&mut self, game: &Game<Sandbox>, slot: u8) -> PlayerInput {
        self.ticks += 1;
        match self.strategy {
            Strategy::Idle => PlayerInput::default(),
            Strategy::Random => {
                if self.hold == 0 {
                    let r = self.next();
                    self.hold = 5 + (r % 40) as u32;
                    let mut buttons = 0;
                    if (r >> 8).is_multiple_of(5) {
                        buttons |= PlayerInput::JUMP;
                    }
                    if (r >> 16).is_multiple_of(3) {
                        buttons |= PlayerInput::GRAB;
                    }
                    if (r >> 20).is_multiple_of(7) {
                        buttons |= PlayerInput::THROW;
                    }
                    self.current = PlayerInput {
                        buttons,
                        move_x: (((r >> 24) % 255) as i32 - 127) as i8,
                        move_y: 0,
                        aim: (r >> 40) as u16,
                    };
                }
                self.hold -= 1;
                self.current
            }
            Strategy::Circle => {
                let phase = self.ticks % 240;
                let move_x = if phase < 120 { 100 } else { -100 };
                PlayerInput {
                    buttons: if self.ticks.is_multiple_of(90) {
                        PlayerInput::JUMP
                    } else {
                        0
                    },
                    move_x,
                    move_y: 0,
                    aim: (self.ticks.wrapping_mul(546) & 0xffff) as u16,
                }
            }
            Strategy::Chaser => chase(game, slot, self.ticks),
        }
    }
}

/// splitmix64, never 0 (a seed for xorshift).
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let z = z ^ (z >> 31);
    if z == 0 {
        0x2545_F491_4F6C_DD1D
    } else {
        z
    }
}

fn chase(game: &Game<Sandbox>, slot: u8, ticks: u64) -> PlayerInput {
    let world = game.world();
    let me = game
        .slots()
        .get(usize::from(slot))
        .and_then(|s| s.player.avatar)
        .and_then(|b| world.world_center(b).ok());
    let Some(me) = me else {
        return PlayerInput::default();
    };
    let mut best: Option<(Scalar, crate::math::Vec2)> = None;
    for (i, s) in game.slots().iter().enumerate() {
        if i == usize::from(slot) || !s.active {
            continue;
        }
        let Some(c) = s.player.avatar.and_then(|b| world.world_center(b).ok()) else {
            continue;
        };
        let tag_ok = s
            .player
            .avatar
            .and_then(|b| world.user_data(b).ok())
            .is_some_and(|u| u & AVATAR_TAG == AVATAR_TAG);
        if !tag_ok {
            continue;
        }
        let d = (c - me).length_squared();
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let Some((_, target)) = best else {
        return PlayerInput::default();
    };
    let d = target - me;
    let move_x = if d.x > Scalar::ONE {
        127
    } else if d.x < -Scalar::ONE {
        -127
    } else {
        0
    };
    let jump = d.y > Scalar::ONE && ticks.is_multiple_of(20);
    // Aim at the target: angle in turns × 65536.
    let turns = atan2(d.y, d.x) / Scalar::TAU;
    let aim = (turns.to_bits() >> 16) as u16;
    PlayerInput {
        buttons: if jump { PlayerInput::JUMP } else { 0 },
        move_x,
        move_y: 0,
        aim,
    }
}

impl Bot<Sandbox> for SandboxBot {
    fn next_input(&mut self, game: &Game<Sandbox>, slot: u8) -> PlayerInput {
        self.input(game, slot)
    }
}

impl BotRules for Sandbox {
    type Strategy = Strategy;
    type Bot = SandboxBot;

    fn bot(&self, strategy: &Strategy, seed: u64) -> SandboxBot {
        SandboxBot::new(*strategy, seed)
    }

    /// Random buttons, move axis and aim.
    fn random_input(&self, bits: u64) -> PlayerInput {
        PlayerInput {
            buttons: (bits >> 8) as u8 & 0b111,
            move_x: (((bits >> 16) % 255) as i32 - 127) as i8,
            move_y: 0,
            aim: (bits >> 32) as u16,
        }
    }
}
