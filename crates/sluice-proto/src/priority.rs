//! What `sprio` and `sshare` read: pending jobs' multifactor priorities with their
//! factors (`GET /v1/priority`), and every association's fair-share figures
//! (`GET /v1/shares`).

use serde::{Deserialize, Serialize};

/// `GET /v1/priority`: the weights and every pending job's priority.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorityReport {
    /// `PriorityType=priority/multifactor`; with `priority/basic` there are no factors
    /// and `jobs` is empty.
    pub multifactor: bool,
    /// The configured weights (`sprio -w`).
    pub weights: PriorityWeights,
    /// Pending jobs, by job id.
    pub jobs: Vec<JobPriority>,
}

/// `PriorityWeight*` as configured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorityWeights {
    /// `PriorityWeightAge`.
    pub age: u32,
    /// `PriorityWeightAssoc`.
    pub assoc: u32,
    /// `PriorityWeightFairshare`.
    pub fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub job_size: u32,
    /// `PriorityWeightPartition`.
    pub partition: u32,
    /// `PriorityWeightQOS`.
    pub qos: u32,
    /// `PriorityWeightTRES` as written in slurm.conf (empty when unset).
    pub tres: String,
}

/// One factor of a job's priority: normalized (0 to 1) and weighted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Factor {
    /// Between 0 and 1 (`sprio -n`).
    pub normalized: f64,
    /// Times its weight (`sprio`).
    pub weighted: f64,
}

/// One TRES's part of a job's priority.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TresFactor {
    /// TRES name as `sprio` prints it (`cpu`, `mem`, `node`, `gres/gpu`).
    pub name: String,
    /// The factor.
    pub factor: Factor,
}

/// A pending job's priority and its factors (`sprio -l`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobPriority {
    /// Job id.
    pub job_id: u64,
    /// Partition.
    pub partition: String,
    /// Owner's name.
    pub user: String,
    /// Owner's uid.
    pub uid: u32,
    /// Account charged.
    pub account: String,
    /// The priority (what the queue is ordered by).
    pub priority: u32,
    /// Site factor (not normalized).
    pub site: i64,
    /// Age.
    pub age: Factor,
    /// Association.
    pub assoc: Factor,
    /// Fair-share.
    pub fairshare: Factor,
    /// Job size.
    pub job_size: Factor,
    /// Partition.
    pub partition_factor: Factor,
    /// QOS.
    pub qos: Factor,
    /// `--nice` (subtracted).
    pub nice: i64,
    /// TRES with a weight, in Slurm's TRES order.
    pub tres: Vec<TresFactor>,
}

/// `GET /v1/shares`: every association in tree order (`sshare -a -l`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SharesReport {
    /// `PriorityFlags=NO_FAIR_TREE` is not set: the `LevelFS` column exists.
    pub fair_tree: bool,
    /// Associations, depth first (users before sub-accounts, each by name).
    pub rows: Vec<ShareRow>,
}

/// One association's fair-share figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShareRow {
    /// Depth in the tree (`root` is 0).
    pub depth: u32,
    /// Account (for a user association, the user's account).
    pub account: String,
    /// User, for a user association.
    pub user: Option<String>,
    /// `RawShares`: `None` for root; `Some("parent")` or the number.
    pub raw_shares: Option<String>,
    /// `NormShares`: share of the whole machine's, 0 to 1.
    pub norm_shares: f64,
    /// `RawUsage`: decayed billing-TRES-seconds.
    pub raw_usage: f64,
    /// `NormUsage`: raw usage over the root's (`None` for root).
    pub norm_usage: Option<f64>,
    /// `EffectvUsage`.
    pub effective_usage: f64,
    /// `FairShare`: the factor, for user associations.
    pub fairshare: Option<f64>,
    /// `LevelFS`: `None` for root; infinite without usage (sent as `"inf"`: JSON has
    /// no infinity).
    #[serde(with = "maybe_infinite")]
    pub level_fs: Option<f64>,
    /// `GrpTRESMins` limit as a TRES string (empty: none).
    pub grp_tres_mins: String,
    /// `TRESRunMins`: TRES × minutes left of the running jobs below, every tracked TRES.
    pub tres_run_mins: String,
    /// `GrpTRESRaw`: the TRES-minutes the jobs below have used (decayed, as
    /// `GrpTRESMins` counts them), every tracked TRES; empty from an older controller.
    #[serde(default)]
    pub grp_tres_raw: String,
    /// `ID`: the association's id.
    #[serde(default)]
    pub assoc_id: Option<u32>,
}

/// An optional number that may be infinite, as JSON: a number, `"inf"`, or `null`.
mod maybe_infinite {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Wire {
        Number(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(x) if x.is_infinite() && *x > 0.0 => "inf".serialize(s),
            Some(x) => x.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(match Option::<Wire>::deserialize(d)? {
            None => None,
            Some(Wire::Number(x)) => Some(x),
            Some(Wire::Text(t)) if t == "inf" => Some(f64::INFINITY),
            Some(Wire::Text(t)) => {
                return Err(serde::de::Error::custom(format!("not a number: {t}")))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_infinite_level_fs_survives_json() {
        let row = |level_fs| ShareRow {
            level_fs,
            ..Default::default()
        };
        for v in [Some(f64::INFINITY), Some(0.25), None] {
            let text = serde_json::to_string(&row(v)).unwrap();
            let back: ShareRow = serde_json::from_str(&text).unwrap();
            assert_eq!(back.level_fs, v, "{text}");
        }
        assert!(serde_json::to_string(&row(Some(f64::INFINITY)))
            .unwrap()
            .contains(r#""level_fs":"inf""#));
    }
}
