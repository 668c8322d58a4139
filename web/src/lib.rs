//! bitroom-web: the browser client's core, compiled to
//! `wasm32-unknown-unknown` (`web/build.sh`) for the page in `web/page/`.
//!
//! The same [`ClientSession`] the native clients run — prediction,
//! rollback, a hash check at every confirmed tick, clock sync — on the
//! same `bitroom-sim`, so the browser computes the bits the server
//! computes. The session is sans-IO, and so is this crate: the page's
//! JavaScript owns the clock (`performance.now()`), the timers, the
//! transport (WebTransport or WebSocket), the input events and the canvas,
//! and calls in here:
//!
//! | the page | calls |
//! |---|---|
//! | bytes arrived | [`WebClient::handle_reliable`], [`WebClient::handle_datagram`] |
//! | a timer fired | [`WebClient::handle_timeout`], then re-arms at [`WebClient::next_timeout_ms`] |
//! | after each of those | [`WebClient::poll_transmit`] until `None`, [`WebClient::poll_event`] until `None` |
//! | keys, pointer, touch changed | [`WebClient::set_input`] |
//! | a display frame | [`WebClient::frame`] (a draw list, see [`view`]) |
//! | the overlay | [`WebClient::stats`] |
//!
//! No game logic lives in JavaScript: it turns key and pointer state into a
//! move axis, buttons and an aim direction, and draws what [`view`] lists.
//!
//! # Layout
//! - this file: [`WebClient`], the object the page holds;
//! - [`scene`]: the rules for the server's scene;
//! - [`view`]: interpolation between ticks and the draw list.

pub mod scene;
pub mod view;

use bitroom_protocol::{
    ClientConfig, ClientEvent, ClientSession, ClientTransmit, KickReason, Micros,
};
use bitroom_sim::game::sandbox::{PlayerInput, Sandbox};
use bitroom_sim::BodyId;
use std::collections::VecDeque;
use view::{DrawList, Interpolator};
use wasm_bindgen::prelude::*;

/// First byte of what [`WebClient::poll_transmit`] returns: a message for
/// the reliable stream.
pub const TAG_RELIABLE: u8 = 0;
/// First byte of what [`WebClient::poll_transmit`] returns: a datagram.
pub const TAG_DATAGRAM: u8 = 1;

/// The page's clock (ms since the page loaded, `performance.now()`) as the
/// session's microseconds. A float at the edge: the session only compares
/// and subtracts these, it never steps the world with them.
fn micros(now_ms: f64) -> Micros {
    if now_ms.is_finite() && now_ms > 0.0 {
        (now_ms * 1000.0) as Micros
    } else {
        0
    }
}

/// The browser's client: a session in a room, plus what drawing it needs.
#[wasm_bindgen]
#[derive(Debug)]
pub struct WebClient {
    session: ClientSession<Sandbox>,
    interp: Interpolator,
    draw: DrawList,
    input: PlayerInput,
    period_ms: f64,
    /// The tick of the first snapshot (ticks before it are not ours to check).
    synced_tick: Option<u64>,
    last_rollback: u64,
    events: VecDeque<String>,
    kicked: Option<KickReason>,
}

/// The session's figures for the page's overlay and its tests
/// (`window.bitroom.stats()` adds the transport's name). Counts are `f64`
/// for JavaScript; every one is exact below 2⁵³.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WebStats {
    /// Our seat, or −1 for a spectator (or before the welcome).
    pub slot: i32,
    /// The present (predicted) tick.
    pub tick: f64,
    /// The newest tick confirmed by the server.
    pub confirmed: f64,
    /// The tick of the first snapshot applied (−1 before it).
    pub synced_tick: f64,
    /// Confirmed ticks since that snapshot: the ticks there were to check.
    pub confirmed_ticks: f64,
    /// Confirmed ticks whose state hash matched the server's.
    pub verified_ticks: f64,
    /// Hash mismatches.
    pub desyncs: f64,
    /// Rollbacks (mispredictions re-simulated).
    pub rollbacks: f64,
    /// Deepest rollback (ticks).
    pub max_rollback: f64,
    /// The latest rollback's depth (ticks).
    pub last_rollback: f64,
    /// Ticks re-simulated in all.
    pub resimulated: f64,
    /// Smoothed round trip (ms).
    pub rtt_ms: f64,
    /// Payload bytes received.
    pub bytes_in: f64,
    /// Payload bytes sent.
    pub bytes_out: f64,
    /// Snapshots applied (the join, and resyncs).
    pub snapshots: f64,
    /// Whether the session is in the room and in sync.
    pub playing: bool,
}

