//! `record --snaplen`: what the BPF side needs to read a frame's bytes that lie
//! in the skb's page fragments (most TCP payload: GSO, sendfile, page frags).
//!
//! A tp_btf program cannot call `bpf_skb_load_bytes`; it reads a fragment as
//! `page_address()` would, which needs the kernel's direct-map base. That base
//! is randomised (KASLR) in 1 GiB steps and is not readable where the kernel
//! lists no data symbols (6.18 without `CONFIG_KALLSYMS_ALL`). So user space
//! marks one page with a random pattern and tells the BPF side its page frame
//! number (from `/proc/self/pagemap`, root only); the BPF side finds the 1 GiB
//! step at which the direct map shows that pattern (`frag_base()` in
//! record.bpf.c). The page stays mapped and locked while the recording runs.

use std::hash::{BuildHasher, Hasher};

/// The BPF side derives a page's frame number from the page pointer modulo
/// 1 GiB: right while the highest frame number times `sizeof(struct page)`
/// (64, at most 80 with debug options) is below 1 GiB, i.e. RAM below 32 GiB.
/// It also looks for the direct-map base at most this far below an address.
const RAM_LIMIT: u64 = 32 << 30;

/// One locked page holding `mark`, at page frame `pfn`.
pub(super) struct PageMark {
    addr: *mut libc::c_void,
    pub pfn: u64,
    pub mark: [u64; 2],
}

impl PageMark {
    /// The marked page, or why fragments cannot be read on this host.
    pub(super) fn new() -> Result<PageMark, String> {
        let top = ram_top().ok_or("/proc/iomem lists no System RAM addresses (needs root)")?;
        if top > RAM_LIMIT {
            return Err(format!(
                "RAM reaches {:#x}, above the {} GiB this reader handles",
                top,
                RAM_LIMIT >> 30
            ));
        }
        // SAFETY: an anonymous private mapping of one page, checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        let mut page = PageMark {
            addr,
            pfn: 0,
            mark: random_mark(addr as u64),
        };
        // SAFETY: the page is ours, 4096 bytes, writable.
        unsafe {
            std::ptr::copy_nonoverlapping(page.mark.as_ptr() as *const u8, addr as *mut u8, 16);
            if libc::mlock(addr, 4096) != 0 {
                return Err(format!("mlock: {}", std::io::Error::last_os_error()));
            }
        }
        page.pfn = pfn_of(addr as u64)?;
        Ok(page)
    }
}

impl Drop for PageMark {
    fn drop(&mut self) {
        // SAFETY: mapped in new(), unmapped once here.
        unsafe {
            libc::munmap(self.addr, 4096);
        }
    }
}

/// Two non-zero random words (std's per-process random hasher keys).
fn random_mark(salt: u64) -> [u64; 2] {
    let word = |n: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt ^ n);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish() | 1
    };
    [word(0x6d61_676e), word(0x6672_6167)]
}

/// The end of the highest "System RAM" range in /proc/iomem (zero addresses,
/// as non-root readers see them, give None).
fn ram_top() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/iomem").ok()?;
    parse_ram_top(&text)
}

fn parse_ram_top(text: &str) -> Option<u64> {
    text.lines()
        .filter(|l| l.ends_with(": System RAM"))
        .filter_map(|l| {
            let range = l.trim_start().split(' ').next()?;
            let (_, end) = range.split_once('-')?;
            u64::from_str_radix(end, 16).ok()
        })
        .filter(|&end| end > 0)
        .max()
}

/// The page frame number behind a virtual address of this process.
fn pfn_of(addr: u64) -> Result<u64, String> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open("/proc/self/pagemap")
        .map_err(|e| format!("/proc/self/pagemap: {e}"))?;
    let mut entry = [0u8; 8];
    f.read_exact_at(&mut entry, addr / 4096 * 8)
        .map_err(|e| format!("/proc/self/pagemap: {e}"))?;
    let entry = u64::from_le_bytes(entry);
    let pfn = entry & ((1 << 55) - 1);
    if entry >> 63 == 0 || pfn == 0 {
        return Err(
            "/proc/self/pagemap gives no page frame numbers (needs CAP_SYS_ADMIN)".to_string(),
        );
    }
    Ok(pfn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_top_from_iomem() {
        let text = "00000000-00000fff : Reserved\n\
                    00001000-0009fbff : System RAM\n\
                    00100000-bfffffff : System RAM\n  \
                    01000000-01ffffff : Kernel code\n\
                    100000000-63fffffff : System RAM\n\
                    fec00000-fec003ff : PNP0003:00\n";
        assert_eq!(parse_ram_top(text), Some(0x6_3fff_ffff));
        // As a non-root reader sees it.
        assert_eq!(parse_ram_top("00000000-00000000 : System RAM\n"), None);
        assert_eq!(parse_ram_top(""), None);
    }
}
