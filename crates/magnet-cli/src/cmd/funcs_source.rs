//! `magnet funcs --source DIR`: the thesis's selective instrumentation over a
//! kernel source tree (include/ and net/), and its Table 6-1.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use magnet_funcs::source::{self, Use};

pub fn run(dir: &Path, levels: u32, json: bool, list: bool) -> Result<ExitCode> {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} parsing {pos}/{len} files {wide_bar} {eta}")
            .expect("valid template"),
    );
    let report = source::scan(dir, levels, &mut |done, total| {
        if done == 1 {
            bar.set_length(total as u64);
        }
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        let mut v = super::json_out::tagged(super::json_out::FUNCS_SOURCE, "source", &report)?;
        if !list {
            v.as_object_mut().expect("object").remove("functions");
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list {
        for f in &report.functions {
            writeln!(out, "{}\t{}\t{}\t{}", f.name, f.how.name(), f.level, f.file)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "Table 6-1 for {}", report.root)?;
    let row = |out: &mut std::io::StdoutLock, a: &str, b: &str, v: usize| {
        writeln!(out, "  {a:<28} {b:<22} {v:>7}")
    };
    row(&mut out, "Source files", "/include", report.files_include)?;
    row(&mut out, "", "/net", report.files_net)?;
    row(
        &mut out,
        "Polymorphism of sk_buff",
        "Alias",
        report.aliases.len(),
    )?;
    row(
        &mut out,
        "",
        "Customized data types",
        report.customized_types.len(),
    )?;
    row(&mut out, "", "Nested structure", report.nested_structures)?;
    row(
        &mut out,
        "Packet processing functions",
        "",
        report.packet_functions,
    )?;
    row(&mut out, "Total functions", "", report.total_functions)?;
    writeln!(out)?;
    writeln!(out, "packet processing functions by use:")?;
    for u in Use::ALL {
        writeln!(out, "  {:<16} {:>7}", u.name(), report.by_use[&u])?;
    }
    writeln!(
        out,
        "structures pointing to a nested one (1 hop): {}",
        report.pointing_structures
    )?;
    if report.files_with_parse_errors > 0 {
        writeln!(
            out,
            "note: {} files hold syntax the parser could not read (unexpanded macros); the rest of each was used",
            report.files_with_parse_errors
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
