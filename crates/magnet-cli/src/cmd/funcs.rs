//! `magnet funcs`: the kernel functions that handle packets, found by type in
//! the kernel's BTF (or in a source tree with `--source`), and which of them
//! can be probed.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use magnet_funcs::{ftrace, select, Btf, Category, Rules};

const AFTER_HELP: &str = "\
A function handles packets when a parameter (any position) or its return value is
  direct    a struct sk_buff * (const or not, or a pointer to one)
  typedef   the same through a typedef chain
  nested    a pointer to a struct that holds an skb, by value nesting, any depth
            (struct sock holds sk_buff_head, which points to sk_buff)
  pointing  a pointer to a struct that points to such a struct (--pointer-depth hops)
Each function is counted under its most direct category. 'attachable' is the part
listed in tracefs' available_filter_functions (what kprobes and fentry can use).
'pwru rule' counts a plain struct sk_buff * among parameters 1-5, as pwru does.

Examples:
  magnet funcs                          # the running kernel (vmlinux + modules)
  magnet funcs --btf 6.1.btf --list     # a saved BTF (raw, or a vmlinux ELF)
  magnet funcs --why tcp_sendmsg
  magnet funcs --source /usr/src/linux-source-6.1   # adds indirect use; Table 6-1";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct FuncsArgs {
    /// Read this BTF (raw .BTF or an ELF vmlinux) instead of the running kernel's.
    #[arg(long, value_name = "FILE")]
    btf: Option<PathBuf>,
    /// With --btf: a module's BTF on top of it (a .ko, or raw split BTF); repeatable.
    #[arg(long, value_name = "FILE", requires = "btf")]
    btf_module: Vec<PathBuf>,
    /// Only vmlinux: leave out the modules under /sys/kernel/btf.
    #[arg(long)]
    no_modules: bool,
    /// A saved available_filter_functions listing (default: the running kernel's,
    /// unless --btf is given).
    #[arg(long, value_name = "FILE")]
    available: Option<PathBuf>,
    /// Pointer hops allowed from a parameter's struct to one that nests an skb.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=8))]
    pointer_depth: u32,
    /// Explain why a function is (or is not) selected.
    #[arg(long, value_name = "FUNC")]
    why: Option<String>,
    /// Print the selected functions, one per line, with their category.
    #[arg(long)]
    list: bool,
    /// Only these categories in --list (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "CAT")]
    category: Vec<String>,
    /// Also list functions that cannot be attached.
    #[arg(long)]
    all: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// With --source: follow indirect use at most this many calls away.
    #[arg(long, default_value_t = 3, value_name = "N", requires = "source")]
    levels: u32,
    /// Scan a kernel source tree with a C parser instead (adds indirect use).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["btf", "available", "why"])]
    source: Option<PathBuf>,
    /// Print how `record --funcs` would probe functions on this kernel
    /// (kprobe-multi or one kprobe each), or why it cannot, and exit (with
    /// --json: schema magnet.funcs.check/1).
    #[arg(long, conflicts_with_all = ["btf", "available", "why", "source", "list"])]
    check: bool,
}

