//! The send path's families: per selected connection, how its send path is
//! timed, and its stages (TX timestamp callbacks) as histograms.

use super::connections::{identity, write_histogram};
use super::Out;
use std::collections::BTreeMap;

use crate::daemon::Shared;
use magnet_client::{Connection, ReceiveStages, SendStages};

/// The method of each selected connection, and the stage histograms of
/// those timed by TX timestamps.
pub(super) fn write_stages(o: &mut Out, selected: &[Connection]) {
    o.family(
        "magnet_connection_send_latency_method",
        "gauge",
        None,
        "1 for the method that times this connection's send path: tx_timestamps (one send call in send_stages_every, the kernel's TX timestamp callbacks: magnet_connection_send_stage_seconds), sampled (magnet_connection_app_to_wire_seconds only) or off.",
    );
    for c in selected {
        let owned = identity(c);
        let mut l: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        l.push(("method", c.latency.method.as_str()));
        o.sample("magnet_connection_send_latency_method", &l, 1);
    }
    let name = "magnet_connection_send_stage_seconds";
    o.family(
        name,
        "histogram",
        Some("seconds"),
        "Each send call's last byte through the send path, by stage: to_qdisc (call start to the device's queue), qdisc_to_device (queue to driver), device_to_ack (driver to its ACK), send_to_ack (call start to the ACK); buckets of log2 microseconds; only connections whose method is tx_timestamps.",
    );
    for c in selected {
        if let Some(s) = &c.latency.stages {
            write_by_stage(o, name, c, &s.named());
        }
    }
}

/// One histogram per stage of connection `c`, labelled with its identity.
fn write_by_stage(o: &mut Out, name: &str, c: &Connection, stages: &[(&str, &[u64])]) {
    let owned = identity(c);
    for (stage, slots) in stages {
        let mut l: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        l.push(("stage", stage));
        write_histogram(o, name, &l, slots);
    }
}

/// The receive stage histograms of each selected connection that has any.
pub(super) fn write_receive_stages(o: &mut Out, selected: &[Connection]) {
    let name = "magnet_connection_receive_stage_seconds";
    o.family(
        name,
        "histogram",
        Some("seconds"),
        "A sample of the connection's TCP data packets (one in receive_stages_every per CPU) through the receive path, by stage: device_to_queue (the kernel's receive stamp to TCP queueing it on the socket), queue_to_read (to the return of the read that got its last byte), device_to_read (both); buckets of log2 microseconds; only connections with a sampled packet read (/health receive_latency rx_stamps).",
    );
    for c in selected {
        if let Some(s) = &c.latency.receive {
            write_by_stage(o, name, c, &s.named());
        }
    }
}

/// Cgroups with per-cgroup stage series, at most.
const MAX_CGROUP_SERIES: usize = 256;

/// The stage histograms per cgroup (`by`: cgroup id → its connections'
/// stages, reaped ones included), labelled with the cgroup's container.
pub(super) fn write_cgroup_stages(o: &mut Out, shared: &Shared, by: &BTreeMap<u64, SendStages>) {
    let name = "magnet_cgroup_send_stage_seconds";
    o.family(
        name,
        "histogram",
        Some("seconds"),
        "magnet_connection_send_stage_seconds summed over the connections whose last caller is in this cgroup, reaped connections included (every connection timed by TX timestamps, not only those [metrics] selects).",
    );
    let rows = by.iter().map(|(c, s)| (*c, s.named().to_vec()));
    write_per_cgroup(o, shared, name, rows);
}

/// The receive stage histograms per cgroup, as [`write_cgroup_stages`].
pub(super) fn write_cgroup_receive(
    o: &mut Out,
    shared: &Shared,
    by: &BTreeMap<u64, ReceiveStages>,
) {
    let name = "magnet_cgroup_receive_stage_seconds";
    o.family(
        name,
        "histogram",
        Some("seconds"),
        "magnet_connection_receive_stage_seconds summed over the connections whose last caller is in this cgroup, reaped connections included (every connection with sampled packets, not only those [metrics] selects).",
    );
    let rows = by.iter().map(|(c, s)| (*c, s.named().to_vec()));
    write_per_cgroup(o, shared, name, rows);
}

