//! magnet's recorder: CO-RE BPF programs for every layer of the stack
//! (`src/bpf/record.bpf.c`, records defined in `bpf/include/magnet/events.h`, which the trace format owns), the table
//! of hooks they attach to, and the drain that writes them into a trace.
//!
//! The library never prints: `record` returns a `Summary` and reports progress
//! through a callback.

pub mod config;
mod error;
pub mod funcs;
mod netdevs;
pub mod probes;
mod recorder;

pub use config::{
    parse_kinds, parse_layers, parse_size, Filters, KindSelection, Layer, RecordConfig,
};
pub use error::Error;
pub use netdevs::netns_inode;
pub use recorder::{
    check, preflight, record, CheckLine, DetachedFn, Progress, ProgressFn, ReadyFn, RunOptions,
    Summary, Target, PRIVILEGE,
};

#[allow(
    clippy::all,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/record.skel.rs"));
}

/// The text of every file record.bpf.c includes that defines programs, for
/// the tests that check the program lists against the source.
#[cfg(test)]
pub(crate) fn bpf_program_sources() -> String {
    [
        include_str!("bpf/batch.bpf.c"),
        include_str!("bpf/sock.bpf.c"),
        include_str!("bpf/app.bpf.c"),
        include_str!("bpf/tcp.bpf.c"),
        include_str!("bpf/ip.bpf.c"),
        include_str!("bpf/dev.bpf.c"),
        include_str!("bpf/sched.bpf.c"),
        include_str!("bpf/hooks_fn.bpf.c"),
    ]
    .concat()
}

#[cfg(test)]
mod layout {
    //! The C structs (through the skeleton's generated types) and the Rust
    //! catalog must describe the same bytes.
    use super::skel::types;
    use magnet_trace::catalog::{kind, Catalog, TCP_SNAP_LEN};
    use std::mem::{offset_of, size_of};

    macro_rules! check {
        ($cat:expr, $kind:expr, $ty:ty, [$($field:ident),* $(,)?]) => {{
            let k = $cat.get($kind).unwrap();
            for_fields!(k, $ty, $($field),*);
        }};
    }
    macro_rules! for_fields {
        ($k:expr, $ty:ty, $($field:ident),*) => {
            $(
                let f = $k.field(stringify!($field).trim_start_matches("r#")).unwrap_or_else(|| panic!("{}: no field {}", $k.name, stringify!($field)));
                assert_eq!(f.offset as usize, offset_of!($ty, $field), "{}.{}", $k.name, stringify!($field));
            )*
        };
    }

    #[test]
    fn catalog_sizes_match_events_h() {
        let c = Catalog::builtin();
        let size = |id| c.get(id).unwrap().size as usize;
        assert_eq!(size(kind::LOST), size_of::<types::mg_lost>());
        assert_eq!(size(kind::SOCK), size_of::<types::mg_sock>());
        assert_eq!(size(kind::APP_SEND), size_of::<types::mg_app>());
        assert_eq!(
            size(kind::TCP_STATE) + TCP_SNAP_LEN as usize,
            size_of::<types::mg_tcp_state>()
        );
        assert_eq!(
            size(kind::TCP_RCV) + TCP_SNAP_LEN as usize,
            size_of::<types::mg_tcp>()
        );
        assert_eq!(TCP_SNAP_LEN as usize, size_of::<types::mg_tcp_snap>());
        assert_eq!(size(kind::IP_LOCAL_OUT), size_of::<types::mg_ip>());
        assert_eq!(size(kind::QDISC_ENQ), size_of::<types::mg_qdisc>());
        assert_eq!(size(kind::DEV_RX), size_of::<types::mg_dev>());
        assert_eq!(size(kind::DROP), size_of::<types::mg_drop>());
        assert_eq!(
            size(kind::SCHED_SWITCH),
            size_of::<types::mg_sched_switch>()
        );
        assert_eq!(size(kind::SCHED_WAKEUP), size_of::<types::mg_task>());
        assert_eq!(size(kind::FUNC), size_of::<types::mg_func>());
        assert_eq!(size(kind::FUNC_EXIT), size_of::<types::mg_func_exit>());
        assert_eq!(size(kind::FRAME), size_of::<types::mg_frame>());
    }

    #[test]
    fn catalog_offsets_match_events_h() {
        let c = Catalog::builtin();
        check!(c, kind::FUNC_EXIT, types::mg_func_exit, [func, retval]);
        check!(
            c,
            kind::FRAME,
            types::mg_frame,
            [pkt_id, ifindex, len, caplen, dev_kind]
        );
        check!(
            c,
            kind::FUNC,
            types::mg_func,
            [
                func, caller, skb, pkt_id, len, ip_id, version, protocol, sport, dport, tcp_flags,
                saddr, daddr, parent
            ]
        );
        check!(c, kind::LOST, types::mg_lost, [count, lost_cpu, reason]);
        check!(
            c,
            kind::SOCK,
            types::mg_sock,
            [cookie, family, protocol, r#type, sport, dport, netns, saddr, daddr]
        );
        check!(
            c,
            kind::APP_RECV,
            types::mg_app,
            [cookie, asked, ret, msg_flags, family, protocol, r#type, comm]
        );
        check!(
            c,
            kind::TCP_STATE,
            types::mg_tcp_state,
            [cookie, family, protocol, sport, dport, oldstate, newstate, saddr, daddr]
        );
        check!(
            c,
            kind::TCP_RCV,
            types::mg_tcp,
            [cookie, pkt_id, len, seq, ack, arg]
        );
        check!(
            c,
            kind::IP_LOCAL_IN,
            types::mg_ip,
            [
                cookie, pkt_id, ifindex, tot_len, ip_id, frag_off, version, tos, ttl, protocol,
                sport, dport, tcp_flags, seq, ack, saddr, daddr
            ]
        );
        check!(
            c,
            kind::QDISC_DEQ,
            types::mg_qdisc,
            [cookie, pkt_id, ifindex, len, qlen, handle]
        );
        check!(
            c,
            kind::DEV_XMIT,
            types::mg_dev,
            [cookie, pkt_id, ifindex, len, rc, ethertype, link_type]
        );
        check!(
            c,
            kind::DROP,
            types::mg_drop,
            [cookie, pkt_id, location, ifindex, reason, len, ethertype]
        );
        check!(
            c,
            kind::SCHED_SWITCH,
            types::mg_sched_switch,
            [prev_tid, prev_tgid, next_tid, next_tgid, prev_state, prev_comm, next_comm]
        );
    }

    #[test]
    fn tcp_snapshot_fields_match_events_h() {
        let c = Catalog::builtin();
        // The snapshot sits at the same place relative to its struct in both.
        let snap_at = offset_of!(types::mg_tcp, snap);
        let k = c.get(kind::TCP_RCV).unwrap();
        assert_eq!(
            k.field("sport").unwrap().offset as usize,
            snap_at + offset_of!(types::mg_tcp_snap, sport)
        );
        assert_eq!(
            k.field("snd_nxt").unwrap().offset as usize,
            snap_at + offset_of!(types::mg_tcp_snap, snd_nxt)
        );
        assert_eq!(
            k.field("mss_cache").unwrap().offset as usize,
            snap_at + offset_of!(types::mg_tcp_snap, mss_cache)
        );
        let k = c.get(kind::TCP_STATE).unwrap();
        let snap_at = offset_of!(types::mg_tcp_state, snap);
        assert_eq!(
            k.field("write_seq").unwrap().offset as usize,
            snap_at + offset_of!(types::mg_tcp_snap, write_seq)
        );
    }
}
