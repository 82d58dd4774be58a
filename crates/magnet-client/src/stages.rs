//! The send and receive paths in stages (`latency.stages`,
//! `latency.receive`).

use serde::{Deserialize, Serialize};

/// The receive path of a sample of TCP data packets (one in `sample_every`
/// per CPU): from the kernel's receive stamp on the skb (the device, or IP
/// delivery for traffic from the same host), to TCP queueing it on the
/// socket, to the read call that returned its last byte. Histograms in the
/// same log2-µs slots as [`Latency`](crate::Latency)'s.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ReceiveStages {
    /// Sampled packets whose read was seen (`queue_to_read`'s count).
    pub packets: u64,
    /// magnetd times one data packet in this many per CPU
    /// (`receive_stages_every`; 1: every packet).
    pub sample_every: u32,
    /// Of `packets`, those without the kernel's receive stamp (only
    /// `queue_to_read` has them).
    pub unstamped: u64,
    /// Sampled packets never seen read (pushed out of the socket's ring
    /// of 32 pending ones, or read some other way such as splice).
    pub lost: u64,
    /// Receive stamp → TCP queues the packet on the socket.
    pub device_to_queue: Vec<u64>,
    /// Queued → the read call that returned its last byte returns.
    pub queue_to_read: Vec<u64>,
    /// Receive stamp → that read's return.
    pub device_to_read: Vec<u64>,
}

impl ReceiveStages {
    /// The stages by name, in path order.
    pub fn named(&self) -> [(&'static str, &[u64]); 3] {
        [
            ("device_to_queue", &self.device_to_queue),
            ("queue_to_read", &self.queue_to_read),
            ("device_to_read", &self.device_to_read),
        ]
    }
}

/// The send path of a sample of send calls (one in `sample_every`), in stages, from the kernel's TX
/// timestamp callbacks (Linux 6.15+) at the call's last byte: histograms in
/// the same log2-µs slots as [`Latency`](crate::Latency)'s.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SendStages {
    /// Send calls stamped: one in `sample_every` of the connection's send
    /// calls (the histograms are that sample).
    pub sends: u64,
    /// magnetd times one send call in this many per connection
    /// (`send_stages_every`; 1: every call).
    #[serde(default)]
    pub sample_every: u32,
    /// Stamps whose send call was no longer known (its pending entry was
    /// evicted, or its last byte was merged into a later call's).
    pub unmatched: u64,
    /// From the start of the send call to its last byte reaching the
    /// device's queue (qdisc): TCP/IP.
    pub to_qdisc: Vec<u64>,
    /// From the queue to the driver (the qdisc's own delay).
    pub qdisc_to_device: Vec<u64>,
    /// From the driver to the ACK of the last byte (the network and the
    /// peer).
    pub device_to_ack: Vec<u64>,
    /// From the start of the send call to the ACK of its last byte.
    pub send_to_ack: Vec<u64>,
}

impl SendStages {
    /// The stages by name, in path order.
    pub fn named(&self) -> [(&'static str, &[u64]); 4] {
        [
            ("to_qdisc", &self.to_qdisc),
            ("qdisc_to_device", &self.qdisc_to_device),
            ("device_to_ack", &self.device_to_ack),
            ("send_to_ack", &self.send_to_ack),
        ]
    }
}
