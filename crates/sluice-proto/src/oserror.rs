//! System errors as C programs print them (`strerror`): Slurm's messages end with
//! `No such file or directory`, not Rust's `No such file or directory (os error 2)`.

/// `e`'s text without Rust's ` (os error N)` suffix.
pub fn describe(e: &std::io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn os_errors_read_as_strerror() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(super::describe(&e), "No such file or directory");
        let e = std::io::Error::other("bad thing");
        assert_eq!(super::describe(&e), "bad thing");
    }
}
