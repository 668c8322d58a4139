//! The server's UDP socket: buffers sized for many clients, and the
//! kernel's count of datagrams it dropped because nobody read them in time.

use std::net::SocketAddr;

/// Receive and send buffer asked of the kernel for the server's UDP socket
/// (`serve --udp-buffer`).
///
/// Every client sends an input datagram per tick, and one endpoint task
/// drains them all: 320 clients at 60 Hz are 19,200 datagrams a second.
/// Linux's default 208 KiB holds only a few milliseconds of them (the kernel
/// charges each small datagram about a kilobyte of buffer), so whenever the
/// workers were busy ticking rooms for that long the kernel dropped
/// datagrams: inputs, acknowledgements and handshakes alike. At 40 rooms ×
/// 8 load clients the default buffer dropped about 250 a second; 1 MiB
/// (about 40 ms of that traffic) dropped none, at the same lateness.
///
/// Past the machine's capacity the trade turns: what the small buffer
/// dropped is now queued and processed, so an overloaded server falls
/// behind sooner and load shedding refuses joins where clients used to time
/// out in the handshake. The kernel caps the request at
/// `net.core.rmem_max` / `wmem_max`; [`bind_udp`] warns when it did.
pub const SOCKET_BUFFER_BYTES: usize = 1 << 20;

/// A UDP socket bound to `addr` with `buffer`-byte receive and send
/// buffers (as much as the kernel grants; 0 keeps its default).
///
/// # Errors
/// The socket cannot be created or bound.
pub fn bind_udp(addr: SocketAddr, buffer: usize) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if buffer > 0 {
        // Best effort: a smaller buffer than asked still works, only with
        // drops under load, so it is reported, not refused.
        let _ = socket.set_recv_buffer_size(buffer);
        let _ = socket.set_send_buffer_size(buffer);
        // Linux reports twice what it granted (it counts its bookkeeping).
        let granted = socket.recv_buffer_size().unwrap_or(0);
        if granted < buffer {
            tracing::warn!(
                asked = buffer,
                granted,
                "the kernel granted a smaller UDP receive buffer than asked; under load \
                 it will drop datagrams (raise net.core.rmem_max)"
            );
        }
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// The socket's inode, which names it in `/proc/net/udp` (Linux; `None`
/// elsewhere or without `/proc`).
pub fn socket_inode(socket: &std::net::UdpSocket) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        // The fd's magic link resolves to the socket's own inode.
        let fd = socket.as_raw_fd();
        std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .ok()
            .map(|m| m.ino())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = socket;
        None
    }
}

/// Datagrams the kernel dropped on the socket with this inode since it was
/// opened, from `/proc/net/udp` and `/proc/net/udp6` (`None` if the socket
/// is not listed or `/proc` is unreadable).
pub fn receive_drops(inode: u64) -> Option<u64> {
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|table| drops_in_table(&table, inode))
}

/// The `drops` column of the row for `inode` in a `/proc/net/udp` table.
///
/// Rows are `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref
/// pointer drops`, whitespace separated, after one header line. Anything
/// malformed is skipped.
fn drops_in_table(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|row| {
        let f: Vec<&str> = row.split_whitespace().collect();
        if f.len() < 13 || f[9].parse::<u64>().ok()? != inode {
            return None;
        }
        f[12].parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:1151 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17
  124: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 99 2 0000000000000000 0
  bad row
";

    #[test]
    fn drops_are_read_from_the_row_of_the_inode() {
        assert_eq!(drops_in_table(TABLE, 4242), Some(17));
        assert_eq!(drops_in_table(TABLE, 99), Some(0));
        assert_eq!(drops_in_table(TABLE, 7), None);
        // The header's "inode" is not a number; truncated tables are fine.
        assert_eq!(drops_in_table("", 4242), None);
        assert_eq!(drops_in_table(&TABLE[..200], 4242), None);
    }

    /// The kernel grants the buffer up to its cap, and datagrams nobody
    /// reads past a full buffer show up as drops of exactly this socket.
    #[cfg(target_os = "linux")]
    #[test]
    fn bound_socket_gets_its_buffer_and_its_drops_are_counted() {
        let socket = bind_udp("127.0.0.1:0".parse().unwrap(), SOCKET_BUFFER_BYTES).unwrap();
        let addr = socket.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        if let Some(cap) = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
        {
            // Linux reports double the granted size.
            let granted = socket2::SockRef::from(&socket).recv_buffer_size().unwrap();
            assert!(
                granted >= 2 * cap.min(SOCKET_BUFFER_BYTES),
                "granted {granted}, cap {cap}"
            );
        }
        let inode = socket_inode(&socket).expect("a socket inode on Linux");
        assert_eq!(receive_drops(inode), Some(0));
        // Fill the buffer (never read) and go past it.
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let payload = [0u8; 1000];
        for _ in 0..20_000 {
            let _ = sender.send_to(&payload, addr);
        }
        let drops = receive_drops(inode).expect("the socket is listed");
        assert!(drops > 0, "no drops after 20 MB into a 1 MiB buffer");
        // Another socket's count is its own.
        let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(receive_drops(socket_inode(&other).unwrap()), Some(0));
    }
}
