//! `sinfo -t STATES`: which nodes are listed, as Slurm 22.05's sinfo chooses them.
//!
//! The list names states separated by `,` (a node in any of them) or `&` (in all of
//! them; one `&` anywhere makes the whole list an "and"), each word a case-insensitive
//! prefix of a state's name or of its short form (`i`, `mix`, `dr`, `no_respond`), or
//! `all`. A word names a base state (`idle`, `mixed`, `down`, ...: the node's base state
//! is it; `alloc`: some of its processors are allocated) or a flag (`drain`,
//! `completing`, `no_respond`, `maint`, ...: the node has it); `drained` and
//! `draining` name the two kinds of drained node. Node states are numbered as Slurm
//! numbers them ([`state_value`]).

use super::sinfo_records::state_value;
use sluice_proto::types::NodeInfo;

const BASE: u32 = 0xf;
const UNKNOWN: u32 = 0;
const DOWN: u32 = 1;
const IDLE: u32 = 2;
const ALLOCATED: u32 = 3;
const MIXED: u32 = 5;
const FUTURE: u32 = 6;
const NET: u32 = 1 << 4;
const RES: u32 = 1 << 5;
const CLOUD: u32 = 1 << 7;
const DRAIN: u32 = 1 << 9;
const COMPLETING: u32 = 1 << 10;
const NO_RESPOND: u32 = 1 << 11;
const POWERED_DOWN: u32 = 1 << 12;
const FAIL: u32 = 1 << 13;
const POWERING_UP: u32 = 1 << 14;
const MAINT: u32 = 1 << 15;
const REBOOT_REQUESTED: u32 = 1 << 16;
const POWERING_DOWN: u32 = 1 << 18;
const REBOOT_ISSUED: u32 = 1 << 20;
const PLANNED: u32 = 1 << 21;
const POWER_DOWN: u32 = 1 << 23;

/// Every word `-t` takes, in the order sinfo tries them, with the names it may be a
/// prefix of (long form, short form).
const WORDS: &[(u32, &[&str])] = &[
    (UNKNOWN, &["UNKNOWN", "UNK"]),
    (DOWN, &["DOWN"]),
    (IDLE, &["IDLE"]),
    (ALLOCATED, &["ALLOCATED", "ALLOC"]),
    (MIXED, &["MIXED", "MIX"]),
    (FUTURE, &["FUTURE", "FUTR"]),
    (PLANNED, &["PLANNED", "PLND"]),
    (DRAIN, &["DRAIN"]),
    (DRAIN | IDLE, &["DRAINED"]),
    (RES, &["RESV", "RESERVED"]),
    (NET, &["PERFCTRS", "NPC"]),
    (DRAIN | ALLOCATED, &["DRAINING", "DRNG"]),
    (COMPLETING, &["COMPLETING", "COMP"]),
    (NO_RESPOND, &["NO_RESPOND"]),
    (POWERING_DOWN, &["POWERING_DOWN", "POWRING_DN"]),
    (POWERED_DOWN, &["POWERED_DOWN", "POWERED_DN"]),
    (POWER_DOWN, &["POWER_DOWN", "POW_DN"]),
    (POWERING_UP, &["POWERING_UP"]),
    (FAIL, &["FAIL"]),
    (MAINT, &["MAINT"]),
    (REBOOT_REQUESTED, &["REBOOT", "BOOT"]),
    (REBOOT_ISSUED, &["REBOOT^", "BOOT^"]),
    (CLOUD, &["CLOUD"]),
];

/// What sinfo answers a word it does not know, after `Bad state string: "WORD"`.
pub const VALID_STATES: &str = "unknown,down,idle,allocated,?,mixed,future,drain,drained,\
draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,\
power_down,powering_up,fail,maint,reboot,reboot^,unknown";

/// A parsed `-t` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct States {
    /// The states named, as Slurm numbers them; `None`: `all`.
    ids: Option<Vec<u32>>,
    /// `&`: a node must be in every one.
    all_of: bool,
}

impl States {
    /// Reads `-t`'s value; `Err(word)` names the first word that is no state.
    pub fn parse(list: &str) -> Result<States, String> {
        if list.eq_ignore_ascii_case("all") {
            return Ok(States {
                ids: None,
                all_of: false,
            });
        }
        let ids = list
            .split([',', '&'])
            .filter(|w| !w.is_empty())
            .map(|w| state_id(w).ok_or_else(|| w.to_string()))
            .collect::<Result<Vec<u32>, String>>()?;
        Ok(States {
            ids: Some(ids),
            all_of: list.contains('&'),
        })
    }

