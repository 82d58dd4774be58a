//! The send path's families: per selected connection, how its send path is
//! timed, and its stages (TX timestamp callbacks) as histograms.

use super::connections::{connection_labels, write_histogram};
use super::Out;
use magnet_client::Connection;

/// The method of each selected connection, and the stage histograms of
/// those timed by TX timestamps.
pub(super) fn write_stages(o: &mut Out, selected: &[Connection]) {
    o.family(
        "magnet_connection_send_latency_method",
        "gauge",
        None,
        "1 for the method that times this connection's send path: tx_timestamps (every send call, the kernel's TX timestamp callbacks: magnet_connection_send_stage_seconds), sampled (magnet_connection_app_to_wire_seconds only) or off.",
    );
    for c in selected {
        let cookie = c.cookie.to_string();
        let uid = c.uid.to_string();
        let mut l = connection_labels(c, &cookie, &uid);
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
        let Some(s) = &c.latency.stages else {
            continue;
        };
        let cookie = c.cookie.to_string();
        let uid = c.uid.to_string();
        for (stage, slots) in s.named() {
            let mut l = connection_labels(c, &cookie, &uid);
            l.push(("stage", stage));
            write_histogram(o, name, &l, slots);
        }
    }
}
