//! Who may open the dashboard's pages, and as whom the pages ask the controller.
//!
//! - `sluice ui` (a server of the user who starts it): every request shows the secret
//!   printed at start (`?key=...`, then a same-site, HTTP-only cookie), and the pages ask
//!   as that user, over the connection the Slurm commands use.
//! - The controller's own port (`/ui` there, with `AuthAltTypes=auth/jwt`): each browser
//!   logs in with a token (`scontrol token`), kept in a same-site, HTTP-only cookie, and
//!   every page asks the controller with that token, so the controller decides who the
//!   caller is and what they may see (`PrivateData`), as for any other client. Nothing
//!   here trusts a name the browser sends: the name shown is the one the controller
//!   answered at login.

use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use sluice_proto::{Client, Signer};

use super::page;

/// The cookie that carries `sluice ui`'s secret.
pub const KEY_COOKIE: &str = "sluice_ui";
/// The cookie that carries a logged-in browser's token.
pub const TOKEN_COOKIE: &str = "sluice_token";
/// The cookie that carries the name the controller gave the token at login (shown only).
pub const USER_COOKIE: &str = "sluice_user";

/// How requests are admitted.
pub enum Access {
    /// `sluice ui`: the secret, and the user who started it.
    Key {
        /// The secret every request must show.
        key: String,
        /// Whose identity the pages are asked with.
        who: String,
    },
    /// Served by the controller: a token per browser, sent to the controller's TCP
    /// address (`host:port`) with each of the page's requests.
    Tokens {
        /// Where the controller listens.
        controller: String,
    },
}

/// An admitted request: whom the page is for, and the client that asks as them.
pub struct Session {
    /// The user's name, for the page's header.
    pub who: String,
    /// Asks the controller as that user.
    pub client: Client,
}

/// A fresh secret: 32 random bytes in hex.
pub fn new_key() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of the cookie `name` in `headers`.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// Compares without leaving the length of the common prefix in the time taken.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `uri` without its `key` parameter: where the browser goes once the key is a cookie.
fn without_key(uri: &Uri) -> String {
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("key="))
        .collect();
    if rest.is_empty() {
        uri.path().to_string()
    } else {
        format!("{}?{}", uri.path(), rest.join("&"))
    }
}

fn page_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The login form, going back to `next` once logged in; `problem` says why it is shown
/// again.
pub fn login_page(next: &str, problem: Option<&str>) -> Response {
    let problem = problem.map_or_else(String::new, |p| {
        format!("<p class=\"error\">{}</p>", page::esc(p))
    });
    let body = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Log in · Sluice</title><style>{}</style></head>\
<body><header><strong>Sluice</strong></header><main><h1>Log in</h1>{problem}<form method=\"post\" action=\"/ui/login\">\
<p><label>Token <input type=\"password\" name=\"token\" size=\"60\" autocomplete=\"off\"></label></p>\
<input type=\"hidden\" name=\"next\" value=\"{}\"><p><button type=\"submit\">Log in</button></p></form>\
<p>Get a token on a host of the cluster with <code>scontrol token</code> (the part after <code>SLURM_JWT=</code>, or the whole line).</p>\
</main></body></html>\n",
        page::STYLE,
        page::esc(next)
    );
    page_response(StatusCode::UNAUTHORIZED, body)
}

/// Where to go after logging in: a dashboard page of this server, nothing else (no
/// redirection to another site through the login form).
pub fn safe_next(next: &str) -> &str {
    let ours = (next == "/ui" || next.starts_with("/ui/") || next.starts_with("/ui?"))
        && !next.contains("//")
        && !next.contains('\\');
    if ours {
        next
    } else {
        "/ui"
    }
}

/// The token in what a user pasted: `SLURM_JWT=...` or the token alone.
pub fn pasted_token(text: &str) -> Option<&str> {
    let t = text.trim();
    let t = t.strip_prefix("SLURM_JWT=").unwrap_or(t).trim();
    let ok = !t.is_empty()
        && t.split('.').count() == 3
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'='));
    ok.then_some(t)
}

/// A client that asks `controller` with `token`.
pub fn token_client(controller: &str, token: &str) -> Client {
    Client::signed(
        controller,
        Signer::Token(std::sync::Arc::new(token.to_string())),
    )
    .with_timeout(std::time::Duration::from_secs(30))
}

/// The cookies of a logged-in browser.
pub fn login_cookies(token: &str, user: &str) -> [(header::HeaderName, String); 2] {
    [
        (
            header::SET_COOKIE,
            format!("{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/ui"),
        ),
        (
            header::SET_COOKIE,
            format!("{USER_COOKIE}={user}; HttpOnly; SameSite=Strict; Path=/ui"),
        ),
    ]
}

/// The cookies that log a browser out.
pub fn logout_cookies() -> [(header::HeaderName, String); 2] {
    [
        (
            header::SET_COOKIE,
            format!("{TOKEN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0"),
        ),
        (
            header::SET_COOKIE,
            format!("{USER_COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0"),
        ),
    ]
}