    /// Whether sinfo lists node `n`.
    pub fn admit(&self, n: &NodeInfo) -> bool {
        let Some(ids) = &self.ids else {
            return true;
        };
        let node = state_value(n);
        let is = |id: &u32| in_state(*id, node, n.cpus_alloc);
        if self.all_of {
            !ids.is_empty() && ids.iter().all(is)
        } else {
            ids.iter().any(is)
        }
    }
}

/// The state a word names: the first of [`WORDS`] it is a prefix of.
fn state_id(word: &str) -> Option<u32> {
    let word = word.to_ascii_uppercase();
    WORDS
        .iter()
        .find(|(_, names)| names.iter().any(|name| name.starts_with(&word)))
        .map(|&(id, _)| id)
}

fn draining(v: u32) -> bool {
    v & DRAIN != 0 && (matches!(v & BASE, ALLOCATED | MIXED) || v & COMPLETING != 0)
}

/// Whether a node in state `node` (with `cpus_alloc` processors allocated) is in
/// state `id`.
fn in_state(id: u32, node: u32, cpus_alloc: u32) -> bool {
    if id == DRAIN {
        node & DRAIN != 0
    } else if draining(id) {
        draining(node)
    } else if id & DRAIN != 0 {
        node & DRAIN != 0 && !draining(node)
    } else if id & !BASE != 0 {
        id & node != 0
    } else if id == ALLOCATED {
        cpus_alloc > 0
    } else {
        node & BASE == id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, state: &str, cpus_alloc: u32, agent_up: bool) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            state: state.into(),
            cpus: 4,
            cpus_alloc,
            agent_up,
            ..NodeInfo::default()
        }
    }

    fn listed(list: &str, nodes: &[NodeInfo]) -> Vec<String> {
        let states = States::parse(list).unwrap();
        nodes
            .iter()
            .filter(|n| states.admit(n))
            .map(|n| n.name.clone())
            .collect()
    }

    #[test]
    fn words_are_prefixes_of_state_names_tried_in_sinfos_order() {
        assert_eq!(state_id("i"), Some(IDLE));
        assert_eq!(state_id("Mixed"), Some(MIXED));
        assert_eq!(state_id("m"), Some(MIXED));
        assert_eq!(state_id("alloc"), Some(ALLOCATED));
        assert_eq!(state_id("dr"), Some(DRAIN));
        assert_eq!(state_id("drained"), Some(DRAIN | IDLE));
        assert_eq!(state_id("DRNG"), Some(DRAIN | ALLOCATED));
        assert_eq!(state_id("no_respond"), Some(NO_RESPOND));
        assert_eq!(state_id("n"), Some(NET));
        assert_eq!(state_id("c"), Some(COMPLETING));
        assert_eq!(state_id("idler"), None);
        assert_eq!(States::parse("idle,foo"), Err("foo".to_string()));
    }

    #[test]
    fn nodes_are_listed_by_base_state_processors_allocated_or_flag() {
        // n1 half busy, n2 drained (idle beneath), n3 draining (busy beneath), n4 down
        // beneath its drain, n5 awaiting its agent, n6 down.
        let nodes = [
            node("n1", "mixed", 2, true),
            NodeInfo {
                down: false,
                ..node("n2", "drained", 0, true)
            },
            node("n3", "draining", 4, true),
            NodeInfo {
                down: true,
                ..node("n4", "drained", 0, false)
            },
            node("n5", "unknown", 0, false),
            node("n6", "down", 0, false),
        ];
        assert_eq!(listed("idle", &nodes), ["n2"]);
        assert_eq!(listed("mix", &nodes), ["n1"]);
        assert_eq!(listed("alloc", &nodes), ["n1", "n3"]);
        assert_eq!(listed("drain", &nodes), ["n2", "n3", "n4"]);
        assert_eq!(listed("drained", &nodes), ["n2", "n4"]);
        assert_eq!(listed("draining", &nodes), ["n3"]);
        assert_eq!(listed("down", &nodes), ["n4", "n6"]);
        assert_eq!(listed("unk", &nodes), ["n5"]);
        assert_eq!(listed("no_respond", &nodes), ["n4", "n5", "n6"]);
        assert_eq!(listed("mix,down", &nodes), ["n1", "n4", "n6"]);
        assert_eq!(listed("down&drain", &nodes), ["n4"]);
        assert_eq!(listed("idle&drain", &nodes), ["n2"]);
        assert_eq!(listed("all", &nodes).len(), 6);
        assert!(listed("", &nodes).is_empty());
        assert!(listed("&", &nodes).is_empty());
    }
}
