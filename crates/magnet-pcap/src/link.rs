//! The link layer of a captured frame: which link types magnet decodes, and where the
//! network-layer header of a frame of those types starts. One definition for every
//! reader of captures (RPC decoding, matching frames to the kernel's packets).

use crate::linktype as lt;

/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// Ethertype of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;

/// Whether frames of `linktype` are decoded: Ethernet (with up to two 802.1Q/802.1ad
/// tags), Linux cooked v1/v2, raw IP, BSD loopback. Frames of any other type are
/// counted as not decoded by every reader, never read as empty.
pub fn decoded(linktype: u32) -> bool {
    matches!(
        linktype,
        lt::ETHERNET
            | lt::LINUX_SLL
            | lt::LINUX_SLL2
            | lt::RAW
            | lt::RAW_ALT
            | lt::RAW_ALT2
            | lt::IPV4
            | lt::IPV6
            | lt::NULL
            | lt::LOOP
    )
}

/// The ethertype and the network-layer bytes of a frame of link type `linktype`, or
/// `None` when the frame is too short, its type is not [`decoded`], or a raw-IP or
/// loopback frame names no IP version or family.
pub fn network(linktype: u32, d: &[u8]) -> Option<(u16, &[u8])> {
    let be16 = |at: usize| Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]));
    match linktype {
        lt::ETHERNET => {
            let mut et = be16(12)?;
            let mut at = 14;
            // 802.1Q / 802.1ad tags: at most two (QinQ).
            for _ in 0..2 {
                if matches!(et, 0x8100 | 0x88a8) {
                    et = be16(at + 2)?;
                    at += 4;
                }
            }
            Some((et, d.get(at..)?))
        }
        lt::LINUX_SLL => Some((be16(14)?, d.get(16..)?)),
        lt::LINUX_SLL2 => Some((be16(0)?, d.get(20..)?)),
        lt::RAW | lt::RAW_ALT | lt::RAW_ALT2 | lt::IPV4 | lt::IPV6 => match d.first()? >> 4 {
            4 => Some((ETHERTYPE_IPV4, d)),
            6 => Some((ETHERTYPE_IPV6, d)),
            _ => None,
        },
        lt::NULL | lt::LOOP => {
            // The family in the writer's byte order (NULL) or network order (LOOP);
            // files of either kind exist with the other, so take the smaller reading.
            let fam: [u8; 4] = d.get(0..4)?.try_into().ok()?;
            let fam = u32::from_le_bytes(fam).min(u32::from_be_bytes(fam));
            let rest = d.get(4..)?;
            match fam {
                2 => Some((ETHERTYPE_IPV4, rest)),
                // AF_INET6 as Linux, NetBSD/OpenBSD, FreeBSD and macOS number it.
                10 | 24 | 28 | 30 => Some((ETHERTYPE_IPV6, rest)),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_link_type_finds_its_network_header() {
        let ip4 = [0x45u8, 0, 0, 20];
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x81, 0x00, 0, 1, 0x08, 0x00]);
        eth.extend_from_slice(&ip4);
        assert_eq!(
            network(lt::ETHERNET, &eth),
            Some((ETHERTYPE_IPV4, &ip4[..]))
        );
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(&ip4);
        assert_eq!(network(lt::NULL, &null), Some((ETHERTYPE_IPV4, &ip4[..])));
        let mut lo = 30u32.to_be_bytes().to_vec();
        lo.push(0x60);
        assert_eq!(network(lt::LOOP, &lo).map(|n| n.0), Some(ETHERTYPE_IPV6));
        assert_eq!(network(lt::RAW, &[0x10]), None);
        assert_eq!(network(lt::ETHERNET, &eth[..13]), None);
        assert!(!decoded(147) && network(147, &eth).is_none());
    }
}
