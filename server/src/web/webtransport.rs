//! The WebTransport endpoint: accepts HTTP/3 connections, takes the
//! session at [`WEBTRANSPORT_PATH`] (anything else gets 404), waits for
//! the page's stream, then serves it like any connection. Renews its
//! certificate every [`WEB_CERT_RENEW`].

use super::http::WEBTRANSPORT_PATH;
use super::{WebState, WEB_CERT_RENEW};
use crate::connection::{serve, Places};
use crate::context::{shutting_down, ConnSlot, Context};
use crate::link::quic::QuicWriter;
use crate::link::webtransport::{WtLink, WtReader};
use crate::link::FramedReader;
use crate::tls::Identity;
use bitroom_protocol::NetRules;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, info_span, warn, Instrument};

/// Accepts WebTransport sessions until `stop` turns true.
pub(crate) async fn run<R: NetRules>(
    endpoint: quinn::Endpoint,
    web: Arc<WebState>,
    cx: Arc<Context<R>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut renew = tokio::time::interval_at(Instant::now() + WEB_CERT_RENEW, WEB_CERT_RENEW);
    loop {
        tokio::select! {
            _ = stop.wait_for(|&s| s) => break,
            _ = renew.tick() => renew_certificate(&endpoint, &web),
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                let Some(slot) = cx.admit() else {
                    incoming.refuse();
                    continue;
                };
                // The same limits as the native endpoint (`Server::run`).
                if cx.peers.under_pressure()
                    && !incoming.remote_address_validated()
                    && incoming.may_retry()
                {
                    let _ = incoming.retry();
                    continue;
                }
                let places = match cx.peers.admit(incoming.remote_address().ip()) {
                    Ok(p) => p,
                    Err(why) => {
                        cx.monitor.refused(why.label());
                        incoming.refuse();
                        continue;
                    }
                };
                let cx = cx.clone();
                tokio::spawn(handle(incoming, cx, slot, places));
            }
        }
    }
    endpoint.set_server_config(None);
}

fn renew_certificate(endpoint: &quinn::Endpoint, web: &WebState) {
    let renewed = Identity::short_lived(time::OffsetDateTime::now_utc()).and_then(|id| {
        let hash = id.fingerprint_hex();
        let Identity { chain, key } = id;
        bitroom_transport::webtransport_server_config(chain, key).map(|c| (c, hash))
    });
    match renewed {
        Ok((config, hash)) => {
            endpoint.set_server_config(Some(config));
            info!("new WebTransport certificate, sha-256 {hash}");
            *web.cert_sha256.write().unwrap_or_else(|e| e.into_inner()) = hash;
        }
        Err(e) => warn!("cannot renew the WebTransport certificate: {e}"),
    }
}

async fn handle<R: NetRules>(
    incoming: quinn::Incoming,
    cx: Arc<Context<R>>,
    slot: ConnSlot,
    places: Places,
) {
    let conn = cx.next_conn.fetch_add(1, Ordering::Relaxed);
    let ip = incoming.remote_address().ip();
    let span = info_span!("conn", id = conn, remote = %incoming.remote_address(), transport = "webtransport");
    async move {
        let deadline = Instant::now() + cx.hello_timeout;
        let mut shutdown = cx.shutdown.subscribe();
        // QUIC and HTTP/3 handshakes, the CONNECT request, the page's
        // stream: all within the hello timeout.
        let opened = async {
            let connection = incoming.await.map_err(|e| e.to_string())?;
            let request = web_transport_quinn::Request::accept(connection)
                .await
                .map_err(|e| e.to_string())?;
            let path = request.url.path().to_string();
            if path != WEBTRANSPORT_PATH {
                let _ = request.reject(axum::http::StatusCode::NOT_FOUND).await;
                return Err(format!("no session at {path}"));
            }
            let session = request.ok().await.map_err(|e| e.to_string())?;
            let (send, recv) = session.accept_bi().await.map_err(|e| e.to_string())?;
            Ok((session, send, recv))
        };
        let opened = tokio::select! {
            r = tokio::time::timeout_at(deadline, opened) => r,
            _ = shutting_down(&mut shutdown) => return,
        };
        let (session, send, recv) = match opened {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                debug!("webtransport handshake failed: {e}");
                cx.monitor.refused("handshake_failed");
                return;
            }
            Err(_) => {
                info!("webtransport handshake not finished in time");
                cx.monitor.refused("handshake_timeout");
                return;
            }
        };
        let reader = WtReader {
            connection: session.clone(),
            stream: FramedReader::new(recv),
        };
        serve(
            conn,
            ip,
            places,
            Arc::new(WtLink(session)),
            reader,
            QuicWriter(send),
            deadline,
            &cx,
        )
        .await;
        drop(slot);
    }
    .instrument(span)
    .await;
}
