//! Cut tail or damage in the middle? After a record that does not read,
//! look for an intact record further on by resynchronising on the record
//! framing.
//!
//! A crash (`kill -9`, a full disk) cuts the file short: nothing readable
//! follows the last good record. A damaged record followed by intact ones
//! is something else — a bad disk, a bad copy, an edit — and must not pass
//! as a crash. This scan decides which, reading forward from the damaged
//! record in bounded memory and time:
//!
//! - a candidate is any offset whose frame could start a non-header record:
//!   a payload that starts with the variant index of a tick (1), keyframe
//!   (2) or end (3) record and has a length that fits that variant (an end
//!   record is 12 bytes; a tick record at most [`MAX_TICK_PAYLOAD`]; a
//!   keyframe's length is its snapshot's length plus 20). It counts when
//!   its payload's CRC-32 matches — by chance once in 2³² candidates;
//! - small candidates are checked from a window of the input; keyframes
//!   (up to [`MAX_RECORD`]) get a running CRC while the input streams past,
//!   at most [`MAX_OPEN`] at once;
//! - the CRC work is budgeted ([`BUDGET_PER_BYTE`] bytes hashed per byte
//!   scanned); a file crafted to exceed it, or to open more keyframe
//!   candidates than allowed, gets [`Scan::Unsure`], which the reader
//!   treats as damage in the middle.
//!
//! The scan reads only the framing and the variant index, not the records'
//! contents, so it does not depend on the game's input type.

use super::{FRAME_HEADER, MAX_RECORD};
use std::io::{self, Read};

/// Largest tick record payload the scan considers: a tick's inputs for
/// every seat and its join / leave events stay far below this for any
/// fixed-size input a datagram can carry.
pub(crate) const MAX_TICK_PAYLOAD: u32 = 64 << 10;
/// Keyframe candidates with a running CRC at once.
const MAX_OPEN: usize = 16;
/// CRC bytes allowed per byte scanned (plus [`BUDGET_BASE`]).
const BUDGET_PER_BYTE: u64 = 16;
/// CRC bytes allowed regardless of the distance scanned.
const BUDGET_BASE: u64 = 4 << 20;
/// Bytes read at a time.
const CHUNK: usize = 64 << 10;
/// Window bytes kept behind the scan position before they are dropped.
const KEEP: u64 = 1 << 20;

/// What the scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// An intact record starts at this offset.
    Found(u64),
    /// Nothing readable follows: a cut (or garbled) tail.
    Nothing,
    /// The rest could not be checked within the limits (a crafted file);
    /// the scan gave up at this offset.
    Unsure(u64),
}

/// A keyframe candidate whose payload is still streaming in.
struct Open {
    start: u64,
    /// Offset just past its payload.
    end: u64,
    stored: u32,
    hasher: crc32fast::Hasher,
}

struct Window<Rd> {
    input: Rd,
    /// File offset of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
    eof: bool,
    open: Vec<Open>,
    found: Option<u64>,
}

impl<Rd: Read> Window<Rd> {
    fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    fn bytes(&self, from: u64, to: u64) -> &[u8] {
        &self.buf[(from - self.start) as usize..(to - self.start) as usize]
    }