/// One histogram per cgroup and stage (`rows`: cgroup id → its stages), at
/// most MAX_CGROUP_SERIES cgroups, labelled with the cgroup's container.
fn write_per_cgroup<'a>(
    o: &mut Out,
    shared: &Shared,
    name: &str,
    rows: impl Iterator<Item = (u64, Vec<(&'static str, &'a [u64])>)>,
) {
    for (cgroup, stages) in rows.take(MAX_CGROUP_SERIES) {
        let id = cgroup.to_string();
        let container = shared
            .label(Connection {
                cgroup_id: cgroup,
                ..Connection::default()
            })
            .container
            .unwrap_or_default();
        for (stage, slots) in stages {
            let l = [
                ("cgroup", id.as_str()),
                ("container", container.as_str()),
                ("stage", stage),
            ];
            write_histogram(o, name, &l, slots);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magnet_client::Latency;

    fn conn(cookie: u64, method: &str, stages: Option<SendStages>) -> Connection {
        Connection {
            cookie,
            protocol: "tcp".into(),
            latency: Latency {
                method: method.into(),
                stages,
                ..Latency::default()
            },
            ..Connection::default()
        }
    }

    /// Each connection names its method; only those timed by TX timestamps
    /// have stage histograms, one per stage, cumulative up to +Inf.
    #[test]
    fn stages_are_histograms_by_stage_and_the_method_a_label() {
        let timed = conn(
            7,
            "tx_timestamps",
            Some(SendStages {
                sends: 3,
                sample_every: 1,
                unmatched: 0,
                to_qdisc: vec![2, 1],
                qdisc_to_device: vec![3],
                device_to_ack: vec![0, 0, 3],
                send_to_ack: vec![0, 0, 1, 2],
            }),
        );
        let sampled = conn(8, "sampled", None);
        let mut o = Out(String::new());
        write_stages(&mut o, &[timed, sampled]);
        let t = o.0;
        let l = |cookie: u64| {
            format!(
                "cookie=\"{cookie}\",protocol=\"tcp\",local=\"\",remote=\"\",comm=\"\",uid=\"0\",container=\"\""
            )
        };
        for want in [
            format!(
                "magnet_connection_send_latency_method{{{},method=\"tx_timestamps\"}} 1\n",
                l(7)
            ),
            format!(
                "magnet_connection_send_latency_method{{{},method=\"sampled\"}} 1\n",
                l(8)
            ),
            format!(
                "magnet_connection_send_stage_seconds_bucket{{{},stage=\"to_qdisc\",le=\"2e-6\"}} 2\n",
                l(7)
            ),
            format!(
                "magnet_connection_send_stage_seconds_bucket{{{},stage=\"to_qdisc\",le=\"4e-6\"}} 3\n",
                l(7)
            ),
            format!(
                "magnet_connection_send_stage_seconds_bucket{{{},stage=\"send_to_ack\",le=\"+Inf\"}} 3\n",
                l(7)
            ),
            format!(
                "magnet_connection_send_stage_seconds_count{{{},stage=\"device_to_ack\"}} 3\n",
                l(7)
            ),
            "# TYPE magnet_connection_send_stage_seconds histogram\n".to_string(),
        ] {
            assert!(t.contains(&want), "{want} in\n{t}");
        }
        assert!(
            !t.contains(&format!("send_stage_seconds_count{{{}", l(8))),
            "{t}"
        );
        assert_eq!(t.matches("_count{").count(), 4, "{t}");
    }

    /// Receive stages are histograms by stage, only for connections that
    /// have them.
    #[test]
    fn receive_stages_are_histograms_by_stage() {
        let mut timed = conn(7, "tx_timestamps", None);
        timed.latency.receive = Some(magnet_client::ReceiveStages {
            packets: 2,
            sample_every: 16,
            device_to_queue: vec![2],
            queue_to_read: vec![0, 1, 1],
            device_to_read: vec![0, 0, 2],
            ..Default::default()
        });
        let mut o = Out(String::new());
        write_receive_stages(&mut o, &[timed, conn(8, "sampled", None)]);
        let t = o.0;
        for want in [
            "# TYPE magnet_connection_receive_stage_seconds histogram\n",
            "stage=\"queue_to_read\",le=\"4e-6\"} 1\n",
            "stage=\"queue_to_read\",le=\"8e-6\"} 2\n",
            "stage=\"device_to_read\",le=\"+Inf\"} 2\n",
        ] {
            assert!(t.contains(want), "{want} in\n{t}");
        }
        assert_eq!(t.matches("_count{").count(), 3, "{t}");
        assert!(!t.contains("cookie=\"8\""), "{t}");
    }
}
