//! Whole-file reads with a cap: a file given on the
//! command line may be `/dev/zero` or a FIFO that never ends, and reading it
//! whole would take all memory. Past the cap the read stops with one error
//! naming the cap and what it is for.

use std::io::Read;
use std::path::Path;

/// Config files (magnetd's TOML).
pub const CONFIG_MAX: u64 = 1 << 20;
/// Text listings (`available_filter_functions`: about 5 MB on a distribution kernel).
pub const LISTING_MAX: u64 = 256 << 20;
/// Binary inputs read whole: a sample run, a BTF blob or a vmlinux ELF with its
/// debug information.
pub const BLOB_MAX: u64 = 1 << 30;

/// Reads `path` whole, or fails with `InvalidData` past `cap` bytes (`what`
/// names the kind of file in the message: "a config file").
pub fn read_capped(path: &Path, cap: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let hint = f.metadata().map(|m| m.len()).unwrap_or(0);
    if hint > cap {
        return Err(too_large(cap, what));
    }
    let mut out = Vec::with_capacity(hint as usize);
    f.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(too_large(cap, what));
    }
    Ok(out)
}

/// [`read_capped`] for text: not UTF-8 is `InvalidData` too.
pub fn read_capped_string(path: &Path, cap: u64, what: &str) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, cap, what)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

fn too_large(cap: u64, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "larger than {} ({what} is at most that; is this the right file?)",
            size(cap)
        ),
    )
}

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_stops_at_the_cap() {
        let e = read_capped(Path::new("/dev/zero"), 1 << 20, "a config file").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "larger than 1 MiB (a config file is at most that; is this the right file?)"
        );
    }

    #[test]
    fn up_to_the_cap_reads_whole() {
        let d = std::env::temp_dir().join(format!("magnet-input-{}", std::process::id()));
        std::fs::write(&d, vec![7u8; 4096]).unwrap();
        assert_eq!(read_capped(&d, 4096, "x").unwrap().len(), 4096);
        assert!(read_capped(&d, 4095, "x").is_err());
        std::fs::remove_file(&d).unwrap();
    }
}
