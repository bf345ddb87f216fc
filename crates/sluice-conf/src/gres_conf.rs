//! `gres.conf`: the devices behind each node's generic resources (GRES).
//!
//! Syntax as in `gres.conf(5)` of Slurm 22.05, read the way [`crate::slurm_conf`] reads
//! slurm.conf: `Key=Value` pairs separated by whitespace, keys case-insensitive, `#`
//! starts a comment, a trailing `\` continues the line, `Include FILE` reads another file
//! (relative to the including one). Each line is one record (`Name=`), or an
//! `AutoDetect=` setting, or both with `NodeName=`. Unknown keys draw a warning with file
//! and line; malformed values are errors with file and line.
//!
//! [`parse_str`] and [`read`] give a [`GresConf`]. [`resolve`] then merges it with each
//! node's `Gres=` from slurm.conf the way slurmd does (Slurm's `_merge_config` in
//! `gres.c`), giving every node its list of [`GresDevice`]s; [`resolve_detected`] also
//! merges in the GPUs AutoDetect found on a node, as slurmd does.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use sluice_core::Cluster;

use crate::hostlist;
use crate::reader::ConfReader;
use crate::slurm_conf::{ConfError, SlurmConf};

/// Most device files one `File=` or `MultipleFiles=` value may name. `gres.conf(5)`:
/// "When specifying File, Count is limited in size (currently 1024) for each node."
pub const MAX_FILES: usize = 1024;

/// Highest core index `Cores=` accepts while parsing, before [`resolve`] compares the
/// list with the node's CPUs (so that a typo cannot make a list of billions).
pub const MAX_CORE_INDEX: u32 = 65_535;

/// Highest connection count in `Links=` (Slurm's `GRES_MAX_LINK`).
pub const MAX_LINK: i32 = 1023;

/// GRES names whose `Count` is independent of their `File`s (Slurm's `gres_id_shared`:
/// several units share one device).
pub const SHARED_NAMES: &[&str] = &["mps", "shard"];

/// `AutoDetect=`: the library slurmd asks for GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AutoDetect {
    /// NVIDIA GPUs through NVML.
    Nvml,
    /// AMD GPUs through ROCm SMI.
    Rsmi,
    /// Intel GPUs through oneAPI.
    Oneapi,
    /// AWS Trainium/Inferentia through the Neuron runtime (Slurm 24.05 and later; accepted
    /// here so that newer files load).
    Nrt,
    /// No detection; overrides a global value for the nodes named.
    Off,
}

impl AutoDetect {
    /// Parses a value, case-insensitively.
    ///
    /// Errors: anything but `nvml`, `rsmi`, `oneapi`, `nrt` and `off`. (Slurm logs
    /// "unknown autodetect flag" and detects nothing; Sluice refuses the file.)
    pub fn parse(value: &str) -> Result<AutoDetect, String> {
        match value.to_ascii_lowercase().as_str() {
            "nvml" => Ok(AutoDetect::Nvml),
            "rsmi" => Ok(AutoDetect::Rsmi),
            "oneapi" => Ok(AutoDetect::Oneapi),
            "nrt" => Ok(AutoDetect::Nrt),
            "off" => Ok(AutoDetect::Off),
            _ => Err(format!(
                "unknown value '{value}' (nvml, rsmi, oneapi, nrt or off)"
            )),
        }
    }

    /// The value as written in gres.conf (lower case).
    pub fn as_str(self) -> &'static str {
        match self {
            AutoDetect::Nvml => "nvml",
            AutoDetect::Rsmi => "rsmi",
            AutoDetect::Oneapi => "oneapi",
            AutoDetect::Nrt => "nrt",
            AutoDetect::Off => "off",
        }
    }

    /// Whether this value detects devices (everything but `off`).
    pub fn detects(self) -> bool {
        self != AutoDetect::Off
    }
}

