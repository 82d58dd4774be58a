//! Any bytes as a capture file, through the whole pipeline.
#![no_main]
use libfuzzer_sys::fuzz_target;
use magnet_rpc::capture::CaptureReader;
use magnet_rpc::{Decoder, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(mut rd) = CaptureReader::new(data, std::path::Path::new("fuzz")) else {
        return;
    };
    let mut dec = Decoder::new(Limits::default());
    while let Some(Ok(p)) = rd.next_packet() {
        dec.packet(p.ts_ns, p.linktype, p.data, &mut |t| {
            let _ = magnet_rpc::format::rpcspy_line(&t, false);
        });
    }
    dec.finish(&mut |_| {});
});
