//! One module per subcommand.
pub mod analyze;
pub mod completions;
pub mod daemon;
pub mod demo;
pub mod dump;
pub mod export;
pub mod funcs;
mod funcs_source;
pub mod info;
mod json_out;
pub mod loadgen;
pub mod matching;
pub mod nfs;
pub mod packets;
pub mod parse;
pub mod pcap;
pub mod record;
pub mod report;
pub mod rpc;
pub mod sample;
pub mod top;
mod trace_input;

/// Prints the `--check` rows of a plan (magnet_kernel::plan) of `daemon` or
/// `sample`: the table, or with `json` one document of `schema` with `parts`.
fn print_check(
    schema: &str,
    rows: Vec<magnet_kernel::plan::CheckRow>,
    json: bool,
) -> anyhow::Result<std::process::ExitCode> {
    if json {
        use std::io::Write;
        let v = json_out::tagged(schema, "parts", rows)?;
        writeln!(std::io::stdout(), "{v}")?;
    } else {
        let words = magnet_kernel::plan::CheckWords {
            group: "group",
            part: "part",
            cannot: "cannot be used",
        };
        print!("{}", magnet_kernel::plan::check_table(words, &rows));
    }
    Ok(std::process::ExitCode::from(magnet_common::exit::OK))
}
