//! Multifactor priority settings of slurm.conf: `PriorityType`, `PriorityWeight*`,
//! `PriorityMaxAge`, `PriorityFavorSmall`, `PriorityFlags`, `PriorityDecayHalfLife`,
//! `PriorityCalcPeriod`, `PriorityUsageResetPeriod`, `FairShareDampeningFactor`, with
//! Slurm's defaults (slurm.conf(5), Slurm 22.05).

use sluice_core::fairshare::Algorithm;
use sluice_core::multifactor::{Params, TresWeights, Weights};
use sluice_core::{GresTable, Secs};

use crate::duration::parse_time;
use crate::slurm_conf::{ConfError, SlurmConf};

/// `PriorityUsageResetPeriod`: when usage is cleared instead of (only) decayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UsageReset {
    /// `NONE` (default): never.
    #[default]
    None,
    /// `DAILY`: at midnight (UTC).
    Daily,
    /// `WEEKLY`: at midnight between Saturday and Sunday (UTC).
    Weekly,
    /// `MONTHLY`, `QUARTERLY`, `YEARLY`: at the start of each such period (UTC).
    Monthly,
    /// See [`UsageReset::Monthly`].
    Quarterly,
    /// See [`UsageReset::Monthly`].
    Yearly,
}

/// The priority settings of a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct PrioritySettings {
    /// `PriorityType=priority/multifactor` (otherwise `priority/basic`: submission
    /// order, `--nice` aside).
    pub multifactor: bool,
    /// Weights and factor options.
    pub params: Params,
    /// Fair Tree, or the classic algorithm with `PriorityFlags=NO_FAIR_TREE`.
    pub algorithm: Algorithm,
    /// `PriorityDecayHalfLife` in seconds (default 7 days; 0: no decay).
    pub half_life: Secs,
    /// `PriorityCalcPeriod` in seconds (minutes in the file; default 5 minutes).
    pub calc_period: Secs,
    /// `PriorityUsageResetPeriod`.
    pub usage_reset: UsageReset,
    /// `PriorityFlags=ACCRUE_ALWAYS`: age counts from submission even while held or
    /// waiting on a dependency.
    pub accrue_always: bool,
}

impl Default for PrioritySettings {
    fn default() -> Self {
        PrioritySettings {
            multifactor: false,
            params: Params::default(),
            algorithm: Algorithm::FairTree,
            half_life: 7 * 86_400,
            calc_period: 300,
            usage_reset: UsageReset::None,
            accrue_always: false,
        }
    }
}

