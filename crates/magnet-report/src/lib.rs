//! HTML report (work in progress).
use magnet_analyze::Analysis;

pub struct ReportOptions {
    pub title: String,
    pub sock: Option<u64>,
}

pub fn render(a: &Analysis, _o: &ReportOptions) -> String {
    format!(
        "<!doctype html><pre>{}</pre>",
        serde_json::to_string(a).unwrap_or_default()
    )
}
