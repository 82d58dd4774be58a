//! Which device a frame was on, and which devices `magnet pcap -i` names.
//!
//! A device is its network namespace and its ifindex: every namespace numbers
//! its own devices, so both ends of a veth pair between two new namespaces are
//! ifindex 2, and two containers' devices are both `eth0`. Device records carry
//! only the ifindex; the trace header lists every namespace's devices when the
//! recording began (namespace inode, ifindex, name).

use magnet_trace::{Header, Interface};

/// The devices a trace's header lists (none without a header).
pub fn known(header: Option<&Header>) -> &[Interface] {
    header.map_or(&[], |h| h.interfaces.as_slice())
}

/// One `-i` entry, resolved against the trace's devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfaceSel {
    /// A device the header lists: (namespace inode, ifindex).
    Dev { netns: u64, ifindex: u32 },
    /// A name the header does not list (`ifindex7` for a device that came
    /// later, `ip-ifindex3`), matched against the name its frames get.
    Name(String),
}

/// `NAME@NETNS`: a device named in its namespace (the inode number `lsns -t
/// net` and the interface blocks' descriptions show).
pub fn qualified(i: &Interface) -> String {
    format!("{}@{}", i.name, i.netns)
}

/// Resolves `-i` entries: `NAME` (unique in the trace), `NAME@NETNS`, an
/// ifindex (unique in the trace), or a name frames got without the header
/// (`ifindex7`, `ip-ifindex3`). An entry that fits two devices is an error
/// naming them, one line.
pub fn resolve(known: &[Interface], names: &[String]) -> Result<Vec<IfaceSel>, String> {
    let mut out = Vec::new();
    for n in names {
        let candidates: Vec<&Interface> = if let Some((name, ns)) = n.rsplit_once('@') {
            let ns: u64 = ns.parse().map_err(|_| {
                format!(
                    "-i {n}: after @ comes a network namespace's inode number (as in {})",
                    example(known)
                )
            })?;
            let c: Vec<&Interface> = known
                .iter()
                .filter(|i| i.name == name && i.netns == ns)
                .collect();
            if c.is_empty() {
                return Err(format!(
                    "-i {n}: the trace lists no {name} in network namespace {ns} ({})",
                    listing(known)
                ));
            }
            c
        } else if let Ok(ifindex) = n.parse::<u32>() {
            known.iter().filter(|i| i.ifindex == ifindex).collect()
        } else {
            known.iter().filter(|i| i.name == *n).collect()
        };
        match candidates.as_slice() {
            [] => out.push(IfaceSel::Name(n.clone())),
            [one] => out.push(IfaceSel::Dev {
                netns: one.netns,
                ifindex: one.ifindex,
            }),
            many => {
                let list: Vec<String> = many
                    .iter()
                    .map(|i| format!("{} (ifindex {})", qualified(i), i.ifindex))
                    .collect();
                return Err(format!(
                    "-i {n} names {} devices, one per network namespace: {}; name one as NAME@NETNS",
                    many.len(),
                    list.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

fn example(known: &[Interface]) -> String {
    known.first().map_or("eth0@4026531840".into(), qualified)
}

fn listing(known: &[Interface]) -> String {
    if known.is_empty() {
        return "its header lists no devices".into();
    }
    let all: Vec<String> = known.iter().map(qualified).collect();
    format!("it lists {}", all.join(", "))
}

/// Whether a frame on device (`netns`, `ifindex`) (`netns` 0: not known),
/// named `name` in the file, is one `sel` asks for. A frame whose namespace
/// is not known is on the selected device when no other device the trace
/// lists has its ifindex.
pub fn selects(
    sel: &[IfaceSel],
    known: &[Interface],
    netns: u64,
    ifindex: u32,
    name: &str,
) -> bool {
    sel.iter().any(|s| match s {
        IfaceSel::Dev {
            netns: n,
            ifindex: i,
        } if *i == ifindex => {
            *n == netns
                || (netns == 0 && known.iter().all(|f| f.ifindex != ifindex || f.netns == *n))
        }
        IfaceSel::Dev { .. } => false,
        IfaceSel::Name(want) => want == name,
    })
}

/// The device's namespace: `netns` when the header lists (`netns`, `ifindex`); else
/// the only namespace the header has an `ifindex` in; else 0.
pub fn device_netns(known: &[Interface], netns: Option<u64>, ifindex: u32) -> u64 {
    if known.is_empty() {
        return netns.unwrap_or(0);
    }
    let mut with = known.iter().filter(|f| f.ifindex == ifindex);
    if let Some(ns) = netns.filter(|&ns| ns != 0) {
        if known.iter().any(|f| f.ifindex == ifindex && f.netns == ns) {
            return ns;
        }
    }
    match (with.next(), with.next()) {
        (Some(only), None) => only.netns,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ifs: &[(u64, u32, &str)]) -> Vec<Interface> {
        ifs.iter()
            .map(|&(netns, ifindex, name)| Interface {
                netns,
                ifindex,
                name: name.into(),
                later: false,
            })
            .collect()
    }

    #[test]
    fn a_name_two_namespaces_share_is_refused_with_both_named() {
        let h = header(&[
            (10, 1, "lo"),
            (10, 2, "eth0"),
            (20, 1, "lo"),
            (20, 2, "eth0"),
            (20, 3, "veth1"),
        ]);
        let e = resolve(&h, &["eth0".into()]).unwrap_err();
        assert_eq!(
            e,
            "-i eth0 names 2 devices, one per network namespace: eth0@10 (ifindex 2), eth0@20 (ifindex 2); name one as NAME@NETNS"
        );
        assert!(!e.contains('\n'));
        assert!(resolve(&h, &["2".into()]).is_err());
        assert_eq!(
            resolve(
                &h,
                &[
                    "eth0@20".into(),
                    "veth1".into(),
                    "3".into(),
                    "ifindex9".into()
                ]
            )
            .unwrap(),
            vec![
                IfaceSel::Dev {
                    netns: 20,
                    ifindex: 2
                },
                IfaceSel::Dev {
                    netns: 20,
                    ifindex: 3
                },
                IfaceSel::Dev {
                    netns: 20,
                    ifindex: 3
                },
                IfaceSel::Name("ifindex9".into()),
            ]
        );
        let e = resolve(&h, &["eth0@30".into()]).unwrap_err();
        assert!(
            e.starts_with("-i eth0@30: the trace lists no eth0 in network namespace 30"),
            "{e}"
        );
        assert!(resolve(&h, &["eth0@x".into()]).is_err());
    }

    #[test]
    fn a_frame_is_on_the_selected_device_only_in_its_namespace() {
        let h = header(&[(10, 2, "a"), (20, 2, "b"), (20, 3, "c")]);
        let sel = resolve(&h, &["a".into()]).unwrap();
        assert!(selects(&sel, &h, 10, 2, "a"));
        assert!(!selects(&sel, &h, 20, 2, "b"));
        // Namespace not known: ifindex 2 is in two namespaces, so not this one.
        assert!(!selects(&sel, &h, 0, 2, "ifindex2"));
        let sel = resolve(&h, &["c".into()]).unwrap();
        assert!(selects(&sel, &h, 0, 3, "c"));
        assert_eq!(device_netns(&h, Some(20), 2), 20);
        assert_eq!(device_netns(&h, Some(10), 3), 20);
        assert_eq!(device_netns(&h, None, 2), 0);
        assert_eq!(device_netns(&h, Some(30), 7), 0);
    }
}
