//! Attacks on the browsers' way in (`--web`): a hostile WebSocket client
//! speaking the tagged wire format (`docs/web.md`) against a real server on
//! loopback, next to an honest native player (the *witness*) that must
//! keep its seat and its sync, with the server's memory bounded (it runs
//! in this process). The WebSocket goes through the same admission and
//! limits as native clients (`docs/limits.md`, "Browsers").

use bitroom_protocol::Hello;
use bitroom_server::WebConfig;
use bitroom_sim::game::Rules;
use bitroom_tests::loopback::TestServer;
use bitroom_tests::raw::{hello, hello_bytes};
use bitroom_tests::witness::{
    assert_unharmed, claims, rules, serial, test_key, token, token_config, witness, MemoryWatch,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const SEC: Duration = Duration::from_secs(1);
const MIB: u64 = 1 << 20;
/// Tags of the WebSocket transport (`server/src/link/websocket.rs`).
const RELIABLE: u8 = 0;

fn web_server(
    tokens: bool,
    tweak: impl FnOnce(&mut bitroom_server::ServerConfig<bitroom_sim::game::sandbox::Sandbox>),
) -> TestServer {
    TestServer::start(rules(), |c| {
        c.web = Some(WebConfig {
            bind: "127.0.0.1:0".parse().expect("address literal"),
            assets: Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist"),
            game: json!({ "scene": "arena:60" }),
            scene_json: None,
            mint: None,
        });
        if tokens {
            c.tokens = Some(token_config());
        }
        tweak(c);
    })
}

async fn open_ws(server: &TestServer) -> Result<Ws, WsError> {
    let url = format!("ws://{}/ws", server.web.expect("web address"));
    tokio_tungstenite::connect_async(url)
        .await
        .map(|(ws, _)| ws)
}

fn tagged(tag: u8, body: &[u8]) -> Message {
    let mut v = vec![tag];
    v.extend_from_slice(body);
    Message::Binary(v.into())
}

/// Reads until the server closes the socket; the close frame's code and
/// reason, if it sent one.
async fn closed(ws: &mut Ws, limit: Duration) -> Option<(CloseCode, String)> {
    let read = async {
        while let Some(m) = ws.next().await {
            match m {
                Ok(Message::Close(Some(f))) => return Some((f.code, f.reason.to_string())),
                Ok(Message::Close(None)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
        None
    };
    tokio::time::timeout(limit, read)
        .await
        .expect("the server closes the socket in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_hello_without_a_token_is_refused_and_leaves_no_room() {
    let _serial = serial().await;
    let mut server = web_server(true, |_| {});
    let mut ws = open_ws(&server).await.expect("upgrade");
    let h = hello("squat", rules().fingerprint());
    ws.send(tagged(RELIABLE, &hello_bytes(&h)))
        .await
        .expect("send");
    let (code, reason) = closed(&mut ws, 5 * SEC).await.expect("a close frame");
    assert_eq!(code, CloseCode::from(4000), "{reason}");
    assert!(reason.contains("token"), "refused for: {reason}");
    // A token for another room does not get in either.
    let mut ws = open_ws(&server).await.expect("upgrade");
    let h = Hello {
        token: Some(token(&test_key(), &claims("elsewhere", "u1"))),
        ..hello("squat", rules().fingerprint())
    };
    ws.send(tagged(RELIABLE, &hello_bytes(&h)))
        .await
        .expect("send");
    let (_, reason) = closed(&mut ws, 5 * SEC).await.expect("a close frame");
    assert!(reason.contains("room"), "refused for: {reason}");
    // Nothing else runs in this server: no room at all.
    let rooms = server.monitor.snapshot().rooms;
    assert_eq!(rooms, 0, "refused hellos left {rooms} rooms behind");
    server.shutdown().await;
}

/// A WebSocket on a plain TCP socket, written by hand: the upgrade, then
/// frames as the hostile client chooses (so that it can declare a length
/// and send the body slowly without holding it in this process).
struct RawWs(tokio::net::TcpStream);

impl RawWs {
    async fn open(server: &TestServer) -> RawWs {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(server.web.expect("web address"))
            .await
            .expect("connect");
        let req = "GET /ws HTTP/1.1\r\nHost: bitroom\r\nUpgrade: websocket\r\n\
                   Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                   Sec-WebSocket-Version: 13\r\n\r\n";
        tcp.write_all(req.as_bytes())
            .await
            .expect("upgrade request");
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(tcp.read(&mut b).await.expect("response"), 1, "closed");
            head.push(b[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        RawWs(tcp)
    }

    /// A binary frame's header for `len` payload bytes (masked with a zero
    /// key, as a client must mask: the payload goes as it is).
    fn header(len: u64) -> Vec<u8> {
        let mut h = vec![0x82, 0x80 | 127];
        h.extend_from_slice(&len.to_be_bytes());
        h.extend_from_slice(&[0; 4]);
        h
    }

    async fn frame(&mut self, payload: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.0
            .write_all(&RawWs::header(payload.len() as u64))
            .await?;
        self.0.write_all(payload).await
    }
}

/// Declares a binary message of `len` bytes (its first byte the reliable
/// tag) and sends all of it but the last byte, `chunk` after `chunk`.
async fn park(ws: &mut RawWs, len: u64, chunk: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    ws.0.write_all(&RawWs::header(len)).await?;
    ws.0.write_all(&[RELIABLE]).await?;
    let mut sent = 1u64;
    while sent + (chunk.len() as u64) < len {
        ws.0.write_all(chunk).await?;
        sent += chunk.len() as u64;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_websocket_message_closes_only_its_socket() {
    let _serial = serial().await;
    let mut server = web_server(false, |_| {});
    let w = witness(&server, "r", None).await;
    let watch = Arc::new(MemoryWatch::start());
    let sampler = watch.sample_every_20ms();
    // Eight sockets join the witness's room honestly, then each declares a
    // 6 MiB message and sends all of it but the last byte, from one 64 KiB
    // buffer (this process holds none of it). The socket's limit (1 MiB)
    // refuses it by its frame header and closes the socket. (Checked with
    // the protocol's 8 MiB limit instead: no socket was cut off, each kept
    // waiting for its last byte with what it had received.)
    let h = Hello {
        spectator: true,
        ..hello("r", rules().fingerprint())
    };
    let mut hello_msg = vec![RELIABLE];
    hello_msg.extend_from_slice(&hello_bytes(&h));
    let chunk = vec![0xAB; 64 << 10];
    let mut cut = 0;
    for _ in 0..8 {
        let mut ws = RawWs::open(&server).await;
        ws.frame(&hello_msg).await.expect("hello");
        tokio::time::sleep(SEC / 4).await;
        // Cut off (an error) or all sent: both within 10 s.
        let _ = tokio::time::timeout(10 * SEC, park(&mut ws, 6 << 20, &chunk)).await;
        // Cut off: the server closed the socket (an end or an error when
        // reading), not kept it waiting for the last byte.
        let mut b = [0u8; 256];
        let read = async {
            loop {
                match tokio::io::AsyncReadExt::read(&mut ws.0, &mut b).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        if tokio::time::timeout(5 * SEC, read).await.is_ok() {
            cut += 1;
        }
        drop(ws);
    }
    watch.sample();
    sampler.abort();
    watch.assert_grew_less_than(16 * MIB, "eight parked 6 MiB WebSocket messages");
    assert_eq!(cut, 8, "only {cut} of 8 sockets were cut off");
    assert_unharmed(&w).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_breaking_the_protocol_is_kicked_and_the_room_plays_on() {
    let _serial = serial().await;
    let mut server = web_server(false, |_| {});
    let w = witness(&server, "r", None).await;
    let mut ws = open_ws(&server).await.expect("upgrade");
    let h = Hello {
        spectator: true,
        ..hello("r", rules().fingerprint())
    };
    ws.send(tagged(RELIABLE, &hello_bytes(&h)))
        .await
        .expect("send");
    tokio::time::sleep(SEC).await;
    // A text message is not part of the protocol.
    ws.send(Message::Text("hello?".into())).await.expect("send");
    let (code, reason) = closed(&mut ws, 5 * SEC).await.expect("a close frame");
    assert_eq!(code, CloseCode::from(4000), "{reason}");
    assert!(reason.contains("text messages"), "kicked for: {reason}");
    // A reliable message that is not a client message.
    let mut ws = open_ws(&server).await.expect("upgrade");
    ws.send(tagged(RELIABLE, &hello_bytes(&h)))
        .await
        .expect("send");
    tokio::time::sleep(SEC).await;
    ws.send(tagged(RELIABLE, &[0xFF; 64])).await.expect("send");
    assert!(
        closed(&mut ws, 5 * SEC).await.is_some(),
        "not closed with a reason"
    );
    // An unknown tag.
    let mut ws = open_ws(&server).await.expect("upgrade");
    ws.send(tagged(7, b"x")).await.expect("send");
    let (_, reason) = closed(&mut ws, 5 * SEC).await.expect("a close frame");
    assert!(!reason.is_empty());
    assert_unharmed(&w).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_per_address_are_limited_with_native_connections() {
    let _serial = serial().await;
    let mut server = web_server(false, |c| c.limits.max_per_address = 4);
    // Four sockets that never say hello hold the address's four places.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(open_ws(&server).await.expect("upgrade"));
    }
    match open_ws(&server).await {
        Err(WsError::Http(r)) => assert_eq!(r.status().as_u16(), 503),
        Err(e) => panic!("refused with {e}, not 503"),
        Ok(_) => panic!("a fifth socket from the same address was upgraded"),
    }
    // The native endpoint counts the same places.
    let options = bitroom_client::ConnectOptions::new(rules(), server.pin);
    let c = bitroom_client::connect(server.addr, "r", options).await;
    assert!(c.is_err(), "a native client got past the address's limit");
    // Places come back when the sockets go (closed for their late hello).
    for ws in &mut held {
        let _ = closed(ws, 10 * SEC).await;
    }
    drop(held);
    tokio::time::sleep(SEC / 2).await;
    assert!(
        open_ws(&server).await.is_ok(),
        "the address's places did not come back"
    );
    server.shutdown().await;
}
