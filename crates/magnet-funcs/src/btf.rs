//! A small reader of the kernel's BTF (BPF Type Format): the types, the
//! functions and their prototypes, nothing else. It reads raw BTF
//! (`/sys/kernel/btf/vmlinux`), an ELF file with a `.BTF` section (a vmlinux or
//! a module's `.ko`), and split BTF (modules, whose ids and strings continue
//! those of vmlinux). Every error names the input, the byte offset and why.

use std::path::Path;

use crate::error::{FuncsError, Result};

const MAGIC: u16 = 0xeb9f;

/// The kinds of BTF type (`BTF_KIND_*`), with unknown numbers kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Void,
    Int,
    Ptr,
    Array,
    Struct,
    Union,
    Enum,
    Fwd,
    Typedef,
    Volatile,
    Const,
    Restrict,
    Func,
    FuncProto,
    Var,
    Datasec,
    Float,
    DeclTag,
    TypeTag,
    Enum64,
    Unknown(u8),
}

impl Kind {
    fn from_u8(k: u8) -> Kind {
        use Kind::*;
        match k {
            0 => Void,
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            n => Unknown(n),
        }
    }
}

/// One member of a struct or union, or one parameter of a prototype.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    pub name: u32,
    pub ty: u32,
}

/// One BTF type. `ty` is the referenced type for pointers, typedefs,
/// modifiers, arrays (element), functions (prototype) and prototypes (return).
#[derive(Clone, Debug)]
pub struct Type {
    pub kind: Kind,
    pub name: u32,
    pub ty: u32,
    pub members: Box<[Member]>,
    /// Index into `Btf::units` of the blob this type came from.
    pub unit: u16,
}

/// A parsed BTF: vmlinux and any modules on top of it.
pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
    /// Names of the blobs read ("vmlinux", module names), by `Type::unit`.
    pub units: Vec<String>,
    base_types: u32,
    base_strings: u32,
}

struct Cursor<'a> {
    what: &'a str,
    bytes: &'a [u8],
    /// Offset of `bytes[0]` in the whole input, for error messages.
    base: usize,
    at: usize,
}

impl Cursor<'_> {
    fn u32(&mut self) -> Result<u32> {
        let b = self
            .bytes
            .get(self.at..self.at + 4)
            .ok_or_else(|| FuncsError::Btf {
                what: self.what.to_string(),
                offset: self.base + self.at,
                reason: "type section ends inside a type".into(),
            })?;
        self.at += 4;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn skip(&mut self, n: usize) -> Result<()> {
        if self.at + n > self.bytes.len() {
            return Err(FuncsError::Btf {
                what: self.what.to_string(),
                offset: self.base + self.at,
                reason: format!("type section ends inside a type ({n} more bytes needed)"),
            });
        }
        self.at += n;
        Ok(())
    }
}

