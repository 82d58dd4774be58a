//! Reading back what magnet's CSV exports write.

/// Splits one CSV line (RFC 4180 quoting: a field in double quotes may hold
/// commas, and `""` inside it is one quote).
pub fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_fields_keep_commas_and_quotes() {
        assert_eq!(
            super::csv_fields(r#"a,"b,c","say ""hi""",,d"#),
            ["a", "b,c", r#"say "hi""#, "", "d"]
        );
    }
}