pub fn run(args: FuncsArgs) -> Result<ExitCode> {
    if args.check {
        return check(args.json);
    }
    if let Some(dir) = &args.source {
        return super::funcs_source::run(dir, args.levels, args.json, args.list);
    }
    let rules = Rules {
        pointer_depth: args.pointer_depth,
    };
    let (btf, what, warnings) = match &args.btf {
        Some(p) => {
            let mut b = Btf::from_file(p)?;
            for m in &args.btf_module {
                b.add_split_file(m)?;
            }
            let what = match args.btf_module.len() {
                0 => p.display().to_string(),
                n => format!(
                    "{} + {n} module{}",
                    p.display(),
                    if n == 1 { "" } else { "s" }
                ),
            };
            (b, what, Vec::new())
        }
        None => {
            let (b, w) = Btf::running(!args.no_modules)?;
            let n = b.units.len() - 1;
            (b, format!("/sys/kernel/btf (vmlinux + {n} modules)"), w)
        }
    };
    for w in &warnings {
        eprintln!("magnet: warning: {w}");
    }
    let available: Option<(String, HashSet<String>)> = match (&args.available, &args.btf) {
        (Some(p), _) => Some((p.display().to_string(), ftrace::read_available(p)?)),
        (None, Some(_)) => None,
        (None, None) => match ftrace::running_available() {
            Ok((p, s)) => Some((p.display().to_string(), s)),
            Err(e) => {
                eprintln!("magnet: note: attachable functions unknown: {e}");
                None
            }
        },
    };
    let sel = select(&btf, rules);
    let avail = available.as_ref().map(|(_, s)| s);

    if let Some(name) = &args.why {
        return why(&sel, name, avail);
    }

    let cats: Vec<Category> = if args.category.is_empty() {
        Category::ALL.to_vec()
    } else {
        args.category
            .iter()
            .map(|c| {
                Category::ALL
                    .into_iter()
                    .find(|k| k.name() == c)
                    .with_context(|| {
                        format!("unknown category {c:?} (direct, typedef, nested, pointing)")
                    })
            })
            .collect::<Result<_>>()?
    };
    let listed: Vec<&magnet_funcs::Selected> = sel
        .funcs
        .values()
        .filter(|f| cats.contains(&f.category))
        .filter(|f| args.all || avail.is_none_or(|a| a.contains(&f.name)))
        .collect();
    let summary = sel.summary(rules, avail);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let v = serde_json::json!({
            "schema": super::json_out::FUNCS,
            "btf": what,
            "available": available.as_ref().map(|(p, s)| serde_json::json!({"path": p, "functions": s.len()})),
            "summary": summary,
            "functions": if args.list { Some(&listed) } else { None },
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.list {
        for f in &listed {
            writeln!(out, "{}\t{}\t{}", f.name, f.category.name(), f.unit)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    print_summary(&mut out, &what, available.as_ref(), &summary)?;
    Ok(ExitCode::SUCCESS)
}

/// The text summary: where BTF and the attachable list came from, the
/// count per category, the pwru rule's, and the polymorphism found.
fn print_summary(
    out: &mut impl Write,
    what: &str,
    available: Option<&(String, HashSet<String>)>,
    summary: &magnet_funcs::select::Summary,
) -> Result<()> {
    writeln!(out, "BTF: {what}")?;
    match available {
        Some((p, s)) => writeln!(out, "attachable: {p} ({} functions)", s.len())?,
        None => writeln!(out, "attachable: unknown (no available_filter_functions)")?,
    }
    writeln!(out, "functions in BTF: {}", summary.total_functions)?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<10} {:>9} {:>11}",
        "category", "selected", "attachable"
    )?;
    for c in Category::ALL {
        let a = summary
            .attachable
            .as_ref()
            .map(|m| m[&c].to_string())
            .unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "{:<10} {:>9} {:>11}",
            c.name(),
            summary.selected[&c],
            a
        )?;
    }
    let at = |v: Option<usize>| v.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    writeln!(
        out,
        "{:<10} {:>9} {:>11}",
        "total",
        summary.selected_total,
        at(summary.attachable_total)
    )?;
    writeln!(
        out,
        "{:<10} {:>9} {:>11}   (struct sk_buff * among parameters 1-5)",
        "pwru rule",
        summary.pwru_rule,
        at(summary.pwru_rule_attachable)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "polymorphism: {} typedefs of sk_buff, {} structs nesting it, {} pointing to one ({} hop{})",
        summary.typedef_aliases,
        summary.nested_structs,
        summary.pointing_structs,
        summary.pointer_depth,
        if summary.pointer_depth == 1 { "" } else { "s" }
    )?;
    Ok(())
}

/// `magnet funcs --check`: the probe of each part of `record --funcs` on this
/// kernel, and in text a last line when no function can be probed at all.
fn check(json: bool) -> Result<ExitCode> {
    let plan = magnet_record::funcs::check()?;
    let code = super::print_check(super::json_out::FUNCS_CHECK, plan.check_rows(), json)?;
    if !json && plan.used("entry").is_none() {
        println!(
            "record --funcs cannot run on this kernel (no function probe); \
             `magnet funcs` still selects functions from BTF"
        );
    }
    Ok(code)
}

fn why(
    sel: &magnet_funcs::Selection,
    name: &str,
    avail: Option<&HashSet<String>>,
) -> Result<ExitCode> {
    let attach = match avail {
        Some(a) if a.contains(name) => "attachable (in available_filter_functions)",
        Some(_) => "NOT attachable (not in available_filter_functions)",
        None => "attachability unknown",
    };
    let Some(f) = sel.funcs.get(name) else {
        if sel.total == 0 {
            bail!("the BTF has no functions");
        }
        println!("{name}: not selected: no parameter or return value holds an skb under these rules ({attach})");
        return Ok(ExitCode::from(1));
    };
    println!(
        "{name} [{}]: {} ({attach}){}",
        f.unit,
        f.category.name(),
        if f.pwru {
            "; pwru's rule selects it too"
        } else {
            ""
        }
    );
    for r in &f.reasons {
        let slot = if r.position == 0 {
            "return value".to_string()
        } else {
            format!("parameter {} `{}`", r.position, r.name)
        };
        println!("  {slot}: {} -> {}", r.ty, r.category.name());
        for step in &r.chain {
            println!("    {step}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The functions to probe with their skb parameter, and the names of the
/// whole selection.
pub type Resolved = (Vec<(String, u8)>, Vec<String>);

/// `record --funcs SPEC`: the functions to probe on the running kernel, each
/// with the parameter (1-5) that holds its `struct sk_buff *`, and the names of
/// the whole selection (to name callers in the trace).
pub fn resolve_spec(spec: &str) -> Result<Resolved> {
    let (btf, _) = Btf::running(true)?;
    let sel = select(&btf, Rules::default());
    let avail = ftrace::running_available().ok().map(|(_, s)| s);
    // Functions whose skb is a plain parameter 1-5 (the programs read it there).
    let skb_pos = |f: &magnet_funcs::Selected| -> Option<u8> {
        f.reasons
            .iter()
            .find(|r| {
                (1..=5).contains(&r.position)
                    && matches!(r.category, Category::Direct | Category::Typedef)
                    && r.ty.ends_with("sk_buff *")
                    && !r.ty.ends_with("* *")
            })
            .map(|r| r.position as u8)
    };
    let probeable = |name: &str| avail.as_ref().is_none_or(|a| a.contains(name));
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(every) = all_spec(part)? {
            // Every attachable function (`all`), or every Nth of them in name
            // order (`all/N`): those with an skb parameter as for `auto`, the
            // rest (position 0) with function and caller only.
            let Some(avail) = avail.as_ref() else {
                bail!(
                    "--funcs all: cannot read available_filter_functions (mount tracefs: \
                     mount -t tracefs nodev /sys/kernel/tracing)"
                );
            };
            let mut with_skb = std::collections::HashSet::new();
            for f in sel.funcs.values().filter(|f| avail.contains(&f.name)) {
                if let Some(p) = skb_pos(f) {
                    with_skb.insert(f.name.as_str());
                    out.push((f.name.clone(), p));
                }
            }
            let mut rest: Vec<&String> = avail
                .iter()
                .filter(|n| !with_skb.contains(n.as_str()))
                .collect();
            rest.sort();
            out.extend(rest.into_iter().map(|n| (n.clone(), 0)));
            if every > 1 {
                out.sort();
                out = out.into_iter().step_by(every).collect();
            }
            continue;
        }
        if part == "auto" {
            out.extend(
                sel.funcs
                    .values()
                    .filter(|f| probeable(&f.name))
                    .filter_map(|f| skb_pos(f).map(|p| (f.name.clone(), p))),
            );
            continue;
        }
        let before = out.len();
        for f in sel.funcs.values().filter(|f| glob(part, &f.name)) {
            if let Some(p) = skb_pos(f) {
                if probeable(&f.name) {
                    out.push((f.name.clone(), p));
                }
            }
        }
        if out.len() == before {
            bail!(
                "--funcs {part}: no function matches with a struct sk_buff * among parameters 1-5 \
                 that can be probed (see `magnet funcs --why NAME`)"
            );
        }
    }
    // One entry per function, the one with an skb position kept (`all`'s
    // position 0 sorts first).
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by(|a, b| a.0 == b.0);
    // The whole selection is named in the trace: callers outside the probed set.
    let named = sel.funcs.values().map(|f| f.name.clone()).collect();
    Ok((out, named))
}

/// `all` (Some(1)) or `all/N` (Some(N)); None for any other part.
fn all_spec(part: &str) -> Result<Option<usize>> {
    if part == "all" {
        return Ok(Some(1));
    }
    let Some(n) = part.strip_prefix("all/") else {
        return Ok(None);
    };
    match n.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => bail!("--funcs {part}: want all/N with N a whole number >= 1 (every Nth function)"),
    }
}

/// Shell-style `*` and `?` matching.
fn glob(pat: &str, s: &str) -> bool {
    let (p, s) = (pat.as_bytes(), s.as_bytes());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn glob() {
        use super::glob;
        assert!(glob("tcp_*", "tcp_v4_rcv"));
        assert!(glob("*xmit", "dev_hard_start_xmit"));
        assert!(glob("ip_rcv", "ip_rcv"));
        assert!(!glob("ip_rcv", "ip_rcv_finish"));
        assert!(glob("ip_?cv*", "ip_rcv_finish"));
        assert!(!glob("udp_*", "tcp_v4_rcv"));
    }
}