fn err(what: &str, offset: usize, reason: impl Into<String>) -> FuncsError {
    FuncsError::Btf {
        what: what.to_string(),
        offset,
        reason: reason.into(),
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The `.BTF` section of a 64-bit little-endian ELF file, or the bytes
/// themselves when they are raw BTF.
pub fn btf_bytes<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a [u8]> {
    if bytes.len() >= 2 && u16_at(bytes, 0) == Some(MAGIC) {
        return Ok(bytes);
    }
    if !bytes.starts_with(b"\x7fELF") {
        return Err(FuncsError::Elf {
            path: path.into(),
            offset: 0,
            reason: "neither BTF (magic 0xeb9f) nor ELF".into(),
        });
    }
    let elf = |offset: usize, reason: &str| FuncsError::Elf {
        path: path.into(),
        offset,
        reason: reason.into(),
    };
    if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
        return Err(elf(4, "only 64-bit little-endian ELF is supported"));
    }
    let shoff = u64_at(bytes, 0x28).ok_or_else(|| elf(0x28, "header cut short"))? as usize;
    let shentsize = u16_at(bytes, 0x3a).ok_or_else(|| elf(0x3a, "header cut short"))? as usize;
    let shnum = u16_at(bytes, 0x3c).ok_or_else(|| elf(0x3c, "header cut short"))? as usize;
    let shstrndx = u16_at(bytes, 0x3e).ok_or_else(|| elf(0x3e, "header cut short"))? as usize;
    if shentsize < 0x28 {
        return Err(elf(0x3a, "section header entries too small"));
    }
    let section = |i: usize| -> Result<(u32, usize, usize)> {
        let at = shoff
            .checked_add(
                i.checked_mul(shentsize)
                    .ok_or_else(|| elf(shoff, "overflow"))?,
            )
            .ok_or_else(|| elf(shoff, "section header offset overflows"))?;
        let name = u32_at(bytes, at).ok_or_else(|| elf(at, "section header past the end"))?;
        let off = u64_at(bytes, at + 0x18).ok_or_else(|| elf(at, "section header past the end"))?;
        let size =
            u64_at(bytes, at + 0x20).ok_or_else(|| elf(at, "section header past the end"))?;
        Ok((name, off as usize, size as usize))
    };
    let (_, stroff, strsize) = section(shstrndx)?;
    let names = bytes
        .get(stroff..stroff.saturating_add(strsize))
        .ok_or_else(|| elf(stroff, "section name table past the end"))?;
    for i in 0..shnum {
        let (name, off, size) = section(i)?;
        let n = names.get(name as usize..).unwrap_or(&[]);
        if n.starts_with(b".BTF\0") {
            return bytes
                .get(off..off.saturating_add(size))
                .ok_or_else(|| elf(off, ".BTF section past the end of the file"));
        }
    }
    Err(elf(
        shoff,
        "no .BTF section (kernel built without CONFIG_DEBUG_INFO_BTF?)",
    ))
}

struct Parsed {
    types: Vec<Type>,
    strings: Vec<u8>,
}

/// Parses one blob. Type ids in it start at `first_id`; ids and string offsets
/// below the base's counts refer to the base and are kept as they are, the
/// others are moved to where this blob's types and strings will be stored.
fn parse_blob(
    what: &str,
    b: &[u8],
    first_id: u32,
    base_strings: u32,
    id_shift: u32,
    str_shift: u32,
    unit: u16,
) -> Result<Parsed> {
    if u16_at(b, 0) != Some(MAGIC) {
        return Err(err(what, 0, "bad magic (not BTF)"));
    }
    let hdr_len = u32_at(b, 4).ok_or_else(|| err(what, 4, "header cut short"))? as usize;
    let field = |at: usize| u32_at(b, at).ok_or_else(|| err(what, at, "header cut short"));
    let (type_off, type_len, str_off, str_len) = (
        field(8)? as usize,
        field(12)? as usize,
        field(16)? as usize,
        field(20)? as usize,
    );
    let tstart = hdr_len.saturating_add(type_off);
    let types_bytes = b
        .get(tstart..tstart.saturating_add(type_len))
        .ok_or_else(|| err(what, tstart, "type section past the end"))?;
    let sstart = hdr_len.saturating_add(str_off);
    let strings = b
        .get(sstart..sstart.saturating_add(str_len))
        .ok_or_else(|| err(what, sstart, "string section past the end"))?
        .to_vec();
    let fix_id = |id: u32| if id >= first_id { id + id_shift } else { id };
    let fix_str = |off: u32| {
        if off >= base_strings && base_strings > 0 {
            off - base_strings + str_shift
        } else {
            off
        }
    };
    let mut c = Cursor {
        what,
        bytes: types_bytes,
        base: tstart,
        at: 0,
    };
    let mut types = Vec::new();
    while c.at < types_bytes.len() {
        types.push(read_type(&mut c, &fix_id, &fix_str, unit)?);
    }
    Ok(Parsed { types, strings })
}

/// Reads one type at the cursor, its ids and string offsets moved by
/// `fix_id` and `fix_str` (see [`parse_blob`]). A kind this parser does not
/// know cannot be stepped over: its length is unknown.
fn read_type(
    c: &mut Cursor<'_>,
    fix_id: &dyn Fn(u32) -> u32,
    fix_str: &dyn Fn(u32) -> u32,
    unit: u16,
) -> Result<Type> {
    let start = c.at;
    let name = fix_str(c.u32()?);
    let info = c.u32()?;
    let size_type = c.u32()?;
    let vlen = (info & 0xffff) as usize;
    let kind = Kind::from_u8(((info >> 24) & 0x1f) as u8);
    let mut ty = 0;
    let mut members = Vec::new();
    match kind {
        Kind::Int => c.skip(4)?,
        Kind::Ptr
        | Kind::Typedef
        | Kind::Volatile
        | Kind::Const
        | Kind::Restrict
        | Kind::Func
        | Kind::TypeTag => ty = fix_id(size_type),
        Kind::Var => {
            ty = fix_id(size_type);
            c.skip(4)?
        }
        Kind::DeclTag => {
            ty = fix_id(size_type);
            c.skip(4)?
        }
        Kind::Array => {
            ty = fix_id(c.u32()?);
            c.skip(8)?
        }
        Kind::Struct | Kind::Union => {
            members.reserve(vlen);
            for _ in 0..vlen {
                let mname = fix_str(c.u32()?);
                let mty = fix_id(c.u32()?);
                c.skip(4)?;
                members.push(Member {
                    name: mname,
                    ty: mty,
                });
            }
        }
        Kind::FuncProto => {
            ty = fix_id(size_type);
            members.reserve(vlen);
            for _ in 0..vlen {
                let pname = fix_str(c.u32()?);
                let pty = fix_id(c.u32()?);
                members.push(Member {
                    name: pname,
                    ty: pty,
                });
            }
        }
        Kind::Enum => c.skip(8 * vlen)?,
        Kind::Enum64 => c.skip(12 * vlen)?,
        Kind::Datasec => c.skip(12 * vlen)?,
        Kind::Fwd | Kind::Float | Kind::Void => {}
        Kind::Unknown(k) => {
            return Err(err(
                c.what,
                c.base + start,
                format!("type kind {k} unknown to this magnet; cannot step over it"),
            ))
        }
    }
    Ok(Type {
        kind,
        name,
        ty,
        members: members.into_boxed_slice(),
        unit,
    })
}

impl Btf {
    /// Parses a base BTF (vmlinux): raw BTF or an ELF file holding it.
    pub fn parse(what: &str, bytes: &[u8]) -> Result<Btf> {
        let p = parse_blob(what, bytes, 1, 0, 0, 0, 0)?;
        let mut types = Vec::with_capacity(p.types.len() + 1);
        types.push(Type {
            kind: Kind::Void,
            name: 0,
            ty: 0,
            members: Box::new([]),
            unit: 0,
        });
        types.extend(p.types);
        let base_types = types.len() as u32;
        let base_strings = p.strings.len() as u32;
        Ok(Btf {
            types,
            strings: p.strings,
            units: vec!["vmlinux".to_string()],
            base_types,
            base_strings,
        })
    }

    /// Reads a base BTF from a file (raw BTF or ELF with a `.BTF` section).
    pub fn from_file(path: &Path) -> Result<Btf> {
        let bytes =
            magnet_common::input::read_capped(path, magnet_common::input::BLOB_MAX, "a BTF file")
                .map_err(|e| FuncsError::io(path, e))?;
        let raw = btf_bytes(path, &bytes)?;
        Btf::parse(&path.display().to_string(), raw)
    }

    /// Adds a module's split BTF (its ids and strings continue the base's).
    pub fn add_split(&mut self, unit_name: &str, bytes: &[u8]) -> Result<()> {
        let unit = u16::try_from(self.units.len())
            .map_err(|_| FuncsError::Other("more than 65535 BTF blobs".into()))?;
        let id_shift = self.types.len() as u32 - self.base_types;
        let str_shift = self.strings.len() as u32;
        let p = parse_blob(
            unit_name,
            bytes,
            self.base_types,
            self.base_strings,
            id_shift,
            str_shift,
            unit,
        )?;
        self.types.extend(p.types);
        self.strings.extend(p.strings);
        self.units.push(unit_name.to_string());
        Ok(())
    }

    /// Adds a module's split BTF from a file: raw BTF (/sys/kernel/btf/MOD) or
    /// the module itself (`.ko`, its `.BTF` section). The unit is named after
    /// the file (`veth.ko.xz` -> `veth`).
    pub fn add_split_file(&mut self, path: &Path) -> Result<()> {
        let bytes =
            magnet_common::input::read_capped(path, magnet_common::input::BLOB_MAX, "a BTF file")
                .map_err(|e| FuncsError::io(path, e))?;
        let raw = btf_bytes(path, &bytes)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let unit = name.split('.').next().unwrap_or(&name).to_string();
        self.add_split(&unit, raw).map_err(|e| match e {
            FuncsError::Btf { offset, reason, .. } => FuncsError::Btf {
                what: path.display().to_string(),
                offset,
                reason,
            },
            e => e,
        })
    }

    /// The running kernel's BTF: vmlinux and, when `modules`, every module
    /// under /sys/kernel/btf. A module that fails to parse is skipped and named
    /// in the returned warnings.
    pub fn running(modules: bool) -> Result<(Btf, Vec<String>)> {
        let dir = Path::new("/sys/kernel/btf");
        let vmlinux = dir.join("vmlinux");
        let mut btf = Btf::from_file(&vmlinux).map_err(|e| match e {
            FuncsError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                FuncsError::Other(format!(
                    "{}: not found: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF); \
                     give a saved one with --btf FILE",
                    path.display()
                ))
            }
            e => e,
        })?;
        let mut warnings = Vec::new();
        if modules {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .map_err(|e| FuncsError::io(dir, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "vmlinux")
                .collect();
            names.sort();
            for n in names {
                let p = dir.join(&n);
                match std::fs::read(&p) {
                    Ok(b) => {
                        if let Err(e) = btf.add_split(&n, &b) {
                            warnings.push(format!("module {n} skipped: {e}"));
                        }
                    }
                    Err(e) => warnings.push(format!("{}: {e}", p.display())),
                }
            }
        }
        Ok((btf, warnings))
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }
    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }

    pub fn get(&self, id: u32) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// A string by offset ("" when out of range).
    pub fn str(&self, off: u32) -> &str {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..n]).unwrap_or("")
    }

    pub fn name(&self, id: u32) -> &str {
        self.get(id).map(|t| self.str(t.name)).unwrap_or("")
    }

    /// All types with their ids.
    pub fn types(&self) -> impl Iterator<Item = (u32, &Type)> {
        self.types.iter().enumerate().map(|(i, t)| (i as u32, t))
    }

    /// The type a chain of const/volatile/restrict/type tags leads to.
    pub fn skip_mods(&self, mut id: u32) -> u32 {
        for _ in 0..64 {
            match self.get(id).map(|t| t.kind) {
                Some(Kind::Const | Kind::Volatile | Kind::Restrict | Kind::TypeTag) => {
                    id = self.types[id as usize].ty
                }
                _ => break,
            }
        }
        id
    }

    /// A C-like spelling of a type, for explanations (`const struct sk_buff *`).
    pub fn spell(&self, id: u32) -> String {
        let mut out = String::new();
        self.spell_into(id, &mut out, 0);
        out
    }

    fn spell_into(&self, id: u32, out: &mut String, depth: usize) {
        let Some(t) = self.get(id) else {
            out.push_str("<bad type>");
            return;
        };
        if depth > 16 {
            out.push('…');
            return;
        }
        let name = self.str(t.name);
        match t.kind {
            Kind::Void => out.push_str("void"),
            Kind::Ptr => {
                self.spell_into(t.ty, out, depth + 1);
                out.push_str(" *");
            }
            Kind::Const => {
                out.push_str("const ");
                self.spell_into(t.ty, out, depth + 1);
            }
            Kind::Volatile => {
                out.push_str("volatile ");
                self.spell_into(t.ty, out, depth + 1);
            }
            Kind::Restrict | Kind::TypeTag => self.spell_into(t.ty, out, depth + 1),
            Kind::Array => {
                self.spell_into(t.ty, out, depth + 1);
                out.push_str("[]");
            }
            Kind::Struct if name.is_empty() => out.push_str("an anonymous struct"),
            Kind::Union if name.is_empty() => out.push_str("an anonymous union"),
            Kind::Struct => out.push_str(&format!("struct {name}")),
            Kind::Union => out.push_str(&format!("union {name}")),
            Kind::Enum | Kind::Enum64 => out.push_str(&format!("enum {name}")),
            Kind::Fwd => out.push_str(&format!("struct {name}")),
            Kind::FuncProto => out.push_str("function"),
            _ if !name.is_empty() => out.push_str(name),
            _ => out.push_str("<anonymous>"),
        }
    }
}
