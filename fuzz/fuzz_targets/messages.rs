//! Every wire message type and the stream framer on arbitrary bytes.
#![no_main]

use bitroom_protocol::{
    decode_client_datagram, decode_client_reliable, decode_server_datagram, decode_server_reliable,
    StreamFramer,
};
use bitroom_sim::game::sandbox::PlayerInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_client_datagram::<PlayerInput>(data);
    let _ = decode_client_reliable(data);
    let _ = decode_server_datagram::<PlayerInput>(data);
    let _ = decode_server_reliable(data);
    // The same bytes as a stream, fed in two pieces.
    let mut framer = StreamFramer::default();
    let cut = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    framer.push(&data[..cut]);
    framer.push(&data[cut..]);
    while let Ok(Some(m)) = framer.next_message() {
        let _ = decode_client_reliable(&m);
        let _ = decode_server_reliable(&m);
    }
});
