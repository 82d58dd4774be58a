//! Any bytes as an RPC message and as NFS/MOUNT/portmap/NLM arguments and results.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (sel, msg) = data.split_at(3);
    let prog = [100003, 100005, 100000, 100021][(sel[0] % 4) as usize];
    let (vers, proc_) = ((sel[1] % 5) as u32, (sel[2] % 32) as u32);
    let _ = magnet_rpc::rpc::parse(msg);
    let _ = magnet_rpc::stream::find_record(msg, 1 << 20);
    let a = magnet_rpc::progs::decode_args(prog, vers, proc_, msg);
    let r = magnet_rpc::progs::decode_res(prog, vers, proc_, msg);
    let _ = (magnet_rpc::progs::fmt_args(proc_, &a), magnet_rpc::progs::fmt_res(proc_, &r));
});