impl Access {
    /// The session of a request, or the answer that refuses it: with `sluice ui`, a
    /// redirect that sets the cookie when the address carries the key (to the same page,
    /// without the key), else 401; on the controller, the login form unless the browser
    /// shows a token.
    pub fn admit(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        key: Option<&str>,
    ) -> Result<Session, Box<Response>> {
        match self {
            Access::Key { key: secret, who } => {
                if let Some(k) = key {
                    if constant_time_eq(k.as_bytes(), secret.as_bytes()) {
                        let cookie =
                            format!("{KEY_COOKIE}={secret}; HttpOnly; SameSite=Strict; Path=/");
                        let to = without_key(uri);
                        return Err(Box::new(
                            ([(header::SET_COOKIE, cookie)], Redirect::to(&to)).into_response(),
                        ));
                    }
                }
                if cookie(headers, KEY_COOKIE)
                    .is_some_and(|v| constant_time_eq(v.as_bytes(), secret.as_bytes()))
                {
                    return Ok(Session {
                        who: who.clone(),
                        client: crate::slurm::common::controller(),
                    });
                }
                Err(Box::new(page_response(
                    StatusCode::UNAUTHORIZED,
                    "<!DOCTYPE html><title>Sluice</title><p>Open the address that <code>sluice ui</code> printed when it started: it carries the key to this dashboard.</p>\n".into(),
                )))
            }
            Access::Tokens { controller } => {
                let next = uri.path_and_query().map_or("/ui", |p| p.as_str());
                match cookie(headers, TOKEN_COOKIE).and_then(pasted_token) {
                    Some(token) => Ok(Session {
                        who: cookie(headers, USER_COOKIE).unwrap_or("?").to_string(),
                        client: token_client(controller, token),
                    }),
                    None => Err(Box::new(login_page(safe_next(next), None))),
                }
            }
        }
    }

    /// Whether a refusal by the controller means the browser must log in again (its
    /// token expired or was refused).
    pub fn must_log_in_again(&self, e: &sluice_proto::ClientError) -> bool {
        matches!(self, Access::Tokens { .. })
            && matches!(e, sluice_proto::ClientError::Status { status: 401, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_access() -> Access {
        Access::Key {
            key: "k3y".into(),
            who: "alice".into(),
        }
    }

    fn at(u: &str) -> Uri {
        u.parse().unwrap()
    }

    #[test]
    fn only_the_printed_key_or_its_cookie_opens_sluice_ui() {
        let a = key_access();
        let mut headers = HeaderMap::new();
        let refused = a.admit(&headers, &at("/ui"), None).err().unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let wrong = a
            .admit(&headers, &at("/ui?key=k3z"), Some("k3z"))
            .err()
            .unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        let filtered = a
            .admit(
                &headers,
                &at("/ui?user=bob&key=k3y&partition=gpu"),
                Some("k3y"),
            )
            .err()
            .unwrap();
        assert_eq!(
            filtered.headers()[header::LOCATION],
            "/ui?user=bob&partition=gpu"
        );
        let welcomed = a
            .admit(&headers, &at("/ui/nodes?key=k3y"), Some("k3y"))
            .err()
            .unwrap();
        assert_eq!(welcomed.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            welcomed.headers()[header::LOCATION],
            "/ui/nodes",
            "the key leaves the address"
        );
        assert_eq!(
            welcomed.headers()[header::SET_COOKIE],
            "sluice_ui=k3y; HttpOnly; SameSite=Strict; Path=/"
        );
        headers.insert(header::COOKIE, "other=1; sluice_ui=k3y".parse().unwrap());
        assert_eq!(
            a.admit(&headers, &at("/ui"), None).ok().unwrap().who,
            "alice"
        );
        headers.insert(header::COOKIE, "sluice_ui=k3".parse().unwrap());
        assert!(a.admit(&headers, &at("/ui"), None).is_err());
    }

    #[test]
    fn on_the_controller_a_browser_without_a_token_gets_the_login_form() {
        let a = Access::Tokens {
            controller: "127.0.0.1:1".into(),
        };
        let mut headers = HeaderMap::new();
        let form = a.admit(&headers, &at("/ui/nodes"), None).err().unwrap();
        assert_eq!(form.status(), StatusCode::UNAUTHORIZED);
        // The key of `sluice ui` means nothing here.
        headers.insert(header::COOKIE, "sluice_ui=k3y".parse().unwrap());
        assert!(a.admit(&headers, &at("/ui"), Some("k3y")).is_err());
        headers.insert(
            header::COOKIE,
            "sluice_token=a.b.c; sluice_user=bob".parse().unwrap(),
        );
        let s = a.admit(&headers, &at("/ui"), None).ok().unwrap();
        assert_eq!(s.who, "bob");
        assert!(s.client.is_tcp());
        // Not a token: the form again.
        headers.insert(header::COOKIE, "sluice_token=<script>".parse().unwrap());
        assert!(a.admit(&headers, &at("/ui"), None).is_err());
    }

    #[test]
    fn pasted_tokens_and_where_a_login_may_lead() {
        assert_eq!(pasted_token("SLURM_JWT=a.b.c\n"), Some("a.b.c"));
        assert_eq!(pasted_token("  x-y.z_w.q "), Some("x-y.z_w.q"));
        assert_eq!(pasted_token("a.b"), None);
        assert_eq!(pasted_token("a.b.c; Path=/"), None);
        assert_eq!(pasted_token(""), None);
        assert_eq!(safe_next("/ui/job/12"), "/ui/job/12");
        assert_eq!(safe_next("/ui?user=bob"), "/ui?user=bob");
        assert_eq!(safe_next("https://evil.example/ui"), "/ui");
        assert_eq!(safe_next("//evil.example/ui"), "/ui");
        assert_eq!(safe_next("/uix"), "/ui");
    }

    #[test]
    fn keys_are_fresh_and_long() {
        let (a, b) = (new_key(), new_key());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