#[wasm_bindgen]
impl WebClient {
    /// Starts a session (the hello is queued at once: poll the transmits).
    ///
    /// `scene` is the server's scene spec and `scene_json` the scene file's
    /// text when the spec is a file (both from `/api/info`); `token` is a
    /// connect token (its text form) for servers that require one.
    ///
    /// # Errors
    /// The scene cannot be built (see [`scene::rules_for`]).
    #[wasm_bindgen(constructor)]
    pub fn new(
        scene: &str,
        scene_json: Option<String>,
        room: &str,
        name: &str,
        spectator: bool,
        token: Option<String>,
        now_ms: f64,
    ) -> Result<WebClient, String> {
        let rules = scene::rules_for(scene, scene_json.as_deref())?;
        let token = match token {
            Some(text) => Some(
                bitroom_protocol::token::decode_text(&text)
                    .map_err(|e| format!("the connect token: {e}"))?,
            ),
            None => None,
        };
        Ok(WebClient::with_rules(
            rules, room, name, spectator, token, now_ms,
        ))
    }

    /// Bytes of one message from the reliable stream (unframed).
    pub fn handle_reliable(&mut self, now_ms: f64, bytes: &[u8]) {
        self.session.handle_reliable(micros(now_ms), bytes);
        self.after(now_ms);
    }

    /// One datagram.
    pub fn handle_datagram(&mut self, now_ms: f64, bytes: &[u8]) {
        self.session.handle_datagram(micros(now_ms), bytes);
        self.after(now_ms);
    }

    /// Runs what is due: ticks (inputs, prediction) and pings.
    pub fn handle_timeout(&mut self, now_ms: f64) {
        self.session.set_input(self.input);
        self.session.handle_timeout(micros(now_ms));
        self.after(now_ms);
    }

    /// When to call [`WebClient::handle_timeout`] next (ms on the page's
    /// clock), or −1 once the session has closed.
    pub fn next_timeout_ms(&self) -> f64 {
        self.session
            .poll_timeout()
            .map_or(-1.0, |t| t as f64 / 1000.0)
    }

    /// The next bytes to send: [`TAG_RELIABLE`] or [`TAG_DATAGRAM`], then
    /// the message (unframed). A WebSocket sends them as they are; the
    /// WebTransport path frames reliable messages on its stream.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        let (tag, bytes) = match self.session.poll_transmit()? {
            ClientTransmit::Reliable(b) => (TAG_RELIABLE, b),
            ClientTransmit::Datagram(b) => (TAG_DATAGRAM, b),
        };
        let mut out = Vec::with_capacity(bytes.len() + 1);
        out.push(tag);
        out.extend_from_slice(&bytes);
        Some(out)
    }

    /// The next event for the page, as JSON: `welcomed` (`slot`, `slots`,
    /// `tick_rate`), `synced` (`tick`), `desync` (`tick`, `ours`, `server`)
    /// or `kicked` (`reason`, the server's words).
    pub fn poll_event(&mut self) -> Option<String> {
        self.events.pop_front()
    }

    /// Why the server closed the session, once it has.
    pub fn kick_reason(&self) -> Option<String> {
        self.kicked.as_ref().map(ToString::to_string)
    }

    /// The player's controls from now on: `move_x` in −1 … 1, the buttons,
    /// and the aim as a direction (from the avatar toward the pointer).
    /// Quantised here, before anything reaches the simulation.
    pub fn set_input(
        &mut self,
        move_x: f64,
        jump: bool,
        grab: bool,
        throw: bool,
        aim_x: f64,
        aim_y: f64,
    ) {
        let mut buttons = 0;
        for (on, bit) in [
            (jump, PlayerInput::JUMP),
            (grab, PlayerInput::GRAB),
            (throw, PlayerInput::THROW),
        ] {
            if on {
                buttons |= bit;
            }
        }
        let turn = if aim_x == 0.0 && aim_y == 0.0 {
            0.0
        } else {
            aim_y.atan2(aim_x) / std::f64::consts::TAU
        };
        self.input = PlayerInput {
            buttons,
            move_x: (move_x.clamp(-1.0, 1.0) * 127.0).round() as i8,
            move_y: 0,
            aim: (turn.rem_euclid(1.0) * 65536.0).round() as u32 as u16,
        };
        self.session.set_input(self.input);
    }

    /// Leaves the room for good (the seat is freed at once).
    pub fn leave(&mut self) {
        self.session.leave();
    }

    /// The draw list of the predicted world at `now_ms`, interpolated
    /// between the last two ticks (see [`view`]); empty before the first
    /// snapshot.
    pub fn frame(&mut self, now_ms: f64) -> Vec<f32> {
        let Some(game) = self.session.game() else {
            return Vec::new();
        };
        let held: Vec<BodyId> = game.slots().iter().filter_map(|s| s.player.held).collect();
        let t = self.interp.alpha(now_ms, self.period_ms);
        self.draw.build(game.world(), &self.interp, t, &held);
        self.draw.data.clone()
    }

    /// The world's extent at the last frame: `[min x, min y, max x, max y]`
    /// (metres).
    pub fn bounds(&self) -> Vec<f32> {
        self.draw.bounds.to_vec()
    }

    /// Bodies in the present world.
    pub fn body_count(&self) -> u32 {
        self.session
            .game()
            .map_or(0, |g| g.world().body_count() as u32)
    }

    /// The figures of the overlay.
    pub fn stats(&self) -> WebStats {
        let s = self.session.stats();
        let synced = self.synced_tick;
        WebStats {
            slot: self.session.slot().map_or(-1, i32::from),
            tick: s.tick as f64,
            confirmed: s.confirmed as f64,
            synced_tick: synced.map_or(-1.0, |t| t as f64),
            confirmed_ticks: synced.map_or(0.0, |t| s.confirmed.saturating_sub(t) as f64),
            verified_ticks: s.verified as f64,
            desyncs: s.desyncs as f64,
            rollbacks: s.rollbacks as f64,
            max_rollback: s.max_rollback as f64,
            last_rollback: self.last_rollback as f64,
            resimulated: s.resimulated as f64,
            rtt_ms: s.rtt as f64 / 1000.0,
            bytes_in: s.bytes_in as f64,
            bytes_out: s.bytes_out as f64,
            snapshots: s.snapshots as f64,
            playing: self.session.is_playing(),
        }
    }
}