/// Reads the priority settings of `conf`; `gres` names the GRES slots that
/// `PriorityWeightTRES=GRES/gpu=...` may weigh.
///
/// Errors: a malformed value, with the key and what was given, at the file and line
/// that set it.
pub fn priority_settings(
    conf: &SlurmConf,
    gres: &GresTable,
) -> Result<PrioritySettings, ConfError> {
    let mut s = PrioritySettings::default();
    match conf.get("PriorityType") {
        None | Some("priority/basic") => {}
        Some("priority/multifactor") => s.multifactor = true,
        Some(other) => {
            return Err(conf.error_at(
                "PriorityType",
                format!(
                "PriorityType: unknown plugin '{other}' (priority/basic or priority/multifactor)"
            ),
            ))
        }
    }
    let weight = |key: &str| -> Result<u32, ConfError> {
        match conf.get(key) {
            None => Ok(0),
            Some(v) => v.trim().parse::<u32>().map_err(|_| {
                conf.error_at(key, format!("{key}: expected a whole number, found '{v}'"))
            }),
        }
    };
    s.params.weights = Weights {
        age: weight("PriorityWeightAge")?,
        assoc: weight("PriorityWeightAssoc")?,
        fairshare: weight("PriorityWeightFairshare")?,
        job_size: weight("PriorityWeightJobSize")?,
        partition: weight("PriorityWeightPartition")?,
        qos: weight("PriorityWeightQOS")?,
        tres: match conf.get("PriorityWeightTRES") {
            None => TresWeights::default(),
            Some(v) => tres_weights(v, gres).map_err(|m| conf.error_at("PriorityWeightTRES", m))?,
        },
    };
    let time = |key: &str, default: Secs| -> Result<Secs, ConfError> {
        match conf.get(key) {
            None => Ok(default),
            Some(v) => parse_time(v)
                .map(|t| t.unwrap_or(0))
                .map_err(|e| conf.error_at(key, format!("{key}: {e}"))),
        }
    };
    s.params.max_age = time("PriorityMaxAge", 7 * 86_400)?;
    s.half_life = time("PriorityDecayHalfLife", 7 * 86_400)?;
    if let Some(v) = conf.get("PriorityCalcPeriod") {
        s.calc_period = parse_time(v)
            .map_err(|e| conf.error_at("PriorityCalcPeriod", format!("PriorityCalcPeriod: {e}")))?
            .unwrap_or(300)
            .max(1);
    }
    if let Some(v) = conf.get("PriorityFavorSmall") {
        s.params.favor_small = match v.to_ascii_lowercase().as_str() {
            "yes" => true,
            "no" => false,
            _ => {
                return Err(conf.error_at(
                    "PriorityFavorSmall",
                    format!("PriorityFavorSmall: expected YES or NO, found '{v}'"),
                ))
            }
        };
    }
    let mut dampening = 1u32;
    if let Some(v) = conf.get("FairShareDampeningFactor") {
        dampening = v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|d| *d >= 1)
            .ok_or_else(|| {
                conf.error_at(
                    "FairShareDampeningFactor",
                    format!("FairShareDampeningFactor: expected a whole number of at least 1, found '{v}'"),
                )
            })?;
    }
    for flag in conf
        .get("PriorityFlags")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        match flag.to_ascii_uppercase().as_str() {
            "NO_FAIR_TREE" => s.algorithm = Algorithm::Classic { dampening },
            "SMALL_RELATIVE_TO_TIME" => s.params.small_relative_to_time = true,
            "ACCRUE_ALWAYS" => s.accrue_always = true,
            // Accepted; billing handles MAX_TRES, the others change nothing Sluice models.
            "FAIR_TREE" | "MAX_TRES" | "CALCULATE_RUNNING" | "DEPTH_OBLIVIOUS" | "INCR_ONLY"
            | "NO_NORMAL_ALL" | "NO_NORMAL_ASSOC" | "NO_NORMAL_PART" | "NO_NORMAL_QOS"
            | "NO_NORMAL_TRES" => {}
            _ => {
                return Err(conf.error_at(
                    "PriorityFlags",
                    format!("PriorityFlags: unknown flag '{flag}'"),
                ))
            }
        }
    }
    if let Algorithm::Classic { .. } = s.algorithm {
        s.algorithm = Algorithm::Classic { dampening };
    }
    if let Some(v) = conf.get("PriorityUsageResetPeriod") {
        s.usage_reset = match v.to_ascii_uppercase().as_str() {
            "NONE" | "NOW" => UsageReset::None,
            "DAILY" => UsageReset::Daily,
            "WEEKLY" => UsageReset::Weekly,
            "MONTHLY" => UsageReset::Monthly,
            "QUARTERLY" => UsageReset::Quarterly,
            "YEARLY" => UsageReset::Yearly,
            _ => {
                return Err(conf.error_at(
                    "PriorityUsageResetPeriod",
                    format!("PriorityUsageResetPeriod: expected NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY, found '{v}'"),
                ))
            }
        };
    }
    Ok(s)
}