    /// Reads one more chunk and feeds it to the open keyframe candidates.
    fn fill(&mut self) -> io::Result<()> {
        let old_end = self.end();
        let n = self.buf.len();
        self.buf.resize(n + CHUNK, 0);
        let got = loop {
            match self.input.read(&mut self.buf[n..]) {
                Ok(k) => break k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(n);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(n + got);
        if got == 0 {
            self.eof = true;
            return Ok(());
        }
        let new_end = self.end();
        let (start, buf) = (self.start, &self.buf);
        let mut found = self.found;
        self.open.retain_mut(|o| {
            let to = o.end.min(new_end);
            o.hasher
                .update(&buf[(old_end - start) as usize..(to - start) as usize]);
            if to < o.end {
                return true;
            }
            if o.hasher.clone().finalize() == o.stored {
                found = Some(found.map_or(o.start, |f| f.min(o.start)));
            }
            false
        });
        self.found = found;
        Ok(())
    }

    /// Reads until `to` is in the window, the input ends or a keyframe
    /// candidate completes.
    fn want(&mut self, to: u64) -> io::Result<()> {
        while self.end() < to && !self.eof && self.found.is_none() {
            self.fill()?;
        }
        Ok(())
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Looks for an intact record starting at or after `from` in `input`,
/// whose first byte is at file offset `base` (`from ≥ base`).
///
/// # Errors
/// Reading the input failed.
pub(crate) fn find_record<Rd: Read>(input: Rd, base: u64, from: u64) -> io::Result<Scan> {
    let mut w = Window {
        input,
        start: base,
        buf: Vec::new(),
        eof: false,
        open: Vec::new(),
        found: None,
    };
    let mut pos = from;
    let mut hashed = 0u64;
    let mut unsure = None;
    loop {
        // The frame header, the variant, and a keyframe's snapshot length.
        w.want(pos + FRAME_HEADER as u64 + 20)?;
        if let Some(f) = w.found {
            return Ok(Scan::Found(f));
        }
        let avail = w.end().saturating_sub(pos);
        if avail < FRAME_HEADER as u64 + 12 {
            break;
        }
        let head = w.bytes(pos, pos + avail.min(28));
        let len = u32_at(head, 0);
        let stored = u32_at(head, 4);
        let variant = u32_at(head, 8);
        let keyframe_len = (variant == 2 && head.len() >= 28).then(|| {
            let mut b = [0; 8];
            b.copy_from_slice(&head[20..28]);
            u64::from_le_bytes(b)
        });
        let small = match variant {
            1 => (20..=MAX_TICK_PAYLOAD).contains(&len),
            3 => len == 12,
            _ => false,
        };
        // (`s` is any u64 the input holds: no `s + 20`.)
        let keyframe = keyframe_len.is_some_and(|s| {
            s >= 1 && u64::from(len).checked_sub(20) == Some(s) && len as usize <= MAX_RECORD
        });
        let payload_end = pos + FRAME_HEADER as u64 + u64::from(len);
        if small || keyframe {
            if small {
                w.want(payload_end)?;
                if let Some(f) = w.found {
                    return Ok(Scan::Found(f));
                }
            }
            if payload_end <= w.end() {
                hashed += u64::from(len);
                if hashed > BUDGET_BASE + BUDGET_PER_BYTE * (pos - from) {
                    unsure = Some(pos);
                    break;
                }
                let payload = w.bytes(pos + FRAME_HEADER as u64, payload_end);
                if crc32fast::hash(payload) == stored {
                    return Ok(Scan::Found(pos));
                }
            } else if keyframe && !w.eof {
                if w.open.len() < MAX_OPEN {
                    let mut hasher = crc32fast::Hasher::new();
                    hasher.update(w.bytes(pos + FRAME_HEADER as u64, w.end()));
                    w.open.push(Open {
                        start: pos,
                        end: payload_end,
                        stored,
                        hasher,
                    });
                } else {
                    unsure.get_or_insert(pos);
                }
            }
        }
        pos += 1;
        if pos - w.start > KEEP {
            let drop = (pos - w.start) as usize;
            w.buf.drain(..drop);
            w.start = pos;
        }
    }
    // Keyframe candidates still open at the end of the input are cut short.
    Ok(match unsure {
        Some(at) => Scan::Unsure(at),
        None => Scan::Nothing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn end_record(tick: u64) -> Vec<u8> {
        let mut p = 3u32.to_le_bytes().to_vec();
        p.extend_from_slice(&tick.to_le_bytes());
        frame(&p)
    }

    fn keyframe(tick: u64, snapshot: &[u8]) -> Vec<u8> {
        let mut p = 2u32.to_le_bytes().to_vec();
        p.extend_from_slice(&tick.to_le_bytes());
        p.extend_from_slice(&(snapshot.len() as u64).to_le_bytes());
        p.extend_from_slice(snapshot);
        frame(&p)
    }

    fn scan(bytes: &[u8], from: u64) -> Scan {
        find_record(bytes, 0, from).unwrap()
    }

    #[test]
    fn finds_a_record_after_garbage_at_any_offset() {
        for junk in 0..40 {
            let mut b = vec![0xA5; junk];
            let at = b.len() as u64;
            b.extend_from_slice(&end_record(7));
            assert_eq!(scan(&b, 0), Scan::Found(at), "after {junk} bytes");
            assert_eq!(scan(&b, at + 1), Scan::Nothing);
        }
    }

    #[test]
    fn finds_a_large_keyframe_streaming_past_the_window() {
        let snapshot: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut b = vec![1, 2, 3];
        b.extend_from_slice(&keyframe(5, &snapshot));
        assert_eq!(scan(&b, 0), Scan::Found(3));
        // Cut one byte short: nothing.
        assert_eq!(scan(&b[..b.len() - 1], 0), Scan::Nothing);
    }

    #[test]
    fn damaged_records_are_not_found() {
        let mut b = end_record(9);
        let last = b.len() - 1;
        b[last] ^= 1;
        assert_eq!(scan(&b, 0), Scan::Nothing);
        assert_eq!(scan(&[], 0), Scan::Nothing);
        assert_eq!(scan(&[0; 100_000], 0), Scan::Nothing);
    }

    /// Found by the `replay` fuzz target: a keyframe candidate whose
    /// snapshot length is near `u64::MAX` overflowed `length + 20`.
    #[test]
    fn a_huge_snapshot_length_is_no_candidate() {
        let mut b = 40u32.to_le_bytes().to_vec();
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&[0; 64]);
        assert_eq!(scan(&b, 0), Scan::Nothing);
    }

    #[test]
    fn crafted_candidates_make_it_unsure_not_slow() {
        // A keyframe header claiming 50 MB at every offset.
        let mut b = Vec::new();
        for _ in 0..100 {
            let len = 50_000_020u32;
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&2u32.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&50_000_000u64.to_le_bytes());
        }
        b.extend_from_slice(&[0; 1000]);
        assert!(matches!(scan(&b, 0), Scan::Unsure(_)));
        // Tick candidates of 64 KiB at every offset of 1 MiB of input.
        let mut b = Vec::new();
        let mut p = 0u64;
        while b.len() < 1 << 20 {
            b.extend_from_slice(&MAX_TICK_PAYLOAD.to_le_bytes());
            b.extend_from_slice(&(p as u32).to_le_bytes());
            b.extend_from_slice(&1u32.to_le_bytes());
            p += 1;
        }
        b.extend_from_slice(&vec![0; MAX_TICK_PAYLOAD as usize]);
        assert!(matches!(scan(&b, 0), Scan::Unsure(_)));
    }
}
