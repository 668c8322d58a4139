//! The HTTP side of `--web`: the page's files, the JSON API, and the
//! WebSocket upgrade (see the table in the module above). Only `GET`;
//! request bodies are refused past 1 KiB; connections are limited and
//! time out when idle (`listener.rs`).

use super::listener::{LimitedListener, PeerAddr};
use super::{WebState, MAX_HTTP_CONNECTIONS};
use crate::connection::serve;
use crate::context::Context;
use crate::link::websocket::{self, WS_MAX_MESSAGE};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bitroom_protocol::{NetRules, PROTOCOL_VERSION};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;
use tracing::{info_span, warn, Instrument};

/// The path of the WebTransport session.
pub(crate) const WEBTRANSPORT_PATH: &str = "/bitroom";

struct App<R> {
    web: Arc<WebState>,
    cx: Arc<Context<R>>,
}

impl<R> Clone for App<R> {
    fn clone(&self) -> App<R> {
        App {
            web: self.web.clone(),
            cx: self.cx.clone(),
        }
    }
}

/// Serves HTTP until `stop` turns true.
pub(crate) async fn run<R: NetRules>(
    tcp: std::net::TcpListener,
    web: Arc<WebState>,
    cx: Arc<Context<R>>,
    mut stop: watch::Receiver<bool>,
) {
    let inner = match tokio::net::TcpListener::from_std(tcp) {
        Ok(l) => l,
        Err(e) => {
            warn!("web listener: {e}");
            return;
        }
    };
    let listener = LimitedListener {
        inner,
        permits: Arc::new(Semaphore::new(MAX_HTTP_CONNECTIONS)),
    };
    let app = Router::new()
        .route("/", get(index::<R>))
        .route("/api/info", get(info::<R>))
        .route("/api/rooms", get(rooms::<R>))
        .route("/api/scene", get(scene::<R>))
        .route("/api/token", get(token::<R>))
        .route("/ws", get(upgrade::<R>))
        .route("/{file}", get(file::<R>))
        .layer(DefaultBodyLimit::max(1024))
        .with_state(App { web, cx });
    let stopped = async move {
        let _ = stop.wait_for(|&s| s).await;
    };
    let app = app.into_make_service_with_connect_info::<PeerAddr>();
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stopped)
        .await
    {
        warn!("web server: {e}");
    }
}

fn send_file<R>(app: &App<R>, name: &str, headers: &HeaderMap) -> Response {
    let gzip_ok = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("gzip"));
    let Some(asset) = app.web.assets.read(name, gzip_ok) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    let mut response = asset.bytes.into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    // Rebuilt assets must show up on reload.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if asset.gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

async fn index<R>(State(app): State<App<R>>, headers: HeaderMap) -> Response {
    send_file(&app, "index.html", &headers)
}

async fn file<R>(
    State(app): State<App<R>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    send_file(&app, &name, &headers)
}

async fn info<R: NetRules>(State(app): State<App<R>>) -> Json<serde_json::Value> {
    let mut out = match &app.web.game {
        serde_json::Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let extra = serde_json::json!({
        "protocol_version": PROTOCOL_VERSION,
        "tick_rate": app.web.tick_rate,
        "max_players": app.web.max_players,
        "scene_file": app.web.scene_json.is_some(),
        "tokens_required": app.cx.admission.requires_tokens(),
        "token_endpoint": app.web.mint.is_some(),
        "websocket": "/ws",
        "webtransport": {
            "port": app.web.wt_port,
            "path": WEBTRANSPORT_PATH,
            "cert_sha256": app.web.cert_sha256_now(),
        },
    });
    if let serde_json::Value::Object(m) = extra {
        out.extend(m);
    }
    Json(serde_json::Value::Object(out))
}

async fn rooms<R: NetRules>(State(app): State<App<R>>) -> Json<serde_json::Value> {
    let snap = app.cx.monitor.snapshot();
    let scene = app.web.game.get("scene").cloned();
    let rooms: Vec<serde_json::Value> = snap
        .room_stats
        .iter()
        .map(|(name, stats)| {
            let players: Vec<serde_json::Value> = snap
                .room_seats
                .get(name)
                .map(|seats| {
                    seats
                        .iter()
                        .map(|(slot, who)| serde_json::json!({"slot": slot, "name": who}))
                        .collect()
                })
                .unwrap_or_default();
            serde_json::json!({
                "name": name,
                "scene": scene,
                "players": players,
                "player_count": stats.players,
                "spectators": stats.spectators,
                "tick": stats.ticks,
            })
        })
        .collect();
    Json(serde_json::json!({
        "scene": scene,
        "tick_rate": app.web.tick_rate,
        "max_players": app.web.max_players,
        "rooms": rooms,
    }))
}

async fn scene<R>(State(app): State<App<R>>) -> Response {
    match &app.web.scene_json {
        Some(text) => ([(header::CONTENT_TYPE, "application/json")], text.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "the scene is not a file\n").into_response(),
    }
}

/// `/api/token` asks for.
#[derive(Debug, serde::Deserialize)]
struct TokenQuery {
    room: String,
    #[serde(default)]
    spectate: Option<String>,
}

/// A connect token for the page, from a server that is its own backend
/// (`demo`); 404 elsewhere.
async fn token<R>(State(app): State<App<R>>, Query(q): Query<TokenQuery>) -> Response {
    let Some(mint) = &app.web.mint else {
        return (StatusCode::NOT_FOUND, "this server does not mint tokens\n").into_response();
    };
    let spectator = q.spectate.as_deref() == Some("1");
    match (mint.0)(&q.room, spectator) {
        Ok(text) => ([(header::CACHE_CONTROL, "no-store")], text).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

/// The WebSocket transport: the same connection code as native clients.
async fn upgrade<R: NetRules>(
    State(app): State<App<R>>,
    ConnectInfo(PeerAddr(remote)): ConnectInfo<PeerAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(slot) = app.cx.admit() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response();
    };
    // The same per-address and half-open limits as the QUIC endpoints.
    let places = match app.cx.peers.admit(remote.ip()) {
        Ok(p) => p,
        Err(why) => {
            app.cx.monitor.refused(why.label());
            return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response();
        }
    };
    ws.max_message_size(WS_MAX_MESSAGE)
        .max_frame_size(WS_MAX_MESSAGE)
        .on_upgrade(move |socket| async move {
            let cx = app.cx;
            let conn = cx.next_conn.fetch_add(1, Ordering::Relaxed);
            let span = info_span!("conn", id = conn, remote = %remote, transport = "websocket");
            let deadline = Instant::now() + cx.hello_timeout;
            let (link, reader, writer) = websocket::split(socket);
            let link = Arc::new(link);
            serve(
                conn,
                remote.ip(),
                places,
                link,
                reader,
                writer,
                deadline,
                &cx,
            )
            .instrument(span)
            .await;
            drop(slot);
        })
}