impl fmt::Display for AutoDetect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Flags=` of a record, as written (Slurm 22.05's set plus `all_sharing` and
/// `explicit` of later releases). Slurm's defaults (every `*_env` flag for a `gpu` line
/// without env flags, inheritance from the previous line of the same name) are not
/// applied here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GresFlags {
    /// `CountOnly`: track counts only, load no plugin.
    pub count_only: bool,
    /// `nvidia_gpu_env`: set `CUDA_VISIBLE_DEVICES`.
    pub nvidia_gpu_env: bool,
    /// `amd_gpu_env`: set `ROCR_VISIBLE_DEVICES`.
    pub amd_gpu_env: bool,
    /// `intel_gpu_env`: set `ZE_AFFINITY_MASK`.
    pub intel_gpu_env: bool,
    /// `opencl_env`: set `GPU_DEVICE_ORDINAL`.
    pub opencl_env: bool,
    /// `no_gpu_env`: set no GPU variable (excludes the four flags above).
    pub no_gpu_env: bool,
    /// `one_sharing`: a shared GRES (mps, shard) uses one sharing device only.
    pub one_sharing: bool,
    /// `all_sharing`: a shared GRES may use every sharing device (excludes `one_sharing`).
    pub all_sharing: bool,
    /// `explicit`: not allocated unless the job asks for it.
    pub explicit: bool,
}

impl GresFlags {
    /// Parses a comma-separated `Flags=` value; flag names are case-insensitive.
    /// Returns the flags and the tokens it did not know (for a warning; Slurm ignores
    /// them silently, as it looks for known names as substrings).
    ///
    /// Errors: `no_gpu_env` with another `*_env` flag (Slurm: "must be mutually exclusive
    /// to all other GRES env flags"), `one_sharing` with `all_sharing` (`gres.conf(5)`:
    /// "not compatible").
    pub fn parse(value: &str) -> Result<(GresFlags, Vec<String>), String> {
        let mut f = GresFlags::default();
        let mut unknown = Vec::new();
        for token in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match token.to_ascii_lowercase().as_str() {
                "countonly" => f.count_only = true,
                "nvidia_gpu_env" => f.nvidia_gpu_env = true,
                "amd_gpu_env" => f.amd_gpu_env = true,
                "intel_gpu_env" => f.intel_gpu_env = true,
                "opencl_env" => f.opencl_env = true,
                "no_gpu_env" => f.no_gpu_env = true,
                "one_sharing" => f.one_sharing = true,
                "all_sharing" => f.all_sharing = true,
                "explicit" => f.explicit = true,
                _ => unknown.push(token.to_string()),
            }
        }
        if f.no_gpu_env && f.has_env() {
            return Err(format!(
                "'{value}' contains no_gpu_env, which excludes every other *_env flag"
            ));
        }
        if f.one_sharing && f.all_sharing {
            return Err(format!(
                "'{value}' contains both one_sharing and all_sharing"
            ));
        }
        Ok((f, unknown))
    }

    /// Whether any of `nvidia_gpu_env`, `amd_gpu_env`, `intel_gpu_env`, `opencl_env` is set.
    pub fn has_env(&self) -> bool {
        self.nvidia_gpu_env || self.amd_gpu_env || self.intel_gpu_env || self.opencl_env
    }
}

impl fmt::Display for GresFlags {
    /// The set flags, comma-separated, in the order of the struct's fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = [
            (self.count_only, "CountOnly"),
            (self.nvidia_gpu_env, "nvidia_gpu_env"),
            (self.amd_gpu_env, "amd_gpu_env"),
            (self.intel_gpu_env, "intel_gpu_env"),
            (self.opencl_env, "opencl_env"),
            (self.no_gpu_env, "no_gpu_env"),
            (self.one_sharing, "one_sharing"),
            (self.all_sharing, "all_sharing"),
            (self.explicit, "explicit"),
        ];
        let set: Vec<&str> = all.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        f.write_str(&set.join(","))
    }
}

/// One `Name=` line of gres.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GresRecord {
    /// The file the line is in.
    pub path: PathBuf,
    /// 1-based line (the first line of a continued line).
    pub line: usize,
    /// `NodeName=` expanded; `None` when the line applies to every node.
    pub nodes: Option<Vec<String>>,
    /// `Name=` as written (`gpu`, `mps`, `shard`, `nic`, ...).
    pub name: String,
    /// `Type=` as written (`a100`), if given.
    pub gres_type: Option<String>,
    /// Device files from `File=` (one device each) or `MultipleFiles=` (one device in
    /// all), expanded (`/dev/nvidia[0-1]` is `/dev/nvidia0`, `/dev/nvidia1`). Empty
    /// when the line names none.
    pub files: Vec<String>,
    /// The files came from `MultipleFiles=` (one MIG-capable GPU behind several files).
    pub multiple_files: bool,
    /// Units this line describes: `Count=` if given, else the number of `File=` files,
    /// 1 for `MultipleFiles=`, else 1. For `mps` and `shard` the count is independent of
    /// the files (units shared over them).
    pub count: u64,
    /// `Cores=` (or the older `CPUs=`) as sorted, distinct core indices; `None` when any
    /// core may use the devices.
    pub cores: Option<Vec<u32>>,
    /// `Links=`: connections from this device to device 0, 1, ...; `-1` marks the device
    /// itself, `0` no connection.
    pub links: Option<Vec<i32>>,
    /// `Flags=`.
    pub flags: GresFlags,
}

impl GresRecord {
    /// Whether the line applies to `node` (it names the node, or names no nodes).
    pub fn applies_to(&self, node: &str) -> bool {
        self.nodes
            .as_ref()
            .is_none_or(|hosts| hosts.iter().any(|h| h == node))
    }

    /// Whether the GRES is a shared one ([`SHARED_NAMES`]), whose count is not tied to
    /// its files.
    pub fn is_shared(&self) -> bool {
        is_shared_name(&self.name)
    }
}

fn is_shared_name(name: &str) -> bool {
    SHARED_NAMES.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// A `NodeName=... AutoDetect=...` setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAutoDetect {
    /// The nodes named.
    pub nodes: Vec<String>,
    /// Their AutoDetect.
    pub value: AutoDetect,
    /// Where it was set.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
}

/// A parsed gres.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GresConf {
    /// The file read (or the path given to [`parse_str`]).
    pub path: PathBuf,
    /// Global `AutoDetect=` (a line without `NodeName=` that starts with it).
    pub autodetect: Option<AutoDetect>,
    /// Node-specific `AutoDetect=`, which beats the global one.
    pub node_autodetect: Vec<NodeAutoDetect>,
    /// The `Name=` lines, in file order (included files in place).
    pub records: Vec<GresRecord>,
    /// Warnings (`FILE:LINE: ...`) for what was ignored.
    pub warnings: Vec<String>,
}

impl GresConf {
    /// The lines that apply to `node`, in file order: those whose `NodeName=` names it
    /// and those without `NodeName=`. Names are not checked against `GresTypes` here;
    /// [`resolve`] does that.
    pub fn for_node(&self, node: &str) -> Vec<&GresRecord> {
        self.records.iter().filter(|r| r.applies_to(node)).collect()
    }

    /// The AutoDetect in force on `node`: its node-specific value if any, else the
    /// global one (`gres.conf(5)`: "Node-specific AutoDetects will trump the global").
    pub fn autodetect_for(&self, node: &str) -> Option<AutoDetect> {
        self.node_autodetect
            .iter()
            .find(|a| a.nodes.iter().any(|h| h == node))
            .map(|a| a.value)
            .or(self.autodetect)
    }
}

/// Reads and parses a gres.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, a malformed value (see [`parse_str`]).
pub fn read(path: &Path) -> Result<GresConf, ConfError> {
    let mut p = Parser::new(path);
    p.read_file(path, 0)?;
    Ok(p.conf)
}

/// Parses gres.conf text; `path` is used for messages and for relative `Include`s.
///
/// Errors, each with file and line: a key given twice on a line (one record per line);
/// a line with neither `Name=` nor `AutoDetect=`; an empty `Name=` or `Type=`; a bad
/// `NodeName=` hostlist or `File=` range; `File=` with `MultipleFiles=`;
/// `MultipleFiles=` naming fewer than two files; more than [`MAX_FILES`] files; a bad
/// `Count=` (see [`parse_count`]); `Count=` differing from the number of files for a
/// GRES that is not shared (Slurm: "count does not match File value"); a bad `Cores=`
/// ([`parse_cores`]) or `Links=` ([`parse_links`]); `Links=` on a line of more than one
/// device; a bad `AutoDetect=` value, or two that disagree (for a node, or globally);
/// contradictory `Flags=` ([`GresFlags::parse`]).
pub fn parse_str(text: &str, path: &Path) -> Result<GresConf, ConfError> {
    let mut p = Parser::new(path);
    p.parse_text(text, path, 0)?;
    Ok(p.conf)
}

/// Parses a `Count=` value: a non-negative integer with an optional `K`, `M`, `G`, `T`
/// or `P` suffix (case-insensitive) multiplying it by 1024, 1024², ... (`gres.conf(5)`).
///
/// Errors: anything else, or a value that does not fit below `u64::MAX` (Slurm's
/// `NO_VAL64`).
pub fn parse_count(value: &str) -> Result<u64, String> {
    let bad =
        || format!("invalid count '{value}' (a number with an optional K, M, G, T or P suffix)");
    let digits_end = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (digits, suffix) = value.split_at(digits_end);
    if digits.is_empty() {
        return Err(bad());
    }
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => return Err(bad()),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n < u64::MAX)
        .ok_or_else(bad)
}

/// Expands a `File=` value into device paths, in the order written: hostlist-style
/// ranges (`/dev/nvidia[0-3]`, `/dev/nvidia[0,2-3]`, zero-padding kept) and
/// comma-separated names (`/dev/nvidia0,/dev/nvidia2`), as Slurm does with its hostlist
/// code. Uses [`hostlist::expand`].
///
/// Errors: a malformed range, an empty name, more than [`MAX_FILES`] files.
pub fn expand_files(value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Err("empty file name".into());
    }
    let files = hostlist::expand(value)
        .map_err(|e| format!("invalid file range '{value}': {}", e.message))?;
    if files.len() > MAX_FILES {
        return Err(format!(
            "'{value}' names {} files; at most {MAX_FILES}",
            files.len()
        ));
    }
    Ok(files)
}

/// Formats device paths as the shortest `File=` value that [`expand_files`] turns back
/// into them (`/dev/nvidia[0-7]`). Uses [`hostlist::compress`], so paths sharing a prefix
/// are sorted by their trailing number and deduplicated.
pub fn format_files<S: AsRef<str>>(files: &[S]) -> String {
    hostlist::compress(files)
}

/// Parses a `Cores=` value: comma-separated core indices and `lo-hi` ranges
/// (`0-15,32-47`). Returns the indices sorted and without repeats.
///
/// Errors: an empty value or item, a non-numeric index, a range running backwards, an
/// index above [`MAX_CORE_INDEX`].
pub fn parse_cores(value: &str) -> Result<Vec<u32>, String> {
    let mut set = std::collections::BTreeSet::new();
    for item in value.split(',').map(str::trim) {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let num = |s: &str| -> Result<u32, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("'{item}' is not a core index or range"));
            }
            let n = s
                .parse::<u32>()
                .map_err(|_| format!("core index '{s}' is too large"))?;
            if n > MAX_CORE_INDEX {
                return Err(format!("core index {n} is above {MAX_CORE_INDEX}"));
            }
            Ok(n)
        };
        let (a, b) = (num(lo)?, num(hi)?);
        if b < a {
            return Err(format!("core range '{item}' runs backwards"));
        }
        set.extend(a..=b);
    }
    Ok(set.into_iter().collect())
}

/// Formats core indices as a `Cores=` value: sorted, runs as `lo-hi` (`0-15,32-47`).
pub fn format_cores(cores: &[u32]) -> String {
    let mut sorted = cores.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j].checked_add(1) == Some(sorted[j + 1]) {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Parses a `Links=` value: comma-separated integers, one per device of the node in
/// device order, each the number of connections to that device; exactly one `-1`
/// marks the device itself. Rules of Slurm's `gres_links_validate`: values from -2 to
/// [`MAX_LINK`], one and only one -1.
///
/// Errors: an empty value or item, a non-integer, a value out of range, no -1 or more
/// than one.
pub fn parse_links(value: &str) -> Result<Vec<i32>, String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim) {
        let v = item
            .parse::<i32>()
            .ok()
            .filter(|v| (-2..=MAX_LINK).contains(v))
            .ok_or_else(|| {
                format!("'{item}' is not a link count (an integer from -2 to {MAX_LINK})")
            })?;
        out.push(v);
    }
    match out.iter().filter(|v| **v == -1).count() {
        1 => Ok(out),
        0 => Err(format!("'{value}' has no -1 (the device itself)")),
        _ => Err(format!("'{value}' has more than one -1")),
    }
}

struct Parser {
    conf: GresConf,
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        self.line(kv, path, line)
    }
}

impl Parser {
    fn new(path: &Path) -> Self {
        Parser {
            conf: GresConf {
                path: path.to_path_buf(),
                ..GresConf::default()
            },
        }
    }

    /// One logical line: a record, an AutoDetect setting, or both.
    fn line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = |message: String| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        };
        // Canonical key -> (position on the line, key as written, value).
        let mut got: BTreeMap<&'static str, (usize, String, String)> = BTreeMap::new();
        for (i, (k, v)) in kv.into_iter().enumerate() {
            let canon = match k.to_ascii_lowercase().as_str() {
                "nodename" => "NodeName",
                "name" => "Name",
                "type" => "Type",
                "file" | "files" => "File",
                "multiplefiles" => "MultipleFiles",
                "count" => "Count",
                "cores" | "cpus" => "Cores",
                "links" | "link" => "Links",
                "flags" => "Flags",
                "autodetect" => "AutoDetect",
                _ => {
                    self.conf.warnings.push(format!(
                        "{}:{line}: unknown key '{k}' (ignored)",
                        path.display()
                    ));
                    continue;
                }
            };
            if let Some((_, first, _)) = got.get(canon) {
                return Err(err(format!(
                    "{k} given twice on one line (after {first}; gres.conf has one record per line)"
                )));
            }
            got.insert(canon, (i, k, v));
        }
        let value = |key: &str| got.get(key).map(|(_, _, v)| v.as_str());

        let nodes = match value("NodeName") {
            None => None,
            Some("") => return Err(err("NodeName: needs a hostlist".into())),
            Some(v) => Some(hostlist::expand(v).map_err(|e| err(format!("NodeName: {e}")))?),
        };

        if let Some((pos, _, v)) = got.get("AutoDetect") {
            let value = AutoDetect::parse(v).map_err(|m| err(format!("AutoDetect: {m}")))?;
            match &nodes {
                Some(hosts) => self.node_autodetect(hosts, value, path, line)?,
                None if *pos == 0 => match self.conf.autodetect {
                    Some(prev) if prev != value => {
                        return Err(err(format!(
                            "AutoDetect: global value {value} disagrees with the earlier {prev}"
                        )))
                    }
                    _ => self.conf.autodetect = Some(value),
                },
                None => self.conf.warnings.push(format!(
                    "{}:{line}: In-line AutoDetect requires NodeName to take effect (ignored)",
                    path.display()
                )),
            }
        }

        let name = match value("Name") {
            Some("") => return Err(err("Name: needs a value".into())),
            Some(n) => n.to_string(),
            None => {
                let record_keys: Vec<&str> = got
                    .iter()
                    .filter(|(k, _)| !matches!(**k, "NodeName" | "AutoDetect"))
                    .map(|(_, (_, written, _))| written.as_str())
                    .collect();
                if !record_keys.is_empty() {
                    return Err(err(format!(
                        "{} without Name= (each record needs a GRES name)",
                        record_keys.join(", ")
                    )));
                }
                if got.contains_key("AutoDetect") {
                    return Ok(());
                }
                return Err(err(
                    "Invalid GRES data, no type name (a line needs Name= or AutoDetect=)".into(),
                ));
            }
        };
        let gres_type = match value("Type") {
            Some("") => return Err(err("Type: needs a value".into())),
            t => t.map(str::to_string),
        };

        let shared = is_shared_name(&name);
        let (files, multiple_files) = match (value("File"), value("MultipleFiles")) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "File and MultipleFiles options are mutually exclusive".into()
                ))
            }
            (Some(f), None) => (
                expand_files(f).map_err(|m| err(format!("File: {m}")))?,
                false,
            ),
            (None, Some(f)) => {
                let files = expand_files(f).map_err(|m| err(format!("MultipleFiles: {m}")))?;
                if files.len() < 2 {
                    return Err(err(
                        "MultipleFiles does not contain multiple files. Use File instead".into(),
                    ));
                }
                (files, true)
            }
            (None, None) => (Vec::new(), false),
        };
        let from_files: Option<u64> = if multiple_files {
            Some(1)
        } else if files.is_empty() {
            None
        } else {
            Some(files.len() as u64)
        };
        let count = match value("Count") {
            None => from_files.unwrap_or(1),
            Some(c) => {
                let n = parse_count(c).map_err(|m| err(format!("Count: {m}")))?;
                if let Some(expected) = from_files.filter(|e| *e != n && !shared) {
                    let what = if multiple_files {
                        "MultipleFiles is one device".to_string()
                    } else {
                        format!("File names {expected}")
                    };
                    return Err(err(format!(
                        "Invalid GRES record for {name}, count does not match File value (Count={c} but {what})"
                    )));
                }
                n
            }
        };

        let cores = value("Cores")
            .map(|c| parse_cores(c).map_err(|m| err(format!("{}: {m}", got["Cores"].1))))
            .transpose()?;
        let links = value("Links")
            .map(|l| parse_links(l).map_err(|m| err(format!("{}: {m}", got["Links"].1))))
            .transpose()?;
        if links.is_some() {
            let devices = if shared { files.len() as u64 } else { count };
            if devices > 1 {
                return Err(err(format!(
                    "Links: a line with Links describes one device, this one describes {devices}"
                )));
            }
        }
        let flags = match value("Flags") {
            None => GresFlags::default(),
            Some(v) => {
                let (flags, unknown) =
                    GresFlags::parse(v).map_err(|m| err(format!("Flags: {m}")))?;
                for u in unknown {
                    self.conf.warnings.push(format!(
                        "{}:{line}: unknown GRES flag '{u}' (ignored)",
                        path.display()
                    ));
                }
                flags
            }
        };
        self.conf.records.push(GresRecord {
            path: path.to_path_buf(),
            line,
            nodes,
            name,
            gres_type,
            files,
            multiple_files,
            count,
            cores,
            links,
            flags,
        });
        Ok(())
    }

    /// Records a node-specific AutoDetect. Slurm: "If specified multiple times for the
    /// same nodes, they must all be the same value" (else fatal: "duplicate node-local
    /// AutoDetect specification does not match the first").
    fn node_autodetect(
        &mut self,
        hosts: &[String],
        value: AutoDetect,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        for prev in &self.conf.node_autodetect {
            if prev.value == value {
                continue;
            }
            if let Some(h) = hosts.iter().find(|h| prev.nodes.contains(h)) {
                return Err(ConfError {
                    path: path.to_path_buf(),
                    line,
                    message: format!(
                        "duplicate node-local AutoDetect specification does not match the first (node {h}: {value} here, {} at {}:{})",
                        prev.value,
                        prev.path.display(),
                        prev.line
                    ),
                });
            }
        }
        self.conf.node_autodetect.push(NodeAutoDetect {
            nodes: hosts.to_vec(),
            value,
            path: path.to_path_buf(),
            line,
        });
        Ok(())
    }
}

/// Where a [`GresDevice`] comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSource {
    /// A gres.conf line.
    GresConf {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
    },
    /// AutoDetect: a GPU found on the node (see [`resolve_detected`]), or, where nothing
    /// was detected (another host, no driver), slurm.conf's count, trusted because
    /// AutoDetect would find these GPUs on the node.
    AutoDetect(AutoDetect),
    /// slurm.conf's count alone: no gres.conf, or a GRES that gres.conf need not describe
    /// (`gres.conf(5)`: "only the configuration information in the slurm.conf file will
    /// be used").
    SlurmConf,
}

/// A device (or a pool of interchangeable units) of one node, after merging gres.conf
/// with slurm.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GresDevice {
    /// The GRES name, as slurm.conf spells it.
    pub name: String,
    /// The type, as slurm.conf spells it; `None` when slurm.conf's `Gres=` has no type
    /// (Slurm then drops gres.conf's `Type=` too).
    pub gres_type: Option<String>,
    /// Units: 1 for a device with a file; for a line without files, or for `mps` and
    /// `shard`, the line's count (trimmed to slurm.conf's).
    pub count: u64,
    /// The device's file (one), its MIG files (several, `MultipleFiles=`), the files a
    /// shared GRES spreads over, or none for a count-only entry.
    pub files: Vec<String>,
    /// Core indices that may use the device (`None`: any).
    pub cores: Option<Vec<u32>>,
    /// `Links=` of the device.
    pub links: Option<Vec<i32>>,
    /// `Flags=` of its line.
    pub flags: GresFlags,
    /// Where it comes from.
    pub source: DeviceSource,
}

/// Each node's devices, in the order of `SlurmConf::cluster.nodes`, and the warnings
/// the merge produced (`FILE:LINE: ...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GresLayout {
    /// Devices per node, indexed like the cluster's nodes; per node in the order of the
    /// node's GRES slots, and within a GRES in slurm.conf's type order then gres.conf's
    /// line order.
    pub nodes: Vec<Vec<GresDevice>>,
    /// What was ignored.
    pub warnings: Vec<String>,
}

