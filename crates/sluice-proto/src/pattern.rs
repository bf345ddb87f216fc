//! Slurm's file name patterns for `--output`, `--error` and `--input`.
//!
//! `%%` a literal `%`; `%A` the array's job id (the job id outside arrays); `%a` the
//! array task index (4294967294 outside arrays, as Slurm prints); `%j` the job id; `%J`
//! job id and step (`12.0`; the job id for the batch script); `%N` the first node's
//! name; `%n` the node's index in the job; `%s` the step (`batch` for the script); `%t`
//! the task rank; `%u` the user name; `%x` the job name. A width between `%` and the
//! letter zero-pads numbers: `%4a` gives `0007`. An unknown code is kept as written.

/// Values the patterns refer to.
#[derive(Clone, Debug, Default)]
pub struct PatternContext<'a> {
    /// Job id.
    pub job_id: u64,
    /// Array job id and task index, for array tasks.
    pub array: Option<(u64, u32)>,
    /// Step id (`None`: the batch script).
    pub step: Option<u32>,
    /// First node's name.
    pub node: &'a str,
    /// Node index in the job.
    pub node_index: u32,
    /// Task rank.
    pub task: u32,
    /// User name.
    pub user: &'a str,
    /// Job name.
    pub job_name: &'a str,
}

/// Slurm's value for "no array task" in `%a`.
const NO_ARRAY_TASK: u64 = 4_294_967_294;

/// Expands a file name pattern.
pub fn expand(pattern: &str, ctx: &PatternContext) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        let w: usize = width.parse().unwrap_or(0).min(10);
        let num = |v: u64| format!("{v:0w$}");
        match chars.next() {
            Some('%') => out.push('%'),
            Some('A') => out.push_str(&num(ctx.array.map_or(ctx.job_id, |a| a.0))),
            Some('a') => out.push_str(&num(ctx.array.map_or(NO_ARRAY_TASK, |a| a.1 as u64))),
            Some('j') => out.push_str(&num(ctx.job_id)),
            Some('J') => match ctx.step {
                Some(s) => out.push_str(&format!("{}.{s}", num(ctx.job_id))),
                None => out.push_str(&num(ctx.job_id)),
            },
            Some('N') => out.push_str(ctx.node),
            Some('n') => out.push_str(&num(ctx.node_index as u64)),
            Some('s') => match ctx.step {
                Some(s) => out.push_str(&num(s as u64)),
                None => out.push_str("batch"),
            },
            Some('t') => out.push_str(&num(ctx.task as u64)),
            Some('u') => out.push_str(ctx.user),
            Some('x') => out.push_str(ctx.job_name),
            Some(other) => {
                out.push('%');
                out.push_str(&width);
                out.push(other);
            }
            None => {
                out.push('%');
                out.push_str(&width);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_padding() {
        let ctx = PatternContext {
            job_id: 128,
            array: Some((120, 7)),
            step: None,
            node: "node01",
            node_index: 0,
            task: 3,
            user: "alice",
            job_name: "train",
        };
        assert_eq!(expand("slurm-%A_%a.out", &ctx), "slurm-120_7.out");
        assert_eq!(expand("logs/%j.out", &ctx), "logs/128.out");
        assert_eq!(
            expand("%x-%u-%N-%4a-%t-%s-%%-%q", &ctx),
            "train-alice-node01-0007-3-batch-%-%q"
        );
        let plain = PatternContext {
            array: None,
            step: Some(2),
            ..ctx
        };
        assert_eq!(expand("%A_%a %J %s", &plain), "128_4294967294 128.2 2");
    }
}
