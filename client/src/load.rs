//! Load-generating clients: the wire traffic of a player without its
//! simulation.
//!
//! A real bot steps the game (the confirmed one at least) to check every
//! tick's hash — about as much CPU per bot as the server spends per room.
//! To load a server with hundreds of players from one small machine, a
//! load client only speaks the protocol: it says hello, drains the
//! snapshot, sends an input batch every tick (a little ahead of the
//! server's newest frame, the last few redundantly), acknowledges frames
//! so the server does not resend, and pings. It checks nothing; use real
//! bots for correctness.

use crate::driver::disconnect_reason;
use crate::{ConnectError, Disconnect, HandleStats};
use bitroom_protocol::{
    decode_server_datagram, decode_server_reliable, encode_client_datagram, encode_client_reliable,
    widen_tick16, ClientDatagram, ClientReliable, ClientStats, FrameAck, Hello, InputBatch,
    InputRun, ServerDatagram, ServerReliable, StreamFramer, PROTOCOL_VERSION,
};
use bitroom_sim::game::Input;
use bitroom_transport::{client_config, CertPin, SERVER_NAME};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Inputs repeated in each batch.
const REDUNDANCY: usize = 4;
/// How far ahead of the newest frame inputs are sent (ticks), beyond the
/// round trip.
const LEAD_TICKS: u64 = 3;

/// What a load client saw, published as it runs.
#[derive(Debug, Clone)]
pub struct LoadStats {
    /// Slot from the welcome.
    pub slot: Option<u8>,
    /// Counters in the shape real bots report (no rollbacks, no hash
    /// checks).
    pub stats: HandleStats,
    /// Why it ended, once it has.
    pub end: Option<Disconnect>,
}

/// Frames received, as the server wants them acknowledged.
#[derive(Debug)]
struct Acks {
    through: u64,
    held: BTreeSet<u64>,
}

impl Acks {
    fn add(&mut self, tick: u64) {
        if tick <= self.through || tick > self.through + 4096 {
            return;
        }
        self.held.insert(tick);
        while self.held.remove(&(self.through + 1)) {
            self.through += 1;
        }
        // Give up on gaps the server will not fill (it resyncs instead).
        while self.held.len() > 256 {
            if let Some(first) = self.held.pop_first() {
                self.through = first;
            }
            while self.held.remove(&(self.through + 1)) {
                self.through += 1;
            }
        }
    }

    fn ack(&self) -> FrameAck {
        FrameAck::new(self.through, self.held.iter().copied())
    }
}

/// A client endpoint on an ephemeral port of the family of `server`, for
/// one or more load clients.
///
/// # Errors
/// No local socket.
pub fn client_endpoint(server: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    quinn::Endpoint::client(if server.is_ipv6() {
        "[::]:0".parse().expect("address literal")
    } else {
        "0.0.0.0:0".parse().expect("address literal")
    })
}

