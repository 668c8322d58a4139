//! `--metrics ADDR`: Prometheus text over a tiny HTTP/1.1 endpoint.
//!
//! The `metrics` facade records (see [`crate::monitor`]);
//! `metrics-exporter-prometheus` renders; this module answers
//! `GET /metrics` (and `GET /`) on a tokio listener, one request per
//! connection. Requests are read with a size limit and a timeout.

use crate::monitor::names;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::debug;

/// Largest request head read.
const MAX_REQUEST: usize = 8 << 10;

/// Why metrics could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The listener could not bind.
    #[error("cannot serve metrics on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A recorder is already installed, or bad buckets.
    #[error("cannot install the metrics recorder: {0}")]
    Recorder(String),
}

/// Installs the process-wide Prometheus recorder (tick histograms with
/// buckets from 50 µs to 100 ms).
///
/// # Errors
/// A recorder is already installed.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    let tick_buckets = [
        0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.004, 0.008, 0.016, 0.033, 0.1,
    ];
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(names::TICK_DURATION.into()), &tick_buckets)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(names::TICK_LATENESS.into()), &tick_buckets)
        })
        .map_err(|e| MetricsError::Recorder(e.to_string()))?
        .install_recorder()
        .map_err(|e| MetricsError::Recorder(e.to_string()))
}

/// Binds the metrics listener.
///
/// # Errors
/// The address cannot be bound.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, MetricsError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| MetricsError::Bind { addr, source })
}

/// Serves the metrics until the task is dropped; runs the exporter's
/// upkeep every 5 s.
pub async fn serve(listener: TcpListener, handle: PrometheusHandle) {
    let mut upkeep = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = upkeep.tick() => handle.run_upkeep(),
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let handle = handle.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &handle).await {
                        debug!(%peer, "metrics request failed: {e}");
                    }
                });
            }
        }
    }
}

async fn answer(mut stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
            if head.len() > MAX_REQUEST {
                break;
            }
        }
        Ok::<(), std::io::Error>(())
    };
    if tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .is_err()
    {
        return Ok(());
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let (status, body, kind) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics" | b"/")) => (
            "200 OK",
            handle.render(),
            "text/plain; version=0.0.4; charset=utf-8",
        ),
        (Some(b"GET"), _) => ("404 Not Found", "not found\n".into(), "text/plain"),
        _ => ("400 Bad Request", "bad request\n".into(), "text/plain"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
