//! The HTTP side of `--web`: the page's files, the JSON API, and the
//! WebSocket upgrade (see the table in the module above). Only `GET`;
//! request bodies are refused past 1 KiB; connections are limited and
//! time out when idle (`listener.rs`).

use super::listener::LimitedListener;
use super::{WebState, MAX_HTTP_CONNECTIONS};
use crate::connection::serve;
use crate::context::Context;
use crate::link::websocket;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bitroom_protocol::{NetRules, MAX_RELIABLE, PROTOCOL_VERSION};
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
        .route("/ws", get(upgrade::<R>))
        .route("/{file}", get(file::<R>))
        .layer(DefaultBodyLimit::max(1024))
        .with_state(App { web, cx });
    let stopped = async move {
        let _ = stop.wait_for(|&s| s).await;
    };
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

/// The WebSocket transport: the same connection code as native clients.
async fn upgrade<R: NetRules>(State(app): State<App<R>>, ws: WebSocketUpgrade) -> Response {
    let Some(slot) = app.cx.admit() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response();
    };
    ws.max_message_size(MAX_RELIABLE + 1)
        .max_frame_size(MAX_RELIABLE + 1)
        .on_upgrade(move |socket| async move {
            let cx = app.cx;
            let conn = cx.next_conn.fetch_add(1, Ordering::Relaxed);
            let span = info_span!("conn", id = conn, transport = "websocket");
            let deadline = Instant::now() + cx.hello_timeout;
            let (link, reader, writer) = websocket::split(socket);
            serve(conn, Arc::new(link), reader, writer, deadline, &cx)
                .instrument(span)
                .await;
            drop(slot);
        })
}
