//! Two-team physics football: a complete small game on bitroom.
//!
//! A flat pitch seen from above (no gravity) with two goals and a ball.
//! Even seats play for the left team, odd seats for the right; each player
//! is a disc that runs where its input points and kicks the ball when it
//! is close. A ball that wholly crosses a goal line between the posts
//! scores; a ball that crosses any line goes back to the centre spot. The score lives in the rules' state,
//! so it is part of every snapshot and of every state hash the clients
//! check.
//!
//! What a game brings to bitroom, each in its own file:
//! - `input.rs`: [`Kick`], its own input type (3 bytes);
//! - `rules.rs`: [`Football`], the [`Rules`](bitroom_sim::game::Rules):
//!   the pitch, joining and leaving, running and kicking, scoring;
//! - `bot.rs`: [`Striker`], its bot brain, and the
//!   [`BotRules`](bitroom_sim::game::bots::BotRules) that makes it;
//! - `play.rs`: [`play_match`], a match hosted by the server library and
//!   played by bots through the client library on loopback QUIC.

mod bot;
mod input;
mod play;
mod rules;

pub use bot::{Role, Striker};
pub use input::Kick;
pub use play::{play_match, MatchReport, PlayerReport};
pub use rules::{
    Football, FootballPlayer, Score, BALL_RADIUS, GOAL_HALF_WIDTH, PITCH_HALF_LENGTH,
    PITCH_HALF_WIDTH,
};