impl GresLayout {
    /// The layout when there is no gres.conf: every GRES of slurm.conf's `Gres=` as one
    /// count-only entry per name and type ([`DeviceSource::SlurmConf`]).
    pub fn from_slurm_conf(conf: &SlurmConf) -> GresLayout {
        let nodes = (0..conf.cluster.nodes.len())
            .map(|i| {
                configured_gres(&conf.cluster, i)
                    .into_iter()
                    .map(|(name, gres_type, count)| GresDevice {
                        name,
                        gres_type,
                        count,
                        files: Vec::new(),
                        cores: None,
                        links: None,
                        flags: GresFlags::default(),
                        source: DeviceSource::SlurmConf,
                    })
                    .collect()
            })
            .collect();
        GresLayout {
            nodes,
            warnings: Vec::new(),
        }
    }
}

/// The GPUs among a node's devices (its entry of [`GresLayout::nodes`]), one entry per
/// GPU in the order their indices are handed out: GPU `i` is the `i`-th GPU unit, and
/// a count-only entry of several GPUs stands for each of them.
pub fn gpu_units(devices: &[GresDevice]) -> Vec<&GresDevice> {
    devices
        .iter()
        .filter(|d| d.name == "gpu")
        .flat_map(|d| std::iter::repeat_n(d, usize::try_from(d.count).unwrap_or(usize::MAX)))
        .collect()
}

/// How many shards (`gres/shard`) each GPU of a node has, indexed like [`gpu_units`],
/// spread as Slurm's `gres/shard` plugin spreads them: a shard line whose files name
/// GPUs gives each of those GPUs its count divided by the number of files (rounded
/// down, as Slurm does); a line without files (or whose files name no GPU) spreads its
/// count over all the node's GPUs, each in turn getting what is left divided by the
/// GPUs left (rounded down), so that the last GPUs get the remainder (`Count=10` over
/// four GPUs: 2, 2, 3, 3). Empty for a node without GPUs: its shards belong to none.
pub fn shards_per_gpu(devices: &[GresDevice]) -> Vec<u64> {
    let gpus = gpu_units(devices);
    let mut shards = vec![0u64; gpus.len()];
    if gpus.is_empty() {
        return shards;
    }
    for d in devices.iter().filter(|d| d.name == "shard") {
        let on_files: Vec<usize> = (0..gpus.len())
            .filter(|&g| gpus[g].files.iter().any(|f| d.files.contains(f)))
            .collect();
        if on_files.is_empty() {
            let mut left = d.count;
            for (g, n) in shards.iter_mut().enumerate() {
                let share = left / (gpus.len() - g) as u64;
                *n += share;
                left -= share;
            }
        } else {
            let per_file = d.count / d.files.len().max(1) as u64;
            for g in on_files {
                shards[g] += per_file;
            }
        }
    }
    shards
}

/// A node's GRES as slurm.conf's `Gres=` configured them: `(name, type, count)`, typed
/// entries of a name when it has any, else its untyped total, in slot order. (Slurm
/// forbids mixing typed and untyped entries of one name; should the typed counts fall
/// short of the total, the rest is listed untyped.) `node` indexes `cluster.nodes`.
pub fn configured_gres(cluster: &Cluster, node: usize) -> Vec<(String, Option<String>, u64)> {
    let table = &cluster.gres;
    let cap = &cluster.nodes[node].capacity.gres;
    let mut out = Vec::new();
    for slot in 0..table.len() {
        if table.parent(slot).is_some() || cap[slot] == 0 {
            continue;
        }
        let name = table.name(slot);
        let prefix = format!("{name}:");
        let mut typed_sum = 0u64;
        for child in table.children(slot).filter(|c| cap[*c] > 0) {
            let full = table.name(child);
            let gres_type = full.strip_prefix(&prefix).unwrap_or(&full).to_string();
            typed_sum += u64::from(cap[child]);
            out.push((name.clone(), Some(gres_type), u64::from(cap[child])));
        }
        if typed_sum < u64::from(cap[slot]) {
            out.push((name, None, u64::from(cap[slot]) - typed_sum));
        }
    }
    out
}

/// Merges gres.conf with slurm.conf's `Gres=` for every node of `conf`, as slurmd does
/// (Slurm's `_merge_config`/`_merge_gres2` in `gres.c`), and checks the result.
///
/// Per node and GRES name: for each slurm.conf entry (each type, or the untyped total),
/// the node's lines of that name (and that type, compared case-insensitively; any type
/// when slurm.conf gives none) are taken in file order until the configured count is
/// reached, the last one trimmed (its first files kept). Configured units no line
/// describes are trusted as a count-only entry, except `gpu` when no AutoDetect is in
/// force on the node: slurmd drops a GPU without a file ("Ignoring file-less GPU"), so
/// those units are missing.
///
/// Errors (file and line of the first line concerned, or the gres.conf path with line
/// 0): fewer units than configured, with Slurm's drain reason prefixed by the nodes
/// concerned (`node[01-04]: gres/gpu count reported lower than configured (4 < 8)`);
/// on one node, some lines of a name with `File=` and others without, some with
/// `Type=` and others without, or two lines of a name with neither (Slurm's fatal
/// errors in `_foreach_gres_conf`); a `Cores=` index at or above the node's CPU count.
///
/// Warnings: a line whose name is not in `GresTypes` (ignored; Slurm: "Ignoring
/// gres.conf record, invalid name"); units beyond slurm.conf's count (ignored; Slurm:
/// "has N more configured than expected in slurm.conf"); `NodeName=` hosts slurm.conf
/// does not define.
///
/// Nothing is detected here: configured GPUs under an AutoDetect are trusted. See
/// [`resolve_detected`] for the nodes whose devices were detected.
pub fn resolve(conf: &SlurmConf, gres: &GresConf) -> Result<GresLayout, ConfError> {
    resolve_detected(conf, gres, &|_, _| Vec::new())
}

