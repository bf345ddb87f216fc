//! Splitting configuration lines into `Key=Value` pairs.

/// Splits a logical line into `(key, value)` pairs separated by whitespace. Values may
/// be double-quoted (quotes removed); a token without `=` yields an empty value.
pub(crate) fn pairs(line: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'=') {
            chars.next();
            if chars.peek() == Some(&'"') {
                chars.next();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '"' {
                        closed = true;
                        break;
                    }
                    value.push(c);
                }
                if !closed {
                    return Err(format!("unterminated quote in value of {key}"));
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
            }
        }
        if key.is_empty() {
            return Err("'=' without a key".into());
        }
        out.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_with_quotes_and_bare_words() {
        let p = pairs(r#"NodeName=n[1-2] CPUs=4 Reason="ECC errors" Flag"#).unwrap();
        let want = [
            ("NodeName", "n[1-2]"),
            ("CPUs", "4"),
            ("Reason", "ECC errors"),
            ("Flag", ""),
        ];
        assert_eq!(p, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert!(pairs(r#"Reason="open"#).is_err());
        assert!(pairs("=x").is_err());
    }
}
