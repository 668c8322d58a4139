//! Connect tokens (`bitroom_protocol::token`): the byte decoder, the text
//! decoder, verification, the hello checks and the nonce cache.
//!
//! The first byte picks the mode. Mode 0: the rest is a token's bytes as
//! they arrive (decoded, verified with a fixed key); a decoded token must
//! encode back to the same bytes. Mode 1: the rest is the signed part,
//! which the harness signs with the fixed key, so mutations get past the
//! signature into the time, server, room, role and seat checks and the
//! nonce cache (random mutation never forges an Ed25519 signature). Mode
//! 2: the rest is the text form.
#![no_main]

use bitroom_protocol::token::{verify, NonceCache, Token};
use ed25519_dalek::{Signer, SigningKey};
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_700_000_060;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = SigningKey::from_bytes(&[7; 32]);
    let keys = [key.verifying_key()];
    let bytes = match mode % 3 {
        0 => rest.to_vec(),
        1 => {
            let mut b = rest.to_vec();
            let sig = key.sign(rest).to_bytes();
            b.extend_from_slice(&sig);
            b
        }
        _ => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return;
            };
            match bitroom_protocol::token::decode_text(text) {
                Ok(b) => b,
                Err(_) => return,
            }
        }
    };
    if let Ok(t) = Token::decode(&bytes) {
        assert_eq!(t.to_bytes(), bytes, "decoding is canonical");
        assert!(Token::from_text(&t.to_text()).is_ok_and(|u| u == t));
    }
    for server in ["", "eu-1"] {
        if let Ok(v) = verify(&keys, &bytes, NOW, server) {
            let _ = v.check_hello("arena", false);
            let _ = v.check_hello(&v.claims().room.clone(), true);
            let _ = v.seat_in(8);
            let mut cache = NonceCache::new(2);
            assert!(cache.spend(&v, NOW).is_ok());
            assert!(cache.spend(&v, NOW).is_err(), "a nonce is spent once");
        }
    }
});