impl WebClient {
    /// A session of any sandbox rules (the constructor builds them from
    /// the scene).
    pub fn with_rules(
        rules: Sandbox,
        room: &str,
        name: &str,
        spectator: bool,
        token: Option<Vec<u8>>,
        now_ms: f64,
    ) -> WebClient {
        let session = ClientSession::new(
            rules,
            ClientConfig {
                room: room.into(),
                name: name.into(),
                spectator,
                token,
                ..ClientConfig::default()
            },
            micros(now_ms),
        );
        WebClient {
            session,
            interp: Interpolator::default(),
            draw: DrawList::default(),
            input: PlayerInput::default(),
            period_ms: 1000.0 / 60.0,
            synced_tick: None,
            last_rollback: 0,
            events: VecDeque::new(),
            kicked: None,
        }
    }

    /// The session (for tests and tools).
    pub fn session(&self) -> &ClientSession<Sandbox> {
        &self.session
    }

    /// Drains the session's events after a call: page events, and
    /// whether the present was rewritten (for the interpolation).
    fn after(&mut self, now_ms: f64) {
        let mut rewritten = false;
        while let Some(e) = self.session.poll_event() {
            let json = match e {
                ClientEvent::Welcomed { slot, .. } => {
                    let w = self.session.welcome();
                    if let Some(w) = w {
                        self.period_ms = 1000.0 / f64::from(w.tick_rate.max(1));
                    }
                    serde_json::json!({
                        "type": "welcomed",
                        "slot": slot,
                        "slots": w.map(|w| w.slots),
                        "tick_rate": w.map(|w| w.tick_rate),
                    })
                }
                ClientEvent::Synced { tick } => {
                    rewritten = true;
                    self.synced_tick.get_or_insert(tick);
                    serde_json::json!({"type": "synced", "tick": tick})
                }
                ClientEvent::Rollback { depth } => {
                    rewritten = true;
                    self.last_rollback = depth;
                    continue;
                }
                ClientEvent::Desync { tick, ours, server } => serde_json::json!({
                    "type": "desync",
                    "tick": tick,
                    "ours": format!("{ours:016x}"),
                    "server": format!("{server:016x}"),
                }),
                ClientEvent::Kicked(reason) => {
                    let text = reason.to_string();
                    self.kicked = Some(reason);
                    serde_json::json!({"type": "kicked", "reason": text})
                }
            };
            self.events.push_back(json.to_string());
        }
        if let Some(game) = self.session.game() {
            self.interp
                .observe(game.world(), game.tick(), now_ms, rewritten);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitroom_protocol::{Output, RoomConfig, ServerRoom};
    use bitroom_sim::game::sandbox::SandboxConfig;

    /// Moves bytes between a room and web clients as a transport would,
    /// through the tagged transmits the page sends.
    fn pump(room: &mut ServerRoom<Sandbox>, clients: &mut [WebClient], now_ms: f64) {
        let now = micros(now_ms);
        for (conn, c) in clients.iter_mut().enumerate() {
            while let Some(t) = c.poll_transmit() {
                match t[0] {
                    TAG_RELIABLE => room.handle_reliable(now, conn as u64, &t[1..]),
                    TAG_DATAGRAM => room.handle_datagram(now, conn as u64, &t[1..]),
                    tag => panic!("tag {tag}"),
                }
            }
        }
        while let Some(out) = room.poll_output() {
            match out {
                Output::Reliable { conn, bytes } => {
                    clients[conn as usize].handle_reliable(now_ms, &bytes)
                }
                Output::Datagram { conn, bytes } => {
                    clients[conn as usize].handle_datagram(now_ms, &bytes)
                }
                Output::Snapshot { conn, job } => {
                    for m in job.messages() {
                        clients[conn as usize].handle_reliable(now_ms, m);
                    }
                }
                Output::Close { conn, reason } => {
                    clients[conn as usize].handle_reliable(
                        now_ms,
                        &bitroom_protocol::encode_server_reliable(
                            &bitroom_protocol::ServerReliable::Kick(reason),
                        ),
                    );
                }
            }
        }
    }

    #[test]
    fn a_player_and_a_spectator_verify_every_tick_against_a_room() {
        let rules = Sandbox::new(SandboxConfig { loose_bodies: 30 });
        let mut room = ServerRoom::new(rules.clone(), RoomConfig::default(), 0);
        let mut clients = vec![
            WebClient::with_rules(rules.clone(), "r", "web", false, None, 0.0),
            WebClient::with_rules(rules, "r", "watcher", true, None, 0.0),
        ];
        room.handle_connect(0, 0);
        room.handle_connect(0, 1);
        let mut now_ms = 0.0;
        let mut events = Vec::new();
        for i in 0..300 {
            pump(&mut room, &mut clients, now_ms);
            now_ms += 1000.0 / 60.0;
            room.tick(micros(now_ms));
            for c in &mut clients {
                // Run right, jump now and then, aim up-right.
                c.set_input(1.0, i % 40 == 0, false, false, 1.0, 1.0);
                c.handle_timeout(now_ms);
                while let Some(e) = c.poll_event() {
                    events.push(e);
                }
            }
        }
        assert!(
            events.iter().any(|e| e.contains("\"welcomed\"")),
            "{events:?}"
        );
        assert!(
            events.iter().any(|e| e.contains("\"synced\"")),
            "{events:?}"
        );
        for c in &mut clients {
            let s = c.stats();
            assert_eq!(s.desyncs, 0.0);
            assert!(s.playing);
            assert!(s.confirmed_ticks > 250.0, "{s:?}");
            assert!(s.verified_ticks >= s.confirmed_ticks - 1.0, "{s:?}");
            let list = c.frame(now_ms);
            assert!(!list.is_empty());
        }
        assert_eq!(clients[0].stats().slot, 0);
        assert_eq!(clients[1].stats().slot, -1);
        assert_eq!(clients[0].input.move_x, 127);
        assert_eq!(clients[0].input.aim, 8192, "45° is an eighth of a turn");
    }

    #[test]
    fn a_refused_join_reaches_the_page_with_the_servers_words() {
        let mut c = WebClient::new("arena", None, "r", "web", false, None, 0.0).unwrap();
        while c.poll_transmit().is_some() {}
        let kick = bitroom_protocol::encode_server_reliable(
            &bitroom_protocol::ServerReliable::Kick(KickReason::RoomFull),
        );
        c.handle_reliable(1.0, &kick);
        let e = c.poll_event().unwrap();
        assert!(e.contains("kicked") && e.contains("room is full"), "{e}");
        assert_eq!(c.kick_reason().as_deref(), Some("room is full"));
        assert_eq!(c.next_timeout_ms(), -1.0);
    }

    #[test]
    fn bad_scenes_are_errors_not_panics() {
        assert!(WebClient::new("arena:-3", None, "r", "n", false, None, 0.0).is_err());
        assert!(WebClient::new("nope.json", None, "r", "n", false, None, 0.0).is_err());
        assert!(WebClient::new("x.json", Some("[]".into()), "r", "n", false, None, 0.0).is_err());
        // A token that is not a token's text is refused before any hello.
        let bad = WebClient::new(
            "arena",
            None,
            "r",
            "n",
            false,
            Some("not a token".into()),
            0.0,
        );
        assert!(bad.is_err_and(|e| e.contains("connect token")));
    }
}
