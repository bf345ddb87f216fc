//! The columns sreport's reports take in `format=` (`Cluster`, `Allocated%12`, `Used`,
//! ...), matched by name prefix in sreport's order, with their default widths.

use super::conditions::split_list;
use super::print::{ncase_eq, Column, TimeFormat};
use super::reports::Output;

/// What a cluster report's column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CField {
    /// `Account`.
    Acct,
    /// `Allocated`.
    Alloc,
    /// `Cluster`.
    Cluster,
    /// `Down`.
    Down,
    /// `Idle`.
    Idle,
    /// `Login`.
    Login,
    /// `Over Comm`.
    Over,
    /// `PLND Down`.
    PlanDown,
    /// `Proper Name`.
    Proper,
    /// `Reported`.
    Reported,
    /// `Planned`.
    Plan,
    /// `TRES Count`.
    Count,
    /// `TRES Name`.
    TresName,
    /// `Used`.
    Used,
    /// `WCKey`.
    WcKey,
    /// `Energy`.
    Energy,
}

/// Splits `Name%12` into the name and its width (0: the default).
pub(super) fn with_width(spec: &str) -> (&str, i32) {
    match spec.split_once('%') {
        Some((n, w)) => (n, w.parse().unwrap_or(0)),
        None => (spec, 0),
    }
}

/// A cluster report's column, matched as sreport matches it (the first name `spec`
/// begins, in its order); `None`: an unknown field.
pub(super) fn cluster_column(spec: &str, format: TimeFormat, tree: bool) -> Option<Column<CField>> {
    let (name, width) = with_width(spec);
    let n = name.len();
    let is = |full: &str, min: usize| ncase_eq(full, name, n.max(min));
    let per = format.with_percent();
    let w = |plain: i32, with: i32| if per { with } else { plain };
    let (kind, header, len) = if is("Accounts", 2) {
        (CField::Acct, "Account", if tree { -20 } else { 15 })
    } else if is("allocated", 2) {
        (CField::Alloc, "Allocated", w(12, 20))
    } else if is("Cluster", 2) {
        (CField::Cluster, "Cluster", 9)
    } else if is("down", 1) {
        (CField::Down, "Down", w(10, 18))
    } else if is("idle", 1) {
        (CField::Idle, "Idle", w(12, 20))
    } else if is("Login", 1) {
        (CField::Login, "Login", 9)
    } else if is("overcommitted", 1) {
        (CField::Over, "Over Comm", w(9, 18))
    } else if is("PlannedDown", 2) {
        (CField::PlanDown, "PLND Down", w(10, 18))
    } else if is("Proper", 2) {
        (CField::Proper, "Proper Name", 15)
    } else if is("reported", 3) {
        (CField::Reported, "Reported", w(12, 20))
    } else if is("reserved", 3) || is("planned", 4) {
        (CField::Plan, "Planned", w(9, 18))
    } else if is("TresCount", 5) || is("cpucount", 2) || is("count", 2) {
        (CField::Count, "TRES Count", 10)
    } else if is("TresName", 5) {
        (CField::TresName, "TRES Name", 14)
    } else if is("Used", 1) {
        (CField::Used, "Used", w(10, 18))
    } else if is("WCKey", 2) {
        (CField::WcKey, "WCKey", if tree { 20 } else { 15 })
    } else if is("Energy", 1) {
        (CField::Energy, "Energy", w(10, 18))
    } else {
        return None;
    };
    Some(Column {
        kind,
        name: header,
        len: if width != 0 { width } else { len },
    })
}

/// The columns of `format` (or `default`), unknown fields said on stderr.
pub(super) fn columns<K>(
    format: &[String],
    default: &str,
    out: &mut Output,
    make: impl Fn(&str) -> Option<Column<K>>,
) -> Vec<Column<K>> {
    let specs: Vec<String> = if format.is_empty() {
        split_list(default)
    } else {
        format.to_vec()
    };
    let mut cols = Vec::new();
    for s in specs {
        match make(&s) {
            Some(c) => cols.push(c),
            None => {
                out.code = 1;
                out.stderr.push_str(&format!(" Unknown field '{s}'\n"));
            }
        }
    }
    cols
}

/// What a `user TopUsage` column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UField {
    /// `Account`.
    Acct,
    /// `Cluster`.
    Cluster,
    /// `Energy`.
    Energy,
    /// `Login`.
    Login,
    /// `Proper Name`.
    Proper,
    /// `TRES Name`.
    TresName,
    /// `Used`.
    Used,
}

pub(super) fn user_column(spec: &str, format: TimeFormat) -> Option<Column<UField>> {
    let (name, width) = with_width(spec);
    let n = name.len();
    let is = |full: &str, min: usize| ncase_eq(full, name, n.max(min));
    let w = if format.with_percent() { 18 } else { 10 };
    let (kind, header, len) = if is("Accounts", 1) {
        (UField::Acct, "Account", 15)
    } else if is("Cluster", 1) {
        (UField::Cluster, "Cluster", 9)
    } else if is("Energy", 1) {
        (UField::Energy, "Energy", w)
    } else if is("Login", 1) {
        (UField::Login, "Login", 9)
    } else if is("Proper", 1) {
        (UField::Proper, "Proper Name", 15)
    } else if is("TresName", 5) {
        (UField::TresName, "TRES Name", 14)
    } else if is("Used", 1) {
        (UField::Used, "Used", w)
    } else {
        return None;
    };
    Some(Column {
        kind,
        name: header,
        len: if width != 0 { width } else { len },
    })
}
