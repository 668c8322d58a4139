//! Replay files (`replay verify/info/diff FILE`): open, then re-simulate
//! and check hashes and keyframes.
//!
//! Every record carries a CRC-32 of its payload, which random mutation
//! almost never keeps right, so the harness first rewrites each record's
//! CRC to match: the fuzzer then reaches the decoding and re-simulation
//! behind it. (Files with wrong CRCs are covered by the reader's own
//! tests.)
#![no_main]

use bitroom_protocol::replay::{verify, ReplayReader, VerifyOptions};
use bitroom_sim::game::sandbox::Sandbox;
use libfuzzer_sys::fuzz_target;

fn fix_crcs(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let mut at = 8; // after the magic
    while let Some(head) = out.get(at..at + 8) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let Some(payload) = out.get(at + 8..(at + 8).saturating_add(len)) else {
            break;
        };
        let crc = crc32fast::hash(payload);
        out[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        at += 8 + len;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let data = fix_crcs(data);
    if let Ok(reader) = ReplayReader::open(&data[..]) {
        let opts = VerifyOptions {
            start: None,
            synctest: None,
        };
        let _ = verify(
            reader,
            |h, i| Ok(Sandbox::replaying(i, h.rules_fingerprint)),
            &opts,
            &mut |_| {},
        );
    }
});