/// [`resolve`], with the GPUs AutoDetect found on some nodes, as slurmd merges the
/// devices its GPU plugin reports with the configured ones (Slurm's
/// `_merge_system_gres_conf` in `gres_gpu.c`).
///
/// `detected(node, autodetect)` gives the GPUs found on `node` by the AutoDetect in
/// force there, one [`GresDevice`] each (count 1, its files, `Cores`, `Links`, type as
/// the driver names it, [`DeviceSource::AutoDetect`]); it is asked only for nodes that
/// configure `gpu` under an AutoDetect other than `off`. An empty answer means nothing
/// is known about the node (another host, no driver there): its configured GPUs are
/// trusted, as [`resolve`] does.
///
/// Where devices were found, the node's configured GPUs (gres.conf's lines, taken
/// as [`resolve`] takes them, and slurm.conf's units no line describes) are split into
/// single devices and matched with the found ones:
/// - A found device's type becomes the configured type that is part of it
///   (case-insensitively; `a100` in `a100-sxm4-40gb`), longest configured types first;
///   when no configured GPU has a type, found devices have none either.
/// - Configured devices with files are matched first, then those without: a match has
///   the same type (when the configured one has a type) and the same files (when it
///   names files).
/// - A match becomes the found device (its files, `Cores`, `Links`), named as
///   slurm.conf names it, with its line's `Flags` when the line sets any. A line's
///   `Cores=` or `Links=` differing from what was found drops both, with a warning.
/// - A configured device with files and no match is kept as configured; one without
///   files and no match is dropped, so that too few devices is the error [`resolve`]
///   gives (`gres/gpu count reported lower than configured`).
/// - Found devices nothing matched are left out, with a warning.
///
/// Errors and warnings: as [`resolve`], and those above.
pub fn resolve_detected(
    conf: &SlurmConf,
    gres: &GresConf,
    detected: &dyn Fn(&str, AutoDetect) -> Vec<GresDevice>,
) -> Result<GresLayout, ConfError> {
    let mut warnings = Vec::new();
    let cluster = &conf.cluster;
    let defined: HashSet<&str> = cluster.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut valid: Vec<bool> = Vec::with_capacity(gres.records.len());
    // Per record, the set of nodes it names (None: every node).
    let mut named: Vec<Option<HashSet<&str>>> = Vec::with_capacity(gres.records.len());
    for r in &gres.records {
        let ok = conf
            .gres_types
            .iter()
            .any(|g| g.eq_ignore_ascii_case(&r.name));
        if !ok {
            warnings.push(format!(
                "{}:{}: Ignoring gres.conf record, invalid name: {} (not in GresTypes)",
                r.path.display(),
                r.line,
                r.name
            ));
        }
        valid.push(ok);
        named.push(r.nodes.as_ref().map(|hosts| {
            let unknown: Vec<&String> = hosts
                .iter()
                .filter(|h| !defined.contains(h.as_str()))
                .collect();
            if !unknown.is_empty() {
                warnings.push(format!(
                    "{}:{}: NodeName names {} not defined in slurm.conf (ignored)",
                    r.path.display(),
                    r.line,
                    hostlist::compress(&unknown)
                ));
            }
            hosts.iter().map(String::as_str).collect()
        }));
    }
    for a in &gres.node_autodetect {
        let unknown: Vec<&String> = a
            .nodes
            .iter()
            .filter(|h| !defined.contains(h.as_str()))
            .collect();
        if !unknown.is_empty() {
            warnings.push(format!(
                "{}:{}: NodeName names {} not defined in slurm.conf (ignored)",
                a.path.display(),
                a.line,
                hostlist::compress(&unknown)
            ));
        }
    }

    let mut layout = Vec::with_capacity(cluster.nodes.len());
    // (record, excess) -> nodes, for one warning per line.
    let mut excess: BTreeMap<(usize, u64), Vec<String>> = BTreeMap::new();
    // (message, path, line, node) of nodes with fewer units than configured.
    let mut short: Vec<(String, PathBuf, usize, String)> = Vec::new();
    for (ni, node) in cluster.nodes.iter().enumerate() {
        let recs: Vec<usize> = (0..gres.records.len())
            .filter(|&i| valid[i])
            .filter(|&i| {
                named[i]
                    .as_ref()
                    .is_none_or(|s| s.contains(node.name.as_str()))
            })
            .collect();
        check_node_records(gres, &recs, &node.name, node.capacity.cpus)?;
        let auto = gres.autodetect_for(&node.name).filter(|a| a.detects());
        let mut taken: Vec<Option<u64>> = vec![None; recs.len()];
        let mut devices: Vec<GresDevice> = Vec::new();
        let configured = configured_gres(cluster, ni);
        let mut names: Vec<&str> = Vec::new();
        for (name, _, _) in &configured {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        for name in names {
            let first_device = devices.len();
            // Per device of this name: the type a found GPU must have to match it.
            let mut match_types: Vec<Option<String>> = Vec::new();
            // The first configured GPU dropped for Cores or Links unlike the device found.
            let mut mismatch: Option<(PathBuf, usize, String)> = None;
            let mut configured_total = 0u64;
            for (_, gres_type, count) in configured.iter().filter(|(n, _, _)| n == name) {
                configured_total += count;
                let mut need = *count;
                for (k, &ri) in recs.iter().enumerate() {
                    if need == 0 {
                        break;
                    }
                    let r = &gres.records[ri];
                    if taken[k].is_some() || !r.name.eq_ignore_ascii_case(name) {
                        continue;
                    }
                    if let Some(t) = gres_type {
                        if !r
                            .gres_type
                            .as_deref()
                            .is_some_and(|rt| rt.eq_ignore_ascii_case(t))
                        {
                            continue;
                        }
                    }
                    let take = r.count.min(need);
                    taken[k] = Some(take);
                    need -= take;
                    push_devices(&mut devices, r, name, gres_type.as_deref(), take);
                    let match_type = r.gres_type.clone().or_else(|| gres_type.clone());
                    match_types.resize(devices.len() - first_device, match_type);
                }
                if need > 0 {
                    let source = match auto {
                        Some(a) if name.eq_ignore_ascii_case("gpu") => DeviceSource::AutoDetect(a),
                        _ => DeviceSource::SlurmConf,
                    };
                    devices.push(GresDevice {
                        name: name.to_string(),
                        gres_type: gres_type.clone(),
                        count: need,
                        files: Vec::new(),
                        cores: None,
                        links: None,
                        flags: GresFlags::default(),
                        source,
                    });
                    match_types.push(gres_type.clone());
                }
            }
            if let Some(a) = auto.filter(|_| name.eq_ignore_ascii_case("gpu")) {
                let found = detected(&node.name, a);
                if !found.is_empty() {
                    let configured_units: Vec<(GresDevice, Option<String>)> = devices
                        .drain(first_device..)
                        .zip(match_types.drain(..))
                        .collect();
                    let merged = merge_detected(configured_units, found, &gres.path);
                    devices.extend(merged.devices);
                    if !merged.ignored.is_empty() {
                        warnings.push(format!(
                            "{}: {}: ignoring autodetected GPUs the configuration does not name: {}",
                            gres.path.display(),
                            node.name,
                            merged.ignored.join(", ")
                        ));
                    }
                    for (path, line, text) in merged.mismatches {
                        warnings.push(format!(
                            "{}:{line}: {}: {text}; ignoring it",
                            path.display(),
                            node.name
                        ));
                        mismatch.get_or_insert((path, line, text));
                    }
                }
            }
            match_types.clear();
            let gpu_without_detection = name.eq_ignore_ascii_case("gpu") && auto.is_none();
            let found: u64 = devices[first_device..]
                .iter()
                .filter(|d| !(gpu_without_detection && d.files.is_empty()))
                .map(|d| d.count)
                .sum();
            if found < configured_total {
                let mut message = format!(
                    "gres/{name} count reported lower than configured ({found} < {configured_total})"
                );
                let (path, line) = match mismatch {
                    Some((path, line, text)) => {
                        message.push_str(&format!(": {text}"));
                        (path, line)
                    }
                    None => recs
                        .iter()
                        .map(|&ri| &gres.records[ri])
                        .find(|r| r.name.eq_ignore_ascii_case(name))
                        .map(|r| (r.path.clone(), r.line))
                        .unwrap_or_else(|| (gres.path.clone(), 0)),
                };
                short.push((message, path, line, node.name.clone()));
            }
        }
        for (k, &ri) in recs.iter().enumerate() {
            let extra = gres.records[ri].count - taken[k].unwrap_or(0);
            if extra > 0 {
                excess
                    .entry((ri, extra))
                    .or_default()
                    .push(node.name.clone());
            }
        }
        layout.push(devices);
    }
    if let Some((message, path, line, _)) = short.first() {
        let nodes: Vec<&str> = short
            .iter()
            .filter(|(m, p, l, _)| m == message && p == path && l == line)
            .map(|(_, _, _, n)| n.as_str())
            .collect();
        return Err(ConfError {
            path: path.clone(),
            line: *line,
            message: format!("{}: {message}", hostlist::compress(&nodes)),
        });
    }
    for ((ri, extra), nodes) in excess {
        let r = &gres.records[ri];
        let full = match &r.gres_type {
            Some(t) => format!("{}:{t}", r.name),
            None => r.name.clone(),
        };
        warnings.push(format!(
            "{}:{}: GRES {full} has {extra} more configured than expected in slurm.conf on {}; ignoring the extra GRES",
            r.path.display(),
            r.line,
            hostlist::compress(&nodes)
        ));
    }
    Ok(GresLayout {
        nodes: layout,
        warnings,
    })
}

/// Slurm's per-node consistency rules for the lines of one GRES name, and `Cores=`
/// against the node's CPUs.
fn check_node_records(
    gres: &GresConf,
    recs: &[usize],
    node: &str,
    cpus: u32,
) -> Result<(), ConfError> {
    let at = |r: &GresRecord, message: String| ConfError {
        path: r.path.clone(),
        line: r.line,
        message,
    };
    for (k, &ri) in recs.iter().enumerate() {
        let r = &gres.records[ri];
        if let Some(max) = r.cores.as_ref().and_then(|c| c.last()) {
            if *max >= cpus {
                return Err(at(
                    r,
                    format!(
                        "Invalid GRES data for {}, Cores={} (only {cpus} CPUs are available on {node})",
                        r.name,
                        format_cores(r.cores.as_deref().unwrap_or_default())
                    ),
                ));
            }
        }
        let Some(first) = recs[..k]
            .iter()
            .map(|&i| &gres.records[i])
            .find(|p| p.name.eq_ignore_ascii_case(&r.name))
        else {
            continue;
        };
        if first.files.is_empty() != r.files.is_empty() {
            return Err(at(
                r,
                format!(
                    "gres.conf for {}, some records have \"File\" specification while others do not (node {node})",
                    r.name
                ),
            ));
        }
        if first.gres_type.is_none() != r.gres_type.is_none() {
            return Err(at(
                r,
                format!(
                    "gres.conf for {}, some records have \"Type=\" specification while others do not (node {node})",
                    r.name
                ),
            ));
        }
        if r.files.is_empty() && r.gres_type.is_none() {
            return Err(at(
                r,
                format!("gres.conf duplicate records for {} (node {node})", r.name),
            ));
        }
    }
    Ok(())
}

/// Slurm's `_merge_system_gres_conf` for one node's GPUs (see [`resolve_detected`]):
/// `configured` are the devices [`resolve`] would give, each with the type a found
/// device must have to match it; `found` are the detected devices. Returns the node's
/// GPUs and what was left out.
fn merge_detected(
    configured: Vec<(GresDevice, Option<String>)>,
    mut found: Vec<GresDevice>,
    gres_path: &Path,
) -> Merged {
    let mut notes = Vec::new();
    // One device per unit.
    let mut units: Vec<(GresDevice, Option<String>)> = Vec::new();
    for (d, t) in configured {
        if d.files.is_empty() && d.count > 1 {
            for _ in 0..d.count {
                units.push((
                    GresDevice {
                        count: 1,
                        ..d.clone()
                    },
                    t.clone(),
                ));
            }
        } else {
            units.push((d, t));
        }
    }
    normalize_found_types(&mut found, &units);

    // Per unit: the found device it became, or None.
    let mut used = vec![false; found.len()];
    let mut matched: Vec<Option<usize>> = vec![None; units.len()];
    let mut dropped = vec![false; units.len()];
    let with_files = (0..units.len()).filter(|&u| !units[u].0.files.is_empty());
    let without = (0..units.len()).filter(|&u| units[u].0.files.is_empty());
    for u in with_files.chain(without).collect::<Vec<_>>() {
        let (unit, match_type) = &units[u];
        let Some(f) = (0..found.len()).find(|&f| {
            !used[f]
                && match_type.as_deref().is_none_or(|t| {
                    found[f]
                        .gres_type
                        .as_deref()
                        .is_some_and(|ft| ft.eq_ignore_ascii_case(t))
                })
                && (unit.files.is_empty() || unit.files == found[f].files)
        }) else {
            continue;
        };
        used[f] = true;
        let d = &found[f];
        if both_and_differ(&unit.cores, &d.cores) || both_and_differ(&unit.links, &d.links) {
            let (path, line) = match &unit.source {
                DeviceSource::GresConf { path, line } => (path.clone(), *line),
                _ => (gres_path.to_path_buf(), 0),
            };
            notes.push((
                path,
                line,
                format!(
                    "GPU {} has mismatching Cores or Links from the device found on the system ({} there)",
                    d.files.join(","),
                    describe_cores_links(d)
                ),
            ));
            dropped[u] = true;
            continue;
        }
        matched[u] = Some(f);
    }

    let mut out = Vec::new();
    for (u, (unit, _)) in units.into_iter().enumerate() {
        match matched[u] {
            Some(f) => {
                let d = &found[f];
                out.push(GresDevice {
                    name: unit.name,
                    gres_type: unit.gres_type,
                    count: 1,
                    files: d.files.clone(),
                    cores: d.cores.clone().or(unit.cores),
                    links: d.links.clone().or(unit.links),
                    flags: if unit.flags == GresFlags::default() {
                        d.flags
                    } else {
                        unit.flags
                    },
                    source: d.source.clone(),
                });
            }
            None if !dropped[u] && !unit.files.is_empty() => out.push(unit),
            None => {}
        }
    }
    let left: Vec<String> = (0..found.len())
        .filter(|&f| !used[f])
        .map(|f| {
            let d = &found[f];
            match &d.gres_type {
                Some(t) => format!("{} ({t})", d.files.join(",")),
                None => d.files.join(","),
            }
        })
        .collect();
    Merged {
        devices: out,
        mismatches: notes,
        ignored: left,
    }
}

/// What [`merge_detected`] gives for one node.
struct Merged {
    /// The node's GPUs, in the order of the configured ones.
    devices: Vec<GresDevice>,
    /// Per configured GPU dropped because its `Cores=` or `Links=` differ from the
    /// device found: file, line, and what differs.
    mismatches: Vec<(PathBuf, usize, String)>,
    /// Found devices nothing configured matched: files (and type).
    ignored: Vec<String>,
}

/// Slurm's `_normalize_sys_gres_types`: each found device takes the longest configured
/// type that is part of its own (case-insensitively), one configured unit per found
/// device; with no configured type at all, found devices lose theirs.
fn normalize_found_types(found: &mut [GresDevice], units: &[(GresDevice, Option<String>)]) {
    let mut types: Vec<&str> = units.iter().filter_map(|(_, t)| t.as_deref()).collect();
    if types.is_empty() {
        for d in found.iter_mut() {
            d.gres_type = None;
        }
        return;
    }
    types.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut taken = vec![false; types.len()];
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&f| std::cmp::Reverse(found[f].gres_type.as_ref().map_or(0, String::len)));
    for f in order {
        let Some(own) = found[f].gres_type.as_ref().map(|t| t.to_ascii_lowercase()) else {
            continue;
        };
        if let Some(i) =
            (0..types.len()).find(|&i| !taken[i] && own.contains(&types[i].to_ascii_lowercase()))
        {
            taken[i] = true;
            found[f].gres_type = Some(types[i].to_string());
        }
    }
}

