//! events.h is the one definition of magnet's records; the Rust side is
//! generated from it (build.rs). These tests hold the generated Rust against an
//! outside oracle, clang itself: it compiles events.h, lists every struct, field
//! and kind (AST dump), and a program it builds prints every kind number, struct
//! size and field offset/size (`offsetof`/`sizeof`). Any difference in a kind
//! number, a field's offset or size, or a field or kind present on one side
//! only, fails. Needs clang (a build requirement of magnet-record anyway); runs
//! in about a second.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use magnet_trace::catalog::{Catalog, FieldType};
use magnet_trace::events::{kind, DEFINES, LAYOUTS};

#[path = "../gen/events_h.rs"]
mod events_h;

/// struct name -> (size, [(field, offset, size)])
type Layouts = BTreeMap<&'static str, (usize, &'static [(&'static str, usize, usize)])>;

fn header_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf/include/magnet")
}

const PRELUDE: &str = "typedef unsigned char __u8; typedef unsigned short __u16;\n\
typedef unsigned int __u32; typedef unsigned long long __u64;\n\
typedef int __s32; typedef long long __s64;\n\
#include <stdio.h>\n#include <stddef.h>\n#include \"events.h\"\n";

fn clang(args: &[&str], dir: &Path) -> String {
    let out = Command::new("clang")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("clang is needed for this test (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "clang {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What clang says events.h declares: structs with their fields, kinds.
struct Declared {
    structs: BTreeMap<String, Vec<String>>,
    enums: Vec<String>,
}

fn declared(dir: &Path) -> Declared {
    let c = dir.join("decl.c");
    std::fs::write(&c, PRELUDE).unwrap();
    let inc = format!("-I{}", header_dir().display());
    let ast = clang(
        &[
            "-fsyntax-only",
            &inc,
            "-Xclang",
            "-ast-dump",
            "-fno-color-diagnostics",
            "decl.c",
        ],
        dir,
    );
    let mut structs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut enums = Vec::new();
    let mut current: Option<String> = None;
    for line in ast.lines() {
        // Only declarations from events.h itself (not stdio.h).
        let body = line.trim_start_matches(['|', '-', '`', ' ']);
        if body.starts_with("RecordDecl") {
            current = None;
            if let Some(rest) = body.split(" struct ").nth(1) {
                if let Some(name) = rest.strip_suffix(" definition") {
                    if name.starts_with("mg_") {
                        structs.insert(name.to_string(), Vec::new());
                        current = Some(name.to_string());
                    }
                }
            }
        } else if body.starts_with("FieldDecl") {
            if let Some(s) = &current {
                let before_type = body.split(" '").next().unwrap();
                let name = before_type.rsplit(' ').next().unwrap();
                structs.get_mut(s).unwrap().push(name.to_string());
            }
        } else if body.starts_with("EnumConstantDecl") {
            let before_type = body.split(" '").next().unwrap();
            let name = before_type.rsplit(' ').next().unwrap();
            if name.starts_with("MG_") {
                enums.push(name.to_string());
            }
        } else if !line.starts_with("| |") && !line.starts_with("|   ") {
            current = None;
        }
    }
    Declared { structs, enums }
}

/// Runs a program clang builds from events.h that prints every number the
/// Rust side relies on.
fn measured(dir: &Path, d: &Declared) -> BTreeMap<String, u64> {
    let mut c = String::from(PRELUDE);
    c.push_str("int main(void) {\n");
    for e in &d.enums {
        c.push_str(&format!("printf(\"enum {e} %lld\\n\", (long long){e});\n"));
    }
    for (name, _) in DEFINES {
        c.push_str(&format!(
            "printf(\"define {name} %lld\\n\", (long long){name});\n"
        ));
    }
    for (s, fields) in &d.structs {
        c.push_str(&format!(
            "printf(\"size {s} %zu\\n\", sizeof(struct {s}));\n"
        ));
        for f in fields {
            c.push_str(&format!(
                "printf(\"field {s}.{f} %zu %zu\\n\", offsetof(struct {s}, {f}), sizeof(((struct {s} *)0)->{f}));\n"
            ));
        }
    }
    c.push_str("return 0;\n}\n");
    std::fs::write(dir.join("measure.c"), c).unwrap();
    let inc = format!("-I{}", header_dir().display());
    clang(
        &["-Wall", "-Werror", &inc, "-o", "measure", "measure.c"],
        dir,
    );
    let out = Command::new(dir.join("measure")).output().unwrap();
    assert!(out.status.success());
    let mut m = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w[0] {
            "enum" | "define" | "size" => {
                m.insert(format!("{} {}", w[0], w[1]), w[2].parse().unwrap());
            }
            "field" => {
                m.insert(format!("offset {}", w[1]), w[2].parse().unwrap());
                m.insert(format!("fsize {}", w[1]), w[3].parse().unwrap());
            }
            _ => panic!("{line}"),
        }
    }
    m
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("magnet-events-h-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn generated_rust_matches_what_clang_makes_of_events_h() {
    let dir = scratch();
    let d = declared(&dir);
    let m = measured(&dir, &d);
    assert!(
        d.structs.len() >= 15,
        "clang saw {} structs",
        d.structs.len()
    );

    // Kinds: the same names with the same numbers, none on one side only.
    let c_kinds: BTreeMap<String, u64> = d
        .enums
        .iter()
        .map(|e| (e.clone(), m[&format!("enum {e}")]))
        .collect();
    let rust_kinds: BTreeMap<String, u64> = kind::ALL
        .iter()
        .map(|(n, v)| (n.to_string(), *v as u64))
        .collect();
    assert_eq!(
        c_kinds, rust_kinds,
        "enum mg_kind: C (left) vs generated Rust"
    );
    for (n, v) in DEFINES {
        assert_eq!(m[&format!("define {n}")], *v, "#define {n}");
    }

    // Structs: the same fields at the same offsets with the same sizes.
    let c_structs: BTreeSet<String> = d.structs.keys().cloned().collect();
    let rust_structs: BTreeSet<String> = LAYOUTS.iter().map(|l| l.0.to_string()).collect();
    assert_eq!(
        c_structs, rust_structs,
        "structs: C (left) vs generated Rust"
    );
    for (s, size, fields) in LAYOUTS {
        assert_eq!(m[&format!("size {s}")], *size as u64, "sizeof(struct {s})");
        let c_fields: Vec<&String> = d.structs[*s].iter().collect();
        let r_fields: Vec<&str> = fields.iter().map(|f| f.0).collect();
        assert_eq!(c_fields, r_fields, "struct {s}: fields, C (left) vs Rust");
        for (f, off, fsize) in fields.iter() {
            assert_eq!(
                m[&format!("offset {s}.{f}")],
                *off as u64,
                "offsetof({s}, {f})"
            );
            assert_eq!(
                m[&format!("fsize {s}.{f}")],
                *fsize as u64,
                "sizeof({s}.{f})"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The catalog (what every trace carries) against the C layouts: each catalog
/// field of a kind lies on a C field of that kind's struct (nested structs
/// followed), with the catalog type's size, and the kind's base size is the
/// struct's size without its optional trailing part.
#[test]
fn the_catalog_lies_on_the_c_fields() {
    let layouts: Layouts = LAYOUTS.iter().map(|(n, s, f)| (*n, (*s, *f))).collect();
    let src = std::fs::read_to_string(header_dir().join("events.h")).unwrap();
    let model = events_h::parse(&src).unwrap();
    let cat = Catalog::builtin();
    assert_eq!(cat.kinds.len(), kind::RECORDS.len());
    for (cname, st) in kind::RECORDS {
        let id = kind::ALL.iter().find(|k| k.0 == *cname).unwrap().1;
        let k = cat
            .get(id)
            .unwrap_or_else(|| panic!("{cname}: not in the catalog"));
        assert_eq!(k.name, cname.trim_start_matches("MG_").to_lowercase());
        // Leaves of the C struct: (absolute offset, size) of every scalar/array.
        let mut leaves = BTreeSet::new();
        fn walk(
            l: &Layouts,
            m: &events_h::Model,
            s: &str,
            base: usize,
            out: &mut BTreeSet<(usize, usize)>,
        ) {
            let st = m.strukt(s).unwrap();
            for (f, off, size) in l[s].1 {
                let ty = &st.fields.iter().find(|x| x.name == *f).unwrap().ty;
                match ty {
                    events_h::CType::Struct(inner) => walk(l, m, inner, base + off, out),
                    _ => {
                        out.insert((base + off, *size));
                    }
                }
            }
        }
        walk(&layouts, &model, st, 0, &mut leaves);
        for f in &k.fields {
            assert!(
                leaves.contains(&(f.offset as usize, f.ty.size() as usize)),
                "{}.{}: offset {} size {} is not a field of struct {st}",
                k.name,
                f.name,
                f.offset,
                f.ty.size()
            );
        }
        let (size, fields) = layouts[st];
        let last = fields.last().unwrap();
        let optional = model.strukt(st).unwrap().fields.last().unwrap().optional;
        let base = if optional { last.1 } else { size };
        assert_eq!(k.size as usize, base, "{}: base size", k.name);
    }
    // Header fields.
    for f in &cat.header {
        let h = layouts["mg_hdr"].1.iter().find(|x| x.0 == f.name).unwrap();
        assert_eq!((f.offset as usize, f.ty.size() as usize), (h.1, h.2));
        assert!(matches!(
            f.ty,
            FieldType::U64 | FieldType::U16 | FieldType::U32
        ));
    }
}

/// A catalog is part of the format: a trace's version says which catalog its
/// writer had at least (`catalogs/vN.json`). Within a version, kinds and
/// trailing fields may be added (docs/FORMAT.md, Compatibility); a kind or
/// field that moves, changes type or disappears needs a new version. So every
/// kind and field of the saved catalog must be in this build's, unchanged.
#[test]
fn the_catalog_keeps_what_this_format_version_promised() {
    let v = magnet_trace::block::VERSION;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("catalogs/v{v}.json"));
    let now = Catalog::builtin();
    let saved = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; a new format version needs its catalog saved there:\n{}",
            path.display(),
            serde_json::to_string_pretty(&now).unwrap()
        )
    });
    let saved: Catalog = serde_json::from_str(&saved).unwrap();
    let bump = format!(
        "events.h changed a layout of format version {v} ({}): bump \
         magnet_trace::block::VERSION and save the new catalog as catalogs/v{}.json \
         (keep the old file: it documents traces already written)",
        path.display(),
        v + 1
    );
    assert_eq!(saved.header, now.header, "record header: {bump}");
    for k in &saved.kinds {
        let n = now
            .get(k.id)
            .unwrap_or_else(|| panic!("kind {} ({}) is gone: {bump}", k.id, k.name));
        assert_eq!(
            (&n.name, &n.layer),
            (&k.name, &k.layer),
            "kind {}: {bump}",
            k.id
        );
        assert!(n.size >= k.size, "{}: shorter than before: {bump}", k.name);
        for f in &k.fields {
            let g = n
                .field(&f.name)
                .unwrap_or_else(|| panic!("{}.{} is gone: {bump}", k.name, f.name));
            assert_eq!(g, f, "{}.{}: {bump}", k.name, f.name);
        }
    }
}

/// Within a version, what is added comes after what was there: a new field
/// of a saved kind lies past the saved kind's base size, or in bytes that
/// were padding there (written as zero: older traces read 0 in the new field,
/// which events.h must give a meaning, and their own catalog lacks it).
#[test]
fn additions_within_a_version_are_trailing() {
    let v = magnet_trace::block::VERSION;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("catalogs/v{v}.json"));
    let Ok(saved) = std::fs::read_to_string(&path) else {
        return; // the test above says what to do
    };
    let saved: Catalog = serde_json::from_str(&saved).unwrap();
    for n in &Catalog::builtin().kinds {
        let Some(k) = saved.get(n.id) else { continue };
        for f in &n.fields {
            if k.field(&f.name).is_some() {
                continue;
            }
            let end = f.offset + f.ty.size();
            let over_a_saved_field = k
                .fields
                .iter()
                .any(|o| f.offset < o.offset + o.ty.size() && o.offset < end);
            assert!(
                f.offset >= k.size || !over_a_saved_field,
                "{}.{} was added at offset {} over a field of the version-{v} layout ({} bytes)",
                n.name,
                f.name,
                f.offset,
                k.size
            );
        }
    }
}

#[test]
fn the_reader_of_events_h_refuses_what_it_does_not_understand() {
    let src = std::fs::read_to_string(header_dir().join("events.h")).unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "struct mg_lost {\n\tstruct mg_hdr hdr;\n\t__u64 count;",
            "struct mg_lost {\n\tstruct mg_hdr hdr;\n\t__u32 oops;\n\t__u64 count;",
            "implicit padding",
        ),
        (
            "\t__u64 count;\n",
            "\tunsigned long count;\n",
            "not understood",
        ),
        ("MG_SOCK = 2,", "MG_SOCK = 1,", "used twice"),
        ("@struct mg_sock", "@struct mg_nope", "not defined"),
        ("@layer app", "@colour app", "unknown annotation"),
        (
            "#define MG_F_TCP_STATE 1",
            "#define MG_F_TCP_STATE (1 << 0)",
            "not understood",
        ),
    ];
    for (from, to, why) in cases {
        assert!(src.contains(from), "{from}");
        let bad = src.replacen(from, to, 1);
        let err = events_h::parse(&bad).expect_err(to);
        assert!(err.contains(why), "{to}: {err}");
        assert!(
            err.contains("line ") || err.contains("struct ") || err.contains("MG_"),
            "{err}"
        );
    }
}
