//! The HTTP listener's limits: at most so many connections at once (the
//! next waits in the kernel's backlog), and a connection that sends
//! nothing for [`READ_IDLE`] is dropped, whether it is reading a request
//! head slowly or is a WebSocket whose page went silent (a page in a room
//! sends a datagram every tick).

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// A connection that sends nothing for this long is dropped.
pub(crate) const READ_IDLE: Duration = Duration::from_secs(20);

/// A TCP listener with a connection limit.
#[derive(Debug)]
pub(crate) struct LimitedListener {
    pub(crate) inner: TcpListener,
    pub(crate) permits: Arc<Semaphore>,
}

impl Listener for LimitedListener {
    type Io = LimitedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (LimitedIo, SocketAddr) {
        let permit = loop {
            if let Ok(p) = self.permits.clone().acquire_owned().await {
                break p;
            }
            // Never closed; wait and try again rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        loop {
            match self.inner.accept().await {
                Ok((io, addr)) => {
                    let _ = io.set_nodelay(true);
                    return (LimitedIo::new(io, permit), addr);
                }
                // Out of file descriptors and the like: back off.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A client's address, for handlers (`ConnectInfo<PeerAddr>`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerAddr(pub(crate) SocketAddr);

impl Connected<IncomingStream<'_, LimitedListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, LimitedListener>) -> PeerAddr {
        PeerAddr(*stream.remote_addr())
    }
}

/// A connection that holds its place in the limit and times out idle reads.
#[derive(Debug)]
pub(crate) struct LimitedIo {
    io: TcpStream,
    idle: Pin<Box<Sleep>>,
    _permit: OwnedSemaphorePermit,
}

impl LimitedIo {
    fn new(io: TcpStream, permit: OwnedSemaphorePermit) -> LimitedIo {
        LimitedIo {
            io,
            idle: Box::pin(tokio::time::sleep(READ_IDLE)),
            _permit: permit,
        }
    }
}

impl AsyncRead for LimitedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    self.idle.as_mut().reset(Instant::now() + READ_IDLE);
                }
                Poll::Ready(r)
            }
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing received for too long",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for LimitedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