/// Runs one load client on `endpoint` in `room` until `stop` is set or the
/// server closes it; hands its counters to `publish` four times a second
/// and at the end. `rules` is the game's fingerprint, `token` the connect
/// token's bytes for servers that require one; its inputs come from
/// `input`, given 64 random bits, each held for 5 to 44 ticks.
///
/// # Errors
/// Connecting failed (the run is then over).
#[allow(clippy::too_many_arguments)]
pub async fn run<I: Input>(
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
    room: &str,
    rules: u64,
    pin: CertPin,
    token: Option<Vec<u8>>,
    seed: u64,
    input_from: impl Fn(u64) -> I,
    publish: impl Fn(LoadStats),
    mut stop: watch::Receiver<bool>,
) -> Result<(), ConnectError> {
    let connection = tokio::time::timeout(
        Duration::from_secs(5),
        endpoint.connect_with(client_config(pin)?, server, SERVER_NAME)?,
    )
    .await
    .map_err(|_| ConnectError::Timeout(Duration::from_secs(5)))??;
    let (mut send, mut recv) = connection.open_bi().await?;
    let hello = encode_client_reliable(&ClientReliable::Hello(Hello {
        version: PROTOCOL_VERSION,
        rules,
        room: room.into(),
        name: format!("load{seed}"),
        spectator: false,
        reconnect: None,
        token,
    }));
    send.write_all(&StreamFramer::frame(&hello))
        .await
        .map_err(|e| ConnectError::Disconnected(Disconnect::Lost(e.to_string())))?;
    let base = Instant::now();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut framer = StreamFramer::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut stats = ClientStats::default();
    let mut slot = None;
    let mut period = Duration::from_micros(16_667);
    let mut acks: Option<Acks> = None;
    let mut newest = 0u64;
    let mut next_input_tick = 0u64;
    let mut sent: VecDeque<(u64, I)> = VecDeque::new();
    let mut input = I::default();
    let mut hold = 0u32;
    let mut next_tick = Instant::now();
    let mut next_ping = Instant::now();
    let mut next_publish = Instant::now();
    let mut stream_open = true;
    let publish = |stats: &ClientStats, slot, end: Option<Disconnect>| {
        let q = connection.stats();
        publish(LoadStats {
            slot,
            stats: HandleStats {
                session: *stats,
                path_rtt: connection.rtt(),
                udp_tx: q.udp_tx.bytes,
                udp_rx: q.udp_rx.bytes,
                dropped_events: 0,
                quic: q,
            },
            end,
        });
    };
    let send_dg = |msg: &ClientDatagram<I>, stats: &mut ClientStats| {
        let bytes = encode_client_datagram(msg);
        stats.bytes_out += bytes.len() as u64;
        let _ = connection.send_datagram(bytes.into());
    };
    let end = loop {
        let wake = next_tick.min(next_ping).min(next_publish);
        tokio::select! {
            _ = async { let _ = stop.wait_for(|&s| s).await; } => {
                let leave = encode_client_reliable(&ClientReliable::Leave);
                let _ = send.write_all(&StreamFramer::frame(&leave)).await;
                let _ = send.finish();
                let _ = tokio::time::timeout(Duration::from_millis(500), connection.closed()).await;
                break Disconnect::Closed;
            }
            r = recv.read(&mut buf), if stream_open => match r {
                Ok(Some(n)) => {
                    framer.push(&buf[..n]);
                    let mut kicked = None;
                    loop {
                        let m = match framer.next_message() {
                            Ok(Some(m)) => m,
                            Ok(None) => break,
                            Err(e) => {
                                connection.close(1u8.into(), b"bad stream");
                                return Err(ConnectError::Disconnected(Disconnect::Lost(e.to_string())));
                            }
                        };
                        stats.bytes_in += m.len() as u64 + 4;
                        match decode_server_reliable(&m) {
                            Ok(ServerReliable::Welcome(w)) => {
                                slot = w.slot;
                                period = Duration::from_secs(1) / w.tick_rate.max(1);
                                acks = Some(Acks { through: w.tick, held: BTreeSet::new() });
                                newest = w.tick;
                                next_input_tick = w.tick + LEAD_TICKS;
                                stats.rtt = base.elapsed().as_micros() as u64;
                            }
                            Ok(ServerReliable::Snapshot(c)) => {
                                // A resync moves the base on.
                                if c.offset == 0 {
                                    stats.snapshots += 1;
                                    if let Some(a) = acks.as_mut() {
                                        if c.tick > a.through {
                                            a.through = c.tick;
                                            a.held.retain(|&t| t > c.tick);
                                        }
                                    }
                                }
                            }
                            Ok(ServerReliable::Kick(r)) => {
                                kicked = Some(r);
                                break;
                            }
                            Err(_) => {}
                        }
                    }
                    if let Some(r) = kicked {
                        break Disconnect::Kicked(r);
                    }
                }
                Ok(None) | Err(_) => stream_open = false,
            },
            d = connection.read_datagram() => match d {
                Ok(bytes) => {
                    stats.bytes_in += bytes.len() as u64;
                    match decode_server_datagram::<I>(&bytes) {
                        Ok(ServerDatagram::Frames(b)) => {
                            let room_tick = widen_tick16(b.tick, newest);
                            for (t, _) in b.ticks(room_tick) {
                                stats.frames += 1;
                                newest = newest.max(t);
                                if let Some(a) = acks.as_mut() {
                                    a.add(t);
                                }
                            }
                            stats.confirmed = newest;
                        }
                        Ok(ServerDatagram::Pong { time }) => {
                            let now = base.elapsed().as_micros() as u64;
                            let sample = now.saturating_sub(time);
                            stats.rtt = if stats.rtt == 0 { sample } else { (stats.rtt * 7 + sample) / 8 };
                        }
                        Err(_) => stats.malformed += 1,
                    }
                }
                Err(e) => break disconnect_reason(&e),
            },
            _ = tokio::time::sleep_until(wake) => {
                let now = Instant::now();
                if now >= next_ping {
                    next_ping = now + Duration::from_millis(1000);
                    let time = base.elapsed().as_micros() as u64;
                    let ping = ClientDatagram::Ping { time, rollbacks: 0, max_rollback: 0 };
                    send_dg(&ping, &mut stats);
                }
                if now >= next_publish {
                    next_publish = now + Duration::from_millis(250);
                    publish(&stats, slot, None);
                }
                if now >= next_tick {
                    next_tick += period;
                    if next_tick < now {
                        next_tick = now + period;
                    }
                    if let (Some(s), Some(a)) = (slot, acks.as_ref()) {
                        // Stay a round trip plus a few ticks ahead of the
                        // newest frame.
                        let rtt_ticks = Duration::from_micros(stats.rtt).as_micros() as u64
                            / period.as_micros().max(1) as u64;
                        let target = newest + rtt_ticks + LEAD_TICKS;
                        next_input_tick = next_input_tick.max(newest + 1);
                        if next_input_tick <= target + 2 {
                            if hold == 0 {
                                let r: u64 = rng.random();
                                hold = 5 + (r % 40) as u32;
                                input = input_from(r);
                            }
                            hold -= 1;
                            sent.push_back((next_input_tick, input));
                            next_input_tick += 1;
                            stats.tick = next_input_tick;
                        }
                        while sent.len() > REDUNDANCY {
                            sent.pop_front();
                        }
                        if let Some(&(first, _)) = sent.front() {
                            let mut runs: Vec<InputRun<I>> = Vec::new();
                            for &(_, i) in &sent {
                                match runs.last_mut() {
                                    Some(r) if r.input == i && r.count < u8::MAX => r.count += 1,
                                    _ => runs.push(InputRun { count: 1, input: i }),
                                }
                            }
                            let batch = InputBatch {
                                slot: s,
                                first_tick: first as u16,
                                runs,
                                ack: a.ack(),
                            };
                            send_dg(&ClientDatagram::Inputs(batch), &mut stats);
                        }
                    } else if let Some(a) = acks.as_ref() {
                        send_dg(&ClientDatagram::Ack(a.ack()), &mut stats);
                    }
                }
            }
        }
    };
    publish(&stats, slot, Some(end));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Acks;

    #[test]
    fn acks_follow_received_frames() {
        let mut a = Acks {
            through: 10,
            held: Default::default(),
        };
        a.add(11);
        a.add(13);
        a.add(14);
        let ack = a.ack();
        assert_eq!(ack.through, 11);
        // 14 is the newest; 13 is the first before it.
        assert_eq!((ack.ahead, ack.recent), (3, 0b1));
        a.add(12);
        assert_eq!(a.ack().through, 14);
        assert_eq!((a.ack().ahead, a.ack().recent), (0, 0));
        a.add(5);
        assert_eq!(a.ack().through, 14);
    }
}