/// Whether both values are given and differ (a value not given agrees with any).
fn both_and_differ<T: PartialEq>(mine: &Option<T>, theirs: &Option<T>) -> bool {
    matches!((mine, theirs), (Some(a), Some(b)) if a != b)
}

/// `Cores=... Links=...` of a found device, for messages.
fn describe_cores_links(d: &GresDevice) -> String {
    let cores = d.cores.as_deref().map_or("any".to_string(), format_cores);
    let links = d.links.as_ref().map_or("none".to_string(), |l| {
        l.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
    });
    format!("Cores={cores} Links={links}")
}

/// Appends the devices `take` units of record `r` give, named as slurm.conf names them.
fn push_devices(
    out: &mut Vec<GresDevice>,
    r: &GresRecord,
    name: &str,
    gres_type: Option<&str>,
    take: u64,
) {
    let device = |count: u64, files: Vec<String>| GresDevice {
        name: name.to_string(),
        gres_type: gres_type.map(str::to_string),
        count,
        files,
        cores: r.cores.clone(),
        links: r.links.clone(),
        flags: r.flags,
        source: DeviceSource::GresConf {
            path: r.path.clone(),
            line: r.line,
        },
    };
    if r.files.is_empty() || r.multiple_files || r.is_shared() {
        // Slurm's _set_file_subset keeps at most `take` files.
        let keep = usize::try_from(take)
            .unwrap_or(usize::MAX)
            .min(r.files.len());
        out.push(device(take, r.files[..keep].to_vec()));
    } else {
        for f in r
            .files
            .iter()
            .take(usize::try_from(take).unwrap_or(usize::MAX))
        {
            out.push(device(1, vec![f.clone()]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<GresConf, ConfError> {
        parse_str(text, Path::new("gres.conf"))
    }

    fn slurm(nodes: &str) -> SlurmConf {
        crate::slurm_conf::parse_str(
            &format!("ClusterName=c\nGresTypes=gpu,mps,nic\n{nodes}"),
            Path::new("slurm.conf"),
        )
        .unwrap()
    }

    fn files(prefix: &str, range: std::ops::Range<u32>) -> Vec<String> {
        range.map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn the_seed_lines_parse() {
        let g = parse(
            "AutoDetect=nvml\nNodeName=node[01-04] Name=gpu Type=rtxpro6000 File=/dev/nvidia[0-7]\n",
        )
        .unwrap();
        assert_eq!(g.autodetect, Some(AutoDetect::Nvml));
        assert_eq!(g.node_autodetect, vec![]);
        assert_eq!(g.warnings, Vec::<String>::new());
        assert_eq!(
            g.records,
            vec![GresRecord {
                path: "gres.conf".into(),
                line: 2,
                nodes: Some(vec![
                    "node01".into(),
                    "node02".into(),
                    "node03".into(),
                    "node04".into()
                ]),
                name: "gpu".into(),
                gres_type: Some("rtxpro6000".into()),
                files: files("/dev/nvidia", 0..8),
                multiple_files: false,
                count: 8,
                cores: None,
                links: None,
                flags: GresFlags::default(),
            }]
        );
    }

    #[test]
    fn per_node_lines_and_lines_for_every_node() {
        let g = parse(
            "NodeName=tux[0-1] Name=gpu File=/dev/nvidia[0-3]\n\
             NodeName=tux2 Name=gpu File=/dev/nvidia[0-7]\n\
             Name=nic Count=2\n",
        )
        .unwrap();
        let lines = |n: &str| g.for_node(n).iter().map(|r| r.line).collect::<Vec<_>>();
        assert_eq!(lines("tux0"), [1, 3]);
        assert_eq!(lines("tux1"), [1, 3]);
        assert_eq!(lines("tux2"), [2, 3]);
        assert_eq!(lines("other"), [3]);
        assert_eq!(g.for_node("tux2")[0].count, 8);
        assert_eq!(g.for_node("tux0")[0].count, 4);
    }

    #[test]
    fn file_ranges_expand() {
        assert_eq!(
            expand_files("/dev/nvidia[0-1,4]").unwrap(),
            ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia4"]
        );
        assert_eq!(
            expand_files("/dev/nvidia0,/dev/nvidia2").unwrap(),
            ["/dev/nvidia0", "/dev/nvidia2"]
        );
        assert_eq!(
            expand_files("/dev/dri/renderD[128-129]").unwrap(),
            ["/dev/dri/renderD128", "/dev/dri/renderD129"]
        );
        assert_eq!(expand_files("/dev/nvidia[00-02]").unwrap().len(), 3);
        assert_eq!(
            format_files(&files("/dev/nvidia", 0..8)),
            "/dev/nvidia[0-7]"
        );
        assert_eq!(
            expand_files("/dev/nvidia[3-1]").unwrap_err(),
            "invalid file range '/dev/nvidia[3-1]': range '3-1' runs backwards"
        );
        assert_eq!(
            expand_files("/dev/x[0-1024]").unwrap_err(),
            "'/dev/x[0-1024]' names 1025 files; at most 1024"
        );
        let e = parse("Name=gpu\nName=gpu File=/dev/nvidia[0-\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf:2: File: invalid file range '/dev/nvidia[0-': '[' without ']'"
        );
    }

    #[test]
    fn count_must_match_the_files() {
        let e = parse("AutoDetect=off\n\nName=gpu File=/dev/nvidia[0-7] Count=4\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf:3: Invalid GRES record for gpu, count does not match File value (Count=4 but File names 8)"
        );
        let e =
            parse("Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/x Count=2\n").unwrap_err();
        assert_eq!(
            e.message,
            "Invalid GRES record for gpu, count does not match File value (Count=2 but MultipleFiles is one device)"
        );
        // Shared GRES spread a count over their files.
        let g = parse(
            "Name=mps Count=200 File=/dev/nvidia[0-1]\nName=gpu File=/dev/nvidia[0-1] Count=2\n",
        )
        .unwrap();
        assert_eq!((g.records[0].count, g.records[1].count), (200, 2));
    }

    #[test]
    fn counts_take_suffixes() {
        assert_eq!(parse_count("20M"), Ok(20 * 1024 * 1024));
        assert_eq!(parse_count("1k"), Ok(1024));
        assert_eq!(parse_count("3G"), Ok(3 << 30));
        assert_eq!(parse_count("2T"), Ok(2 << 40));
        assert_eq!(parse_count("0"), Ok(0));
        for bad in [
            "",
            "x",
            "-1",
            "4X",
            "1.5",
            "K",
            "99999999999999999999",
            "16384P",
        ] {
            assert!(parse_count(bad).is_err(), "{bad} should be rejected");
        }
        let g = parse("Name=bandwidth Count=20M\n").unwrap();
        assert_eq!(g.records[0].count, 20_971_520);
        assert_eq!(
            parse("Name=gpu Count=lots\n").unwrap_err().to_string(),
            "gres.conf:1: Count: invalid count 'lots' (a number with an optional K, M, G, T or P suffix)"
        );
    }

    #[test]
    fn cores_and_links() {
        assert_eq!(parse_cores("0-3,32-34").unwrap(), [0, 1, 2, 3, 32, 33, 34]);
        assert_eq!(parse_cores("5,1,1-2").unwrap(), [1, 2, 5]);
        assert_eq!(parse_cores("0-15,32-47").unwrap().len(), 32);
        assert_eq!(
            format_cores(&parse_cores("0-15,32-47").unwrap()),
            "0-15,32-47"
        );
        assert_eq!(format_cores(&[7]), "7");
        assert_eq!(
            parse_cores("3-1").unwrap_err(),
            "core range '3-1' runs backwards"
        );
        assert_eq!(
            parse_cores("0-x").unwrap_err(),
            "'0-x' is not a core index or range"
        );
        assert_eq!(
            parse_cores("").unwrap_err(),
            "'' is not a core index or range"
        );
        assert_eq!(
            parse_cores("70000").unwrap_err(),
            "core index 70000 is above 65535"
        );

        assert_eq!(parse_links("-1,2,0,2").unwrap(), [-1, 2, 0, 2]);
        assert_eq!(parse_links("0, -1").unwrap(), [0, -1]);
        assert_eq!(
            parse_links("0,0").unwrap_err(),
            "'0,0' has no -1 (the device itself)"
        );
        assert_eq!(
            parse_links("-1,-1").unwrap_err(),
            "'-1,-1' has more than one -1"
        );
        assert_eq!(
            parse_links("-1,a").unwrap_err(),
            "'a' is not a link count (an integer from -2 to 1023)"
        );
        assert!(parse_links("-1,1024").is_err());
        assert!(parse_links("-3,-1").is_err());
        assert!(parse_links("").is_err());

        let g = parse(
            "Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15,32-47 Links=-1,2\n\
             Name=gpu Type=a100 File=/dev/nvidia1 CPUs=16-31 Link=2,-1\n",
        )
        .unwrap();
        let want: Vec<u32> = (0..16).chain(32..48).collect();
        assert_eq!(g.records[0].cores.as_deref(), Some(&want[..]));
        assert_eq!(g.records[0].links.as_deref(), Some(&[-1, 2][..]));
        assert_eq!(g.records[1].cores, Some((16..32).collect()));
        assert_eq!(g.records[1].links, Some(vec![2, -1]));
        assert_eq!(
            parse("Name=gpu File=/dev/nvidia[0-1] Links=-1,2\n")
                .unwrap_err()
                .to_string(),
            "gres.conf:1: Links: a line with Links describes one device, this one describes 2"
        );
        assert_eq!(
            parse("Name=gpu File=/dev/nvidia0 Cores=0-\n")
                .unwrap_err()
                .to_string(),
            "gres.conf:1: Cores: '0-' is not a core index or range"
        );
        assert_eq!(
            parse("Name=gpu File=/dev/nvidia0 CPUs=a\n")
                .unwrap_err()
                .to_string(),
            "gres.conf:1: CPUs: 'a' is not a core index or range"
        );
    }

    #[test]
    fn unknown_keys_and_flags_warn() {
        let g = parse(
            "Name=gpu File=/dev/nvidia0 Colour=green\n\
             Name=gpu File=/dev/nvidia1 Flags=nvidia_gpu_env,Sparkly,CountOnly\n",
        )
        .unwrap();
        assert_eq!(
            g.warnings,
            [
                "gres.conf:1: unknown key 'Colour' (ignored)",
                "gres.conf:2: unknown GRES flag 'Sparkly' (ignored)",
            ]
        );
        assert_eq!(
            g.records[1].flags,
            GresFlags {
                nvidia_gpu_env: true,
                count_only: true,
                ..GresFlags::default()
            }
        );
        assert_eq!(g.records[1].flags.to_string(), "CountOnly,nvidia_gpu_env");
        let (all, unknown) = GresFlags::parse(
            "countonly,NVIDIA_GPU_ENV,amd_gpu_env,intel_gpu_env,opencl_env,one_sharing,explicit",
        )
        .unwrap();
        assert_eq!(unknown, Vec::<String>::new());
        assert_eq!(
            all.to_string(),
            "CountOnly,nvidia_gpu_env,amd_gpu_env,intel_gpu_env,opencl_env,one_sharing,explicit"
        );
        assert_eq!(
            parse("Name=gpu Flags=no_gpu_env,amd_gpu_env\n").unwrap_err().to_string(),
            "gres.conf:1: Flags: 'no_gpu_env,amd_gpu_env' contains no_gpu_env, which excludes every other *_env flag"
        );
        assert!(GresFlags::parse("one_sharing,all_sharing").is_err());
    }

    #[test]
    fn autodetect_global_and_per_node() {
        let g = parse(
            "AutoDetect=nvml\n\
             NodeName=tux3 AutoDetect=off Name=gpu File=/dev/nvidia[0-3]\n\
             NodeName=tux[4-5] AutoDetect=rsmi\n\
             NodeName=tux3 autodetect=OFF\n",
        )
        .unwrap();
        assert_eq!(g.autodetect, Some(AutoDetect::Nvml));
        assert_eq!(g.autodetect_for("tux3"), Some(AutoDetect::Off));
        assert_eq!(g.autodetect_for("tux5"), Some(AutoDetect::Rsmi));
        assert_eq!(g.autodetect_for("tux1"), Some(AutoDetect::Nvml));
        assert_eq!(g.records.len(), 1);
        assert_eq!(g.records[0].line, 2);
        assert_eq!(
            parse("NodeName=a[1-3] AutoDetect=nvml\nNodeName=a3 AutoDetect=off\n")
                .unwrap_err()
                .to_string(),
            "gres.conf:2: duplicate node-local AutoDetect specification does not match the first (node a3: off here, nvml at gres.conf:1)"
        );
        assert_eq!(
            parse("AutoDetect=cuda\n").unwrap_err().to_string(),
            "gres.conf:1: AutoDetect: unknown value 'cuda' (nvml, rsmi, oneapi, nrt or off)"
        );
        assert_eq!(
            parse("AutoDetect=nvml\nAutoDetect=off\n")
                .unwrap_err()
                .to_string(),
            "gres.conf:2: AutoDetect: global value off disagrees with the earlier nvml"
        );
        let g = parse("Name=gpu File=/dev/nvidia0 AutoDetect=nvml\n").unwrap();
        assert_eq!(g.autodetect, None);
        assert_eq!(
            g.warnings,
            ["gres.conf:1: In-line AutoDetect requires NodeName to take effect (ignored)"]
        );
        let g = parse("AutoDetect=oneapi Name=gpu File=/dev/dri/card0\n").unwrap();
        assert_eq!(
            (g.autodetect, g.records.len()),
            (Some(AutoDetect::Oneapi), 1)
        );
    }

    #[test]
    fn malformed_lines() {
        let cases = [
            ("Name=gpu Name=mps\n", "gres.conf:1: Name given twice on one line (after Name; gres.conf has one record per line)"),
            ("Name=gpu File=/dev/a Files=/dev/b\n", "gres.conf:1: Files given twice on one line (after File; gres.conf has one record per line)"),
            ("NodeName=n1 Type=a100\n", "gres.conf:1: Type without Name= (each record needs a GRES name)"),
            ("NodeName=n1\n", "gres.conf:1: Invalid GRES data, no type name (a line needs Name= or AutoDetect=)"),
            ("Name=\n", "gres.conf:1: Name: needs a value"),
            ("Name=gpu Type=\n", "gres.conf:1: Type: needs a value"),
            ("NodeName=n[1-\n", "gres.conf:1: NodeName: invalid hostlist 'n[1-': '[' without ']'"),
            ("Name=gpu File=/dev/a MultipleFiles=/dev/b,/dev/c\n", "gres.conf:1: File and MultipleFiles options are mutually exclusive"),
            ("Name=gpu MultipleFiles=/dev/b\n", "gres.conf:1: MultipleFiles does not contain multiple files. Use File instead"),
            ("Name=gpu \\\n", "gres.conf:1: line continued past the end of the file"),
            ("Include\n", "gres.conf:1: Include without a file name"),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), want, "{text}");
        }
    }

    #[test]
    fn include_comments_and_continuation() {
        let dir = std::env::temp_dir().join(format!("sluice-gres-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("gpus.conf"),
            "NodeName=n1 Name=gpu \\\n  File=/dev/nvidia[0-1] # two\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("gres.conf"),
            "# GPUs\nAutoDetect=off\ninclude gpus.conf\n",
        )
        .unwrap();
        let g = read(&dir.join("gres.conf")).unwrap();
        assert_eq!(g.autodetect, Some(AutoDetect::Off));
        assert_eq!(g.records.len(), 1);
        assert_eq!(g.records[0].path, dir.join("gpus.conf"));
        assert_eq!((g.records[0].line, g.records[0].count), (1, 2));
        let e = read(&dir.join("missing.conf")).unwrap_err();
        assert_eq!(e.line, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn resolving_the_seed_gives_eight_files_per_node() {
        let s = slurm("NodeName=node[01-02] CPUs=128 Gres=gpu:rtxpro6000:8\n");
        let g = parse(
            "AutoDetect=nvml\nNodeName=node[01-02] Name=gpu Type=rtxpro6000 File=/dev/nvidia[0-7]\n",
        )
        .unwrap();
        let l = resolve(&s, &g).unwrap();
        assert_eq!(l.warnings, Vec::<String>::new());
        assert_eq!(l.nodes.len(), 2);
        for devices in &l.nodes {
            let got: Vec<(&str, Option<&str>, u64, Vec<String>)> = devices
                .iter()
                .map(|d| {
                    (
                        d.name.as_str(),
                        d.gres_type.as_deref(),
                        d.count,
                        d.files.clone(),
                    )
                })
                .collect();
            let want: Vec<_> = (0..8)
                .map(|i| {
                    (
                        "gpu",
                        Some("rtxpro6000"),
                        1,
                        vec![format!("/dev/nvidia{i}")],
                    )
                })
                .collect();
            assert_eq!(got, want);
            assert_eq!(
                devices[3].source,
                DeviceSource::GresConf {
                    path: "gres.conf".into(),
                    line: 2
                }
            );
        }
    }

    #[test]
    fn shards_spread_over_the_gpus_as_slurm_spreads_them() {
        let conf = |nodes: &str| {
            crate::slurm_conf::parse_str(
                &format!("ClusterName=c\nGresTypes=gpu,shard\n{nodes}"),
                Path::new("slurm.conf"),
            )
            .unwrap()
        };
        // No gres.conf: slurm.conf's count over every GPU, the remainder to the last.
        let s = conf("NodeName=n1 Gres=gpu:4,shard:10\nNodeName=n2 Gres=shard:4\n");
        let l = GresLayout::from_slurm_conf(&s);
        assert_eq!(gpu_units(&l.nodes[0]).len(), 4);
        assert_eq!(shards_per_gpu(&l.nodes[0]), vec![2, 2, 3, 3]);
        // Shards without GPUs belong to none.
        assert_eq!(shards_per_gpu(&l.nodes[1]), Vec::<u64>::new());
        // Lines naming the GPUs' files: each file its line's count over its files.
        let s = conf("NodeName=n1 Gres=gpu:3,shard:20\n");
        let g = parse(
            "Name=gpu File=/dev/nvidia[0-2]\n\
             Name=shard Count=8 File=/dev/nvidia0\n\
             Name=shard Count=12 File=/dev/nvidia[1-2]\n",
        )
        .unwrap();
        let l = resolve(&s, &g).unwrap();
        assert_eq!(l.warnings, Vec::<String>::new());
        assert_eq!(shards_per_gpu(&l.nodes[0]), vec![8, 6, 6]);
        // One line without files over three GPUs with files.
        let s = conf("NodeName=n1 Gres=gpu:3,shard:64\n");
        let g = parse("Name=gpu File=/dev/nvidia[0-2]\nName=shard Count=64\n").unwrap();
        let l = resolve(&s, &g).unwrap();
        assert_eq!(shards_per_gpu(&l.nodes[0]), vec![21, 21, 22]);
    }

    #[test]
    fn autodetect_trusts_slurm_conf_without_lines() {
        let s = slurm("NodeName=n[1-2] CPUs=8 Gres=gpu:a100:4,nic:1\n");
        let l = resolve(&s, &parse("AutoDetect=nvml\n").unwrap()).unwrap();
        let want = vec![
            GresDevice {
                name: "gpu".into(),
                gres_type: Some("a100".into()),
                count: 4,
                files: vec![],
                cores: None,
                links: None,
                flags: GresFlags::default(),
                source: DeviceSource::AutoDetect(AutoDetect::Nvml),
            },
            GresDevice {
                name: "nic".into(),
                gres_type: None,
                count: 1,
                files: vec![],
                cores: None,
                links: None,
                flags: GresFlags::default(),
                source: DeviceSource::SlurmConf,
            },
        ];
        assert_eq!(l.nodes, vec![want.clone(), want]);
        // Without detection a GPU needs a file: Slurm drains such nodes.
        let e = resolve(&s, &parse("AutoDetect=off\n").unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf: n[1-2]: gres/gpu count reported lower than configured (0 < 4)"
        );
        // A node-specific AutoDetect=off beats the global nvml.
        let g = parse("AutoDetect=nvml\nNodeName=n2 AutoDetect=off\n").unwrap();
        let e = resolve(&s, &g).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf: n2: gres/gpu count reported lower than configured (0 < 4)"
        );
        // With no gres.conf at all, slurm.conf is trusted.
        let l = GresLayout::from_slurm_conf(&s);
        assert_eq!(l.nodes[0][0].count, 4);
        assert_eq!(l.nodes[0][0].source, DeviceSource::SlurmConf);
    }

    /// A GPU as AutoDetect=nvml reports it: `/dev/nvidia{minor}`, cores, links.
    fn found(gres_type: &str, minor: u32, cores: &[u32], links: &[i32]) -> GresDevice {
        GresDevice {
            name: "gpu".into(),
            gres_type: Some(gres_type.into()),
            count: 1,
            files: vec![format!("/dev/nvidia{minor}")],
            cores: Some(cores.to_vec()),
            links: Some(links.to_vec()),
            flags: GresFlags {
                nvidia_gpu_env: true,
                ..GresFlags::default()
            },
            source: DeviceSource::AutoDetect(AutoDetect::Nvml),
        }
    }

    /// Four H200s found on n1: pairs (0,1) and (2,3) with two NVLinks each, cores 0-7
    /// for the first pair and 8-15 for the second.
    fn four_h200(node: &str, a: AutoDetect) -> Vec<GresDevice> {
        assert_eq!(a, AutoDetect::Nvml);
        if node != "n1" {
            return Vec::new();
        }
        let low: Vec<u32> = (0..8).collect();
        let high: Vec<u32> = (8..16).collect();
        vec![
            found("h200", 0, &low, &[-1, 2, 0, 0]),
            found("h200", 1, &low, &[2, -1, 0, 0]),
            found("h200", 2, &high, &[0, 0, -1, 2]),
            found("h200", 3, &high, &[0, 0, 2, -1]),
        ]
    }

    #[test]
    fn autodetected_gpus_fill_files_cores_and_links() {
        let s = slurm("NodeName=n[1-2] CPUs=16 Gres=gpu:h200:4\n");
        let l = resolve_detected(&s, &parse("AutoDetect=nvml\n").unwrap(), &four_h200).unwrap();
        assert_eq!(l.warnings, Vec::<String>::new());
        assert_eq!(l.nodes[0], four_h200("n1", AutoDetect::Nvml));
        // n2 is not this host: nothing found there, slurm.conf trusted.
        assert_eq!(
            l.nodes[1]
                .iter()
                .map(|d| (d.count, d.files.len(), d.source.clone()))
                .collect::<Vec<_>>(),
            [(4, 0, DeviceSource::AutoDetect(AutoDetect::Nvml))]
        );

        // The driver's longer name takes the configured type that is part of it.
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:a100:1\n");
        let l = resolve_detected(&s, &parse("AutoDetect=nvml\n").unwrap(), &|_, _| {
            vec![found("a100-sxm4-40gb", 0, &[0], &[-1])]
        })
        .unwrap();
        assert_eq!(l.nodes[0][0].gres_type.as_deref(), Some("a100"));
        assert_eq!(l.nodes[0][0].files, ["/dev/nvidia0"]);

        // Untyped slurm.conf: found devices lose their type; extra ones are left out.
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:2\n");
        let l = resolve_detected(&s, &parse("AutoDetect=nvml\n").unwrap(), &four_h200).unwrap();
        assert_eq!(
            l.nodes[0]
                .iter()
                .map(|d| (d.gres_type.clone(), d.files.clone()))
                .collect::<Vec<_>>(),
            [
                (None, vec!["/dev/nvidia0".to_string()]),
                (None, vec!["/dev/nvidia1".to_string()])
            ]
        );
        assert_eq!(
            l.warnings,
            ["gres.conf: n1: ignoring autodetected GPUs the configuration does not name: /dev/nvidia2, /dev/nvidia3"]
        );
    }

    #[test]
    fn configured_lines_meet_autodetected_gpus_as_in_slurm() {
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:h200:4\n");
        // A matching line with its own flags, a line for a device not found (kept, as
        // Slurm keeps configured GPUs with a file), two units left to detection.
        let g = parse(
            "AutoDetect=nvml\n\
             Name=gpu Type=h200 File=/dev/nvidia1 Cores=0-7 Flags=nvidia_gpu_env,opencl_env\n\
             Name=gpu Type=h200 File=/dev/nvidia9\n",
        )
        .unwrap();
        let l = resolve_detected(&s, &g, &four_h200).unwrap();
        // (files, links, flags, source) of each device.
        type Got = Vec<(Vec<String>, Option<Vec<i32>>, String, DeviceSource)>;
        let got: Got = l.nodes[0]
            .iter()
            .map(|d| {
                (
                    d.files.clone(),
                    d.links.clone(),
                    d.flags.to_string(),
                    d.source.clone(),
                )
            })
            .collect();
        let auto = DeviceSource::AutoDetect(AutoDetect::Nvml);
        let file = |m: u32| vec![format!("/dev/nvidia{m}")];
        assert_eq!(
            got,
            [
                (
                    file(1),
                    Some(vec![2, -1, 0, 0]),
                    "nvidia_gpu_env,opencl_env".into(),
                    auto.clone()
                ),
                (
                    file(9),
                    None,
                    String::new(),
                    DeviceSource::GresConf {
                        path: "gres.conf".into(),
                        line: 3
                    }
                ),
                (
                    file(0),
                    Some(vec![-1, 2, 0, 0]),
                    "nvidia_gpu_env".into(),
                    auto.clone()
                ),
                (
                    file(2),
                    Some(vec![0, 0, -1, 2]),
                    "nvidia_gpu_env".into(),
                    auto
                ),
            ]
        );
        assert_eq!(
            l.warnings,
            ["gres.conf: n1: ignoring autodetected GPUs the configuration does not name: /dev/nvidia3 (h200)"]
        );

        // Cores that differ from the device's: the line is dropped, and the node has
        // fewer GPUs than configured.
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:h200:2\n");
        let g =
            parse("AutoDetect=nvml\nName=gpu Type=h200 File=/dev/nvidia0 Cores=8-15\n").unwrap();
        let e = resolve_detected(&s, &g, &|n, a| four_h200(n, a)[..2].to_vec()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf:2: n1: gres/gpu count reported lower than configured (1 < 2): GPU /dev/nvidia0 has mismatching Cores or Links from the device found on the system (Cores=0-7 Links=-1,2,0,0 there)"
        );
        // Links that differ: the same.
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:h200:1\n");
        let g = parse("AutoDetect=nvml\nName=gpu Type=h200 File=/dev/nvidia0 Links=-1,0,0,0\n")
            .unwrap();
        let e = resolve_detected(&s, &g, &four_h200).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf:2: n1: gres/gpu count reported lower than configured (0 < 1): GPU /dev/nvidia0 has mismatching Cores or Links from the device found on the system (Cores=0-7 Links=-1,2,0,0 there)"
        );

        // Fewer found than configured: Slurm's drain reason.
        let s = slurm("NodeName=n1 CPUs=16 Gres=gpu:h200:8\n");
        let e = resolve_detected(&s, &parse("AutoDetect=nvml\n").unwrap(), &four_h200).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf: n1: gres/gpu count reported lower than configured (4 < 8)"
        );
    }

    #[test]
    fn too_few_devices_is_an_error_with_slurms_reason() {
        let s = slurm("NodeName=node[01-04] CPUs=64 Gres=gpu:rtxpro6000:8\n");
        let g = parse("\nNodeName=node[01-04] Name=gpu Type=rtxpro6000 File=/dev/nvidia[0-3]\n")
            .unwrap();
        let e = resolve(&s, &g).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gres.conf:2: node[01-04]: gres/gpu count reported lower than configured (4 < 8)"
        );
        // A type slurm.conf does not configure describes nothing.
        let g = parse("Name=gpu Type=h100 File=/dev/nvidia[0-7]\n").unwrap();
        let e = resolve(&s, &g).unwrap_err();
        assert_eq!(
            e.message,
            "node[01-04]: gres/gpu count reported lower than configured (0 < 8)"
        );
        // Other GRES need no files: the rest of slurm.conf's count is trusted.
        let s = slurm("NodeName=n1 CPUs=4 Gres=nic:4\n");
        let l = resolve(&s, &parse("Name=nic File=/dev/nic[0-1]\n").unwrap()).unwrap();
        let got: Vec<(u64, usize, bool)> = l.nodes[0]
            .iter()
            .map(|d| (d.count, d.files.len(), d.source == DeviceSource::SlurmConf))
            .collect();
        assert_eq!(got, [(1, 1, false), (1, 1, false), (2, 0, true)]);
    }

    #[test]
    fn extra_devices_warn_and_are_dropped() {
        let s =
            slurm("NodeName=n[1-2] CPUs=64 Gres=gpu:a100:2\nNodeName=n3 CPUs=64 Gres=gpu:a100:4\n");
        let g = parse(
            "Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31\n\
             Name=gpu Type=A100 File=/dev/nvidia[4-5]\n\
             NodeName=n9 Name=gpu Type=a100 File=/dev/nvidia9\n",
        )
        .unwrap();
        let l = resolve(&s, &g).unwrap();
        assert_eq!(
            l.warnings,
            [
                "gres.conf:3: NodeName names n9 not defined in slurm.conf (ignored)",
                "gres.conf:1: GRES gpu:a100 has 2 more configured than expected in slurm.conf on n[1-2]; ignoring the extra GRES",
                "gres.conf:2: GRES gpu:A100 has 2 more configured than expected in slurm.conf on n[1-3]; ignoring the extra GRES",
            ]
        );
        let paths =
            |n: usize| -> Vec<String> { l.nodes[n].iter().flat_map(|d| d.files.clone()).collect() };
        assert_eq!(paths(0), ["/dev/nvidia0", "/dev/nvidia1"]);
        assert_eq!(paths(2), files("/dev/nvidia", 0..4));
        let cores: Vec<u32> = (0..32).collect();
        assert_eq!(l.nodes[0][0].cores.as_deref(), Some(&cores[..]));
        assert_eq!(l.nodes[2][3].gres_type.as_deref(), Some("a100"));
    }

    #[test]
    fn untyped_slurm_conf_takes_typed_lines_and_drops_the_type() {
        let s = slurm("NodeName=n1 CPUs=8 Gres=gpu:2,mps:200\n");
        let g = parse(
            "Name=gpu Type=v100 File=/dev/nvidia[0-1] Flags=nvidia_gpu_env\n\
             Name=mps Count=200 File=/dev/nvidia[0-1]\n\
             Name=fpga Count=1\n",
        )
        .unwrap();
        let l = resolve(&s, &g).unwrap();
        assert_eq!(
            l.warnings,
            ["gres.conf:3: Ignoring gres.conf record, invalid name: fpga (not in GresTypes)"]
        );
        let d = &l.nodes[0];
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].gres_type.as_deref(), d[0].files.clone()),
            (None, vec!["/dev/nvidia0".to_string()])
        );
        assert!(d[1].flags.nvidia_gpu_env);
        assert_eq!(
            (d[2].name.as_str(), d[2].count, d[2].files.clone()),
            ("mps", 200, files("/dev/nvidia", 0..2))
        );
    }

    #[test]
    fn per_node_consistency_rules() {
        let s = slurm("NodeName=n1 CPUs=8 Gres=gpu:2,nic:2\n");
        let cases = [
            ("Name=gpu File=/dev/nvidia0\nName=gpu Count=1\n", "gres.conf:2: gres.conf for gpu, some records have \"File\" specification while others do not (node n1)"),
            ("Name=gpu File=/dev/nvidia0 Type=a\nName=gpu File=/dev/nvidia1\n", "gres.conf:2: gres.conf for gpu, some records have \"Type=\" specification while others do not (node n1)"),
            ("Name=nic Count=1\nName=nic Count=1\n", "gres.conf:2: gres.conf duplicate records for nic (node n1)"),
            ("Name=gpu File=/dev/nvidia[0-1] Cores=0-8\n", "gres.conf:1: Invalid GRES data for gpu, Cores=0-8 (only 8 CPUs are available on n1)"),
        ];
        for (text, want) in cases {
            let e = resolve(&s, &parse(text).unwrap()).unwrap_err();
            assert_eq!(e.to_string(), want, "{text}");
        }
        // Lines for other nodes do not mix with this node's.
        let g = parse("NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\nNodeName=n2 Name=gpu Count=2\n")
            .unwrap();
        assert_eq!(resolve(&s, &g).unwrap().nodes[0].len(), 3);
    }

    proptest! {
        #[test]
        fn file_ranges_round_trip_through_formatting(
            values in proptest::collection::btree_set(0u32..2000, 1..40),
            width in 1usize..4,
            prefix in "/dev/[a-z]{1,8}(/[a-z]{1,4})?",
        ) {
            let paths: Vec<String> = values.iter().map(|v| format!("{prefix}{v:0width$}")).collect();
            let expr = format_files(&paths);
            prop_assert_eq!(&expand_files(&expr).unwrap(), &paths);
            prop_assert_eq!(format_files(&expand_files(&expr).unwrap()), expr);
        }

        #[test]
        fn written_ranges_expand_then_format_canonically(
            starts in proptest::collection::vec((0u32..30, 0u32..5), 1..6),
        ) {
            // Disjoint ascending ranges with gaps of at least 2.
            let mut items = Vec::new();
            let mut want = Vec::new();
            let mut next = 0u32;
            for (gap, len) in starts {
                let lo = next + gap;
                let hi = lo + len;
                items.push(if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
                want.extend((lo..=hi).map(|i| format!("/dev/nvidia{i}")));
                next = hi + 2;
            }
            let expr = format!("/dev/nvidia[{}]", items.join(","));
            let paths = expand_files(&expr).unwrap();
            prop_assert_eq!(&paths, &want);
            prop_assert_eq!(expand_files(&format_files(&paths)).unwrap(), paths);
        }

        #[test]
        fn core_lists_round_trip_through_formatting(
            cores in proptest::collection::btree_set(0u32..512, 1..100),
        ) {
            let cores: Vec<u32> = cores.into_iter().collect();
            let text = format_cores(&cores);
            prop_assert_eq!(parse_cores(&text).unwrap(), cores);
        }
    }
}