/// Parses `PriorityWeightTRES=CPU=1000,Mem=2000,Node=10,GRES/gpu=3000`.
pub fn tres_weights(list: &str, gres: &GresTable) -> Result<TresWeights, String> {
    let mut w = TresWeights::default();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || {
            format!("PriorityWeightTRES: cannot use '{item}' (TRES=weight, e.g. CPU=1000,GRES/gpu=3000)")
        };
        let (name, value) = item.split_once('=').ok_or_else(bad)?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(bad)?;
        let lower = name.trim().to_ascii_lowercase();
        match lower.as_str() {
            "cpu" => w.cpu = value,
            "mem" => w.mem = value,
            "node" => w.node = value,
            // Other TRES (energy, licenses, billing...) weigh nothing Sluice counts.
            _ => {
                if let Some(g) = lower.strip_prefix("gres/") {
                    let (n, t) = match g.split_once(':') {
                        Some((n, t)) => (n, Some(t)),
                        None => (g, None),
                    };
                    if let Some(slot) = gres.find(n, t) {
                        w.gres[slot] = value;
                    }
                }
            }
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm_conf::parse_str;
    use std::path::Path;

    fn conf(extra: &str) -> SlurmConf {
        parse_str(
            &format!(
                "ClusterName=c\nGresTypes=gpu\nNodeName=n1 CPUs=4 Gres=gpu:2\nPartitionName=p Nodes=n1 Default=YES\n{extra}"
            ),
            Path::new("slurm.conf"),
        )
        .unwrap()
    }

    #[test]
    fn defaults_are_slurms() {
        let c = conf("");
        let s = priority_settings(&c, &c.cluster.gres).unwrap();
        assert_eq!(s, PrioritySettings::default());
        assert_eq!(
            (s.half_life, s.calc_period, s.params.max_age),
            (604_800, 300, 604_800)
        );
    }

    #[test]
    fn the_seeds_settings_are_read() {
        let c = conf(
            "PriorityType=priority/multifactor\nPriorityDecayHalfLife=7-0\nPriorityWeightFairshare=10000\n\
             PriorityWeightAge=1000\nPriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000\n\
             PriorityMaxAge=1-0\nPriorityCalcPeriod=1\nPriorityFlags=NO_FAIR_TREE,MAX_TRES\n\
             FairShareDampeningFactor=5\nPriorityUsageResetPeriod=WEEKLY\nPriorityFavorSmall=YES",
        );
        let s = priority_settings(&c, &c.cluster.gres).unwrap();
        assert!(s.multifactor);
        assert_eq!(s.params.weights.fairshare, 10_000);
        assert_eq!(s.params.weights.age, 1000);
        assert_eq!(s.params.weights.tres.cpu, 1000.0);
        assert_eq!(
            s.params.weights.tres.gres[c.cluster.gres.find("gpu", None).unwrap()],
            3000.0
        );
        assert_eq!(s.params.max_age, 86_400);
        assert_eq!(s.calc_period, 60);
        assert_eq!(s.algorithm, Algorithm::Classic { dampening: 5 });
        assert_eq!(s.usage_reset, UsageReset::Weekly);
        assert!(s.params.favor_small);
    }

    #[test]
    fn bad_values_name_the_key_file_and_line() {
        for (line, want) in [
            (
                "PriorityType=priority/fancy",
                "PriorityType: unknown plugin 'priority/fancy'",
            ),
            ("PriorityFlags=FAST", "PriorityFlags: unknown flag 'FAST'"),
            (
                "PriorityWeightTRES=CPU",
                "PriorityWeightTRES: cannot use 'CPU'",
            ),
        ] {
            let c = conf(line);
            let e = priority_settings(&c, &c.cluster.gres).unwrap_err();
            assert!(e.message.starts_with(want), "{line}: {e}");
            // The bad setting is the fifth line of the file.
            assert_eq!(
                (e.path.as_path(), e.line),
                (Path::new("slurm.conf"), 5),
                "{line}"
            );
            assert!(e.to_string().starts_with("slurm.conf:5: "), "{e}");
        }
    }
}
