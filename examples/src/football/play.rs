//! A football match through the real libraries: the server library hosts
//! [`Football`] on loopback QUIC, the client library's bot fleet plays it
//! (one QUIC client per bot, each predicting, rolling back and checking
//! every confirmed tick's hash against the server's), and a spectator
//! keeps the score.

use super::{Football, Role};
use bitroom_client::bots::{BotFleet, BotReport, BotSpec};
use bitroom_client::{connect, ConnectOptions};
use bitroom_server::tls::Identity;
use bitroom_server::{Server, ServerConfig};
use bitroom_transport::CertPin;
use std::error::Error;
use std::time::Duration;

/// The room the match is played in.
const ROOM: &str = "football";

/// How one bot fared.
#[derive(Clone, Debug)]
pub struct PlayerReport {
    /// Its name.
    pub name: String,
    /// Its seat (even: left team, odd: right team).
    pub slot: Option<u8>,
    /// Desyncs it saw (its state hash differed from the server's).
    pub desyncs: u64,
    /// Confirmed ticks whose hash it checked and found equal.
    pub verified: u64,
    /// Confirmed ticks since its first snapshot: the ticks it could check.
    pub checkable: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

impl PlayerReport {
    fn from_bot(b: &BotReport) -> PlayerReport {
        let session = b.stats.map(|s| s.session).unwrap_or_default();
        PlayerReport {
            name: b.name.clone(),
            slot: b.slot,
            desyncs: b.desyncs,
            verified: session.verified,
            checkable: b
                .synced_at
                .map_or(0, |s| session.confirmed.saturating_sub(s)),
            error: b.error.clone(),
        }
    }

    /// The share of its checkable ticks it verified, in percent (a float
    /// for reporting only).
    pub fn verified_percent(&self) -> f64 {
        100.0 * self.verified as f64 / self.checkable.max(1) as f64
    }
}

/// How a match went.
#[derive(Clone, Debug)]
pub struct MatchReport {
    /// The score the spectator saw at the end (left team, right team), in
    /// its confirmed game, whose every tick it checked.
    pub score: [u32; 2],
    /// Ticks the spectator verified.
    pub spectator_verified: u64,
    /// Desyncs the spectator saw.
    pub spectator_desyncs: u64,
    /// Every bot.
    pub players: Vec<PlayerReport>,
}

impl MatchReport {
    /// Desyncs over every client.
    pub fn desyncs(&self) -> u64 {
        self.spectator_desyncs + self.players.iter().map(|p| p.desyncs).sum::<u64>()
    }

    /// A table, one line per bot, then the score.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<10} {:>5} {:>7} {:>9} {:>9} {:>8}\n",
            "player", "team", "desyncs", "verified", "of ticks", "share"
        );
        for p in &self.players {
            let team = p.slot.map_or("-", |s| {
                if Football::team(s) == 0 {
                    "left"
                } else {
                    "right"
                }
            });
            out.push_str(&format!(
                "{:<10} {:>5} {:>7} {:>9} {:>9} {:>7.1}%{}\n",
                p.name,
                team,
                p.desyncs,
                p.verified,
                p.checkable,
                p.verified_percent(),
                p.error
                    .as_ref()
                    .map_or(String::new(), |e| format!("  error: {e}"))
            ));
        }
        out.push_str(&format!(
            "score {} : {} (seen by a spectator that verified {} ticks)\n",
            self.score[0], self.score[1], self.spectator_verified
        ));
        out
    }
}

/// Plays a match of `players` bots (two teams) for `duration` on a server
/// on loopback, then shuts everything down and reports. Needs a tokio
/// runtime.
///
/// # Errors
/// The server or the spectator could not start.
pub async fn play_match(
    players: u8,
    duration: Duration,
    seed: u64,
) -> Result<MatchReport, Box<dyn Error + Send + Sync>> {
    let rules = Football::new();
    // Host the game: the server library with our rules.
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse()?,
        rules.clone(),
        Identity::self_signed()?,
    );
    config.room.max_players = players.max(1);
    // Every bot must get in, even on a busy machine.
    config.shed_lateness = None;
    let server = Server::bind(config)?;
    let addr = server.local_addr();
    let pin = CertPin::Sha256(server.fingerprint());
    let stop = server.shutdown_handle();
    let serving = tokio::spawn(server.run());

    // A spectator, to read the score from a checked, confirmed game.
    let mut watch = ConnectOptions::new(rules.clone(), pin);
    watch.spectator = true;
    watch.name = "spectator".into();
    let spectator = connect(addr, ROOM, watch).await?;

    // The players: the client library's bot fleet, making our bots.
    let mut fleet = BotFleet::new(addr, rules, pin);
    for i in 0..players {
        fleet.spawn(BotSpec {
            name: format!("striker{i}"),
            room: ROOM.into(),
            // A forward and a keeper a side (by seat), then more forwards.
            strategy: Role::BySeat,
            seed: seed.wrapping_add(u64::from(i)),
            predict: true,
            conditioner: None,
            load: false,
            token: None,
        });
    }
    tokio::time::sleep(duration).await;

    let score = spectator.with_confirmed(|s| s.map(|s| s.state().goals).unwrap_or_default());
    let watched = spectator.stats().session;
    let bots = fleet.finish().await;
    spectator.leave(Duration::from_secs(1)).await;
    stop.shutdown();
    serving.await?;
    Ok(MatchReport {
        score,
        spectator_verified: watched.verified,
        spectator_desyncs: watched.desyncs,
        players: bots.bots.iter().map(PlayerReport::from_bot).collect(),
    })
}
