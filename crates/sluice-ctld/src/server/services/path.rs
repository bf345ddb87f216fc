//! From the stable address to the service's own path: `/services/NAME/REST?QUERY` is
//! `NAME` and `/REST?QUERY`. Only the path's rest reaches the service; the host and
//! port a request goes to come from the controller's state alone.

/// The prefix of every stable address.
pub const PREFIX: &str = "/services/";

/// What a path under [`PREFIX`] asks.
#[derive(Debug, PartialEq, Eq)]
pub enum Mapped<'a> {
    /// Service `name`, the request's path and query on it (origin form, starting
    /// with `/`).
    Forward { name: &'a str, target: String },
    /// `/services/NAME` without its slash: the address to redirect to, as a
    /// directory's (relative links of the service's pages then resolve under it).
    AddSlash(String),
    /// No service named (`/services/`, or not under the prefix).
    NoName,
}

/// Maps `path` and `query` (as the request line gives them, still percent-encoded).
pub fn map<'a>(path: &'a str, query: Option<&str>) -> Mapped<'a> {
    let Some(tail) = path.strip_prefix(PREFIX) else {
        return Mapped::NoName;
    };
    let (name, rest) = match tail.find('/') {
        Some(i) => (&tail[..i], Some(&tail[i..])),
        None => (tail, None),
    };
    if name.is_empty() || name == "." || name == ".." {
        return Mapped::NoName;
    }
    let with_query = |p: &str| match query {
        Some(q) => format!("{p}?{q}"),
        None => p.to_string(),
    };
    match rest {
        None => Mapped::AddSlash(with_query(&format!("{PREFIX}{name}/"))),
        Some(rest) => Mapped::Forward {
            name,
            target: with_query(rest),
        },
    }
}

/// The prefix a service is reached under (`X-Forwarded-Prefix`).
pub fn prefix_of(name: &str) -> String {
    format!("{PREFIX}{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward<'a>(name: &'a str, target: &str) -> Mapped<'a> {
        Mapped::Forward {
            name,
            target: target.to_string(),
        }
    }

    #[test]
    fn the_name_is_the_first_segment_and_the_rest_goes_to_the_service() {
        assert_eq!(map("/services/llm/", None), forward("llm", "/"));
        assert_eq!(
            map("/services/llm/v1/chat/completions", None),
            forward("llm", "/v1/chat/completions")
        );
        assert_eq!(
            map("/services/llm/v1/models", Some("a=1&b=%2F")),
            forward("llm", "/v1/models?a=1&b=%2F")
        );
        // Encoded characters stay as sent.
        assert_eq!(map("/services/llm/a%20b/", None), forward("llm", "/a%20b/"));
        assert_eq!(prefix_of("llm"), "/services/llm");
    }

    #[test]
    fn without_its_slash_the_address_redirects_and_without_a_name_it_is_none() {
        assert_eq!(
            map("/services/llm", None),
            Mapped::AddSlash("/services/llm/".into())
        );
        assert_eq!(
            map("/services/llm", Some("x=1")),
            Mapped::AddSlash("/services/llm/?x=1".into())
        );
        assert_eq!(map("/services/", None), Mapped::NoName);
        assert_eq!(map("/services//x", None), Mapped::NoName);
        assert_eq!(map("/services/../x", None), Mapped::NoName);
        assert_eq!(map("/slurm/v0.0.44/jobs", None), Mapped::NoName);
    }

    #[test]
    fn a_path_never_names_another_host() {
        // What looks like a host in the rest is only a path on the service: the
        // request goes to the service's node whatever it says.
        assert_eq!(
            map("/services/llm//evil.example:80/x", None),
            forward("llm", "//evil.example:80/x")
        );
        assert_eq!(
            map("/services/llm/http://evil.example/", None),
            forward("llm", "/http://evil.example/")
        );
    }
}
