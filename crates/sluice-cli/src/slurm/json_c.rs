//! JSON as Slurm 22.05's commands print it (`squeue --json`): its serializer's pretty
//! layout, byte for byte — two-space indentation, `"key": value`, an empty list or
//! object still opened and closed on lines of their own, `/` escaped as `\/`, numbers
//! with a fraction always showing one (`2.0`), and no newline after the closing brace.
//! Keys keep the order they are given in.

/// A JSON value with ordered keys.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A string.
    Str(String),
    /// A list.
    List(Vec<Json>),
    /// An object, keys in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A string value.
    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    /// An object from `(key, value)` pairs.
    pub fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A whole number, or `null` when absent.
    pub fn int_or_null(v: Option<i64>) -> Json {
        v.map_or(Json::Null, Json::Int)
    }

    /// The document as Slurm prints it (no final newline).
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, indent: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => out.push_str(&i.to_string()),
            Json::Float(f) if f.is_finite() => {
                let s = format!("{f:?}");
                out.push_str(&s);
            }
            Json::Float(_) => out.push_str("null"),
            Json::Str(s) => write_str(out, s),
            Json::List(items) => {
                out.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    out.push_str(&" ".repeat(indent + 2));
                    v.write(out, indent + 2);
                    if i + 1 < items.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent));
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    out.push_str(&" ".repeat(indent + 2));
                    write_str(out, k);
                    out.push_str(": ");
                    v.write(out, indent + 2);
                    if i + 1 < pairs.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&" ".repeat(indent));
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn prints_as_slurms_serializer_does() {
        // The opening of Slurm 22.05's `squeue --json`, with an empty list.
        let doc = Json::object([
            (
                "meta",
                Json::object([(
                    "plugin",
                    Json::object([("type", Json::str("openapi/v0.0.38"))]),
                )]),
            ),
            ("errors", Json::List(vec![])),
            (
                "jobs",
                Json::List(vec![Json::object([
                    ("array_task_id", Json::Null),
                    ("batch_flag", Json::Bool(true)),
                    ("billable_tres", Json::Float(2.0)),
                    ("flags", Json::List(vec![Json::str("JOB_MEM_SET")])),
                    ("job_id", Json::Int(100001)),
                ])]),
            ),
        ]);
        assert_eq!(
            doc.render(),
            "{\n  \"meta\": {\n    \"plugin\": {\n      \"type\": \"openapi\\/v0.0.38\"\n    }\n  },\n  \
             \"errors\": [\n  ],\n  \"jobs\": [\n    {\n      \"array_task_id\": null,\n      \
             \"batch_flag\": true,\n      \"billable_tres\": 2.0,\n      \"flags\": [\n        \
             \"JOB_MEM_SET\"\n      ],\n      \"job_id\": 100001\n    }\n  ]\n}"
        );
        assert_eq!(
            Json::str("a\"b\\c\n\u{1}").render(),
            "\"a\\\"b\\\\c\\n\\u0001\""
        );
        assert_eq!(Json::Float(0.5).render(), "0.5");
    }
}
