//! The usage fields `sacct` and `sstat` print from a step's [`StepUsage`] (Slurm's
//! `jobacct_gather` figures): `MaxRSS`, `AveCPU`, `MaxDiskRead`, `TRESUsageInMax`, ...,
//! in Slurm 22.05's units and forms.
//!
//! As Slurm prints them: memory and page counts in bytes (or pages) converted as far as
//! no precision is lost (`5060K`, `1.50G`), CPU times as `MM:SS.mmm` or `HH:MM:SS`,
//! disk sizes through a small-number form (`0.01M`; `sacct` counts them in MiB first,
//! `sstat` in bytes), and the `TRESUsage*` lists as `name=value` pairs in name order.
//! The two commands differ in those disk sizes and in their per-task TRES lists
//! ([`Printer`]). GPU figures (`gres/gpumem`, `gres/gpuutil`, as Slurm 23.02+ adds
//! them) are derived from the step's [`GpuUsage`]s as [`gpu_stat`] says.

use sluice_proto::usage::{GpuUsage, Stat, StepUsage};

use super::units::{convert, Convert};

/// Which command prints: `sacct` and `sstat` differ in a few forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printer {
    /// `sacct`: disk sizes counted in MiB, task lists as plain numbers.
    Sacct,
    /// `sstat`: disk sizes counted in bytes, task lists through the usage forms
    /// (a task id in the `cpu=` entry prints as a time, as Slurm's sstat does).
    Sstat,
}

/// The usage field names, as both commands spell them.
pub const NAMES: &[&str] = &[
    "AveCPU",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
];

/// A CPU time as Slurm's sacct and sstat print one (their `_elapsed_time`): `MM:SS.mmm`
/// under an hour when there are milliseconds, else `00:MM:SS`, `HH:MM:SS` or
/// `D-HH:MM:SS`.
pub fn elapsed_ms(ms: u64) -> String {
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, hours, minutes, seconds) =
        (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{seconds:02}")
    } else if hours > 0 {
        format!("{hours:02}:{minutes:02}:{seconds:02}")
    } else if milli > 0 {
        format!("{minutes:02}:{seconds:02}.{milli:03}")
    } else {
        format!("00:{minutes:02}:{seconds:02}")
    }
}

/// Whole seconds as a TRES list's `cpu=` entry prints them (Slurm's `secs2time_str`):
/// `HH:MM:SS` or `D-HH:MM:SS`.
fn time_str(secs: u64) -> String {
    let (days, hours, minutes, seconds) =
        (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{seconds:02}")
    } else {
        format!("{hours:02}:{minutes:02}:{seconds:02}")
    }
}

/// Slurm's `_print_small_double`: a size above 1 converted from `unit`, a fraction
/// as `0.01M`, nothing as `0`.
fn small(num: f64, unit: usize, how: Convert) -> String {
    if num > 1.0 {
        convert(num, unit, how)
    } else if num > 0.0 {
        format!("{num:.2}M")
    } else {
        "0".into()
    }
}

/// One of the figures a TRES usage list or a field shows for a quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The largest task's value.
    Max,
    /// Its node.
    MaxNode,
    /// Its task.
    MaxTask,
    /// The smallest task's value.
    Min,
    /// Its node.
    MinNode,
    /// Its task.
    MinTask,
    /// The mean over the tasks.
    Ave,
    /// The sum over the tasks.
    Tot,
}

/// A value of one entry of a TRES usage list: a count, or a node's name.
enum Figure {
    Count(u64),
    Node(String),
}

fn pick(stat: &Stat, tasks: u32, which: Pick) -> Figure {
    match which {
        Pick::Max => Figure::Count(stat.max),
        Pick::MaxNode => Figure::Node(stat.max_node.clone()),
        Pick::MaxTask => Figure::Count(u64::from(stat.max_task)),
        Pick::Min => Figure::Count(stat.min),
        Pick::MinNode => Figure::Node(stat.min_node.clone()),
        Pick::MinTask => Figure::Count(u64::from(stat.min_task)),
        Pick::Ave => Figure::Count(stat.ave(tasks)),
        Pick::Tot => Figure::Count(stat.tot),
    }
}

/// The step's GPU figures as TRES usage quantities: see
/// [`sluice_proto::usage::gpu_stats`].
pub fn gpu_stat(gpus: &[GpuUsage]) -> Option<(Stat, Stat)> {
    sluice_proto::usage::gpu_stats(gpus)
}

/// Which list: what the tasks read or used (`In`), or wrote (`Out`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `TRESUsageIn*`.
    In,
    /// `TRESUsageOut*`.
    Out,
}

/// A TRES usage list (`TRESUsageInMax`, ...): its entries in name order as Slurm
/// prints them, values as `how` converts them (nodes by name).
pub fn tres_list(
    u: &StepUsage,
    dir: Direction,
    which: Pick,
    printer: Printer,
    how: Convert,
) -> String {
    let gpu = gpu_stat(&u.gpus);
    let gpus = u.gpus.len() as u32;
    let mut entries: Vec<(&str, Figure)> = Vec::new();
    // Energy is not counted per task: task lists leave it out.
    let task_list = matches!(which, Pick::MaxTask | Pick::MinTask);
    match dir {
        Direction::In => {
            entries.push(("cpu", pick(&u.cpu_ms, u.tasks, which)));
            if !task_list {
                entries.push(("energy", pick(&no_energy(&u.cpu_ms), u.tasks, which)));
            }
            entries.push(("fs/disk", pick(&u.disk_read, u.tasks, which)));
            if let Some((util, mem)) = &gpu {
                entries.push(("gres/gpumem", pick(mem, gpus, which)));
                entries.push(("gres/gpuutil", pick(util, gpus, which)));
            }
            entries.push(("mem", pick(&u.rss, u.tasks, which)));
            entries.push(("pages", pick(&u.pages, u.tasks, which)));
            entries.push(("vmem", pick(&u.vmem, u.tasks, which)));
        }
        Direction::Out => {
            if !task_list {
                entries.push(("energy", pick(&no_energy(&u.cpu_ms), u.tasks, which)));
            }
            entries.push(("fs/disk", pick(&u.disk_write, u.tasks, which)));
        }
    }
    let value_form = !task_list || printer == Printer::Sstat;
    let how = if task_list { Convert::No } else { how };
    entries
        .into_iter()
        .map(|(name, fig)| {
            let v = match fig {
                // A node Slurm's sstat cannot name (see sstat's `het_part_usage`).
                Figure::Node(n) if n.is_empty() => "(null)".into(),
                Figure::Node(n) => n,
                Figure::Count(c) if !value_form => c.to_string(),
                Figure::Count(c) if name == "cpu" => time_str(c / 1000),
                Figure::Count(c) => convert(c as f64, 0, how),
            };
            format!("{name}={v}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Energy: Sluice measures none (Slurm without an energy plugin reports 0), on the
/// node and task that hold the CPU figure.
fn no_energy(cpu: &Stat) -> Stat {
    Stat {
        max: 0,
        min: 0,
        tot: 0,
        ..cpu.clone()
    }
}

/// A usage field's value for a step with figures `u`; `None` for a name that is not
/// a usage field. `how` is the conversion `--units`/`--noconvert` ask for.
pub fn value(name: &str, u: &StepUsage, printer: Printer, how: Convert) -> Option<String> {
    let size = |n: u64| convert(n as f64, 0, how);
    let disk = |n: u64| match printer {
        Printer::Sacct => small(n as f64 / f64::from(1u32 << 20), 2, how),
        Printer::Sstat => small(n as f64, 0, how),
    };
    let t = u.tasks;
    let tres = |dir, which| tres_list(u, dir, which, printer, how);
    Some(match name {
        "MaxRSS" => size(u.rss.max),
        "MaxRSSNode" => u.rss.max_node.clone(),
        "MaxRSSTask" => u.rss.max_task.to_string(),
        "AveRSS" => size(u.rss.ave(t)),
        "MaxVMSize" => size(u.vmem.max),
        "MaxVMSizeNode" => u.vmem.max_node.clone(),
        "MaxVMSizeTask" => u.vmem.max_task.to_string(),
        "AveVMSize" => size(u.vmem.ave(t)),
        "MaxPages" => size(u.pages.max),
        "MaxPagesNode" => u.pages.max_node.clone(),
        "MaxPagesTask" => u.pages.max_task.to_string(),
        "AvePages" => size(u.pages.ave(t)),
        // CPU times per task: whole seconds, as Slurm keeps them in its TRES lists.
        "AveCPU" => elapsed_ms(u.cpu_ms.ave(t) / 1000 * 1000),
        "MinCPU" => elapsed_ms(u.cpu_ms.min / 1000 * 1000),
        "MinCPUNode" => u.cpu_ms.min_node.clone(),
        "MinCPUTask" => u.cpu_ms.min_task.to_string(),
        "MaxDiskRead" => disk(u.disk_read.max),
        "MaxDiskReadNode" => u.disk_read.max_node.clone(),
        "MaxDiskReadTask" => u.disk_read.max_task.to_string(),
        "AveDiskRead" => disk(u.disk_read.ave(t)),
        "MaxDiskWrite" => disk(u.disk_write.max),
        "MaxDiskWriteNode" => u.disk_write.max_node.clone(),
        "MaxDiskWriteTask" => u.disk_write.max_task.to_string(),
        "AveDiskWrite" => disk(u.disk_write.ave(t)),
        "TRESUsageInAve" => tres(Direction::In, Pick::Ave),
        "TRESUsageInMax" => tres(Direction::In, Pick::Max),
        "TRESUsageInMaxNode" => tres(Direction::In, Pick::MaxNode),
        "TRESUsageInMaxTask" => tres(Direction::In, Pick::MaxTask),
        "TRESUsageInMin" => tres(Direction::In, Pick::Min),
        "TRESUsageInMinNode" => tres(Direction::In, Pick::MinNode),
        "TRESUsageInMinTask" => tres(Direction::In, Pick::MinTask),
        "TRESUsageInTot" => tres(Direction::In, Pick::Tot),
        "TRESUsageOutAve" => tres(Direction::Out, Pick::Ave),
        "TRESUsageOutMax" => tres(Direction::Out, Pick::Max),
        "TRESUsageOutMaxNode" => tres(Direction::Out, Pick::MaxNode),
        "TRESUsageOutMaxTask" => tres(Direction::Out, Pick::MaxTask),
        "TRESUsageOutMin" => tres(Direction::Out, Pick::Min),
        "TRESUsageOutMinNode" => tres(Direction::Out, Pick::MinNode),
        "TRESUsageOutMinTask" => tres(Direction::Out, Pick::MinTask),
        "TRESUsageOutTot" => tres(Direction::Out, Pick::Tot),
        _ => return None,
    })
}

/// A usage field of a step that ended without figures, as Slurm prints one whose tasks
/// left none (its energy, zero, is still summed): `energy=0` in the mean and total
/// lists, nothing elsewhere.
pub fn without_figures(name: &str) -> String {
    match name {
        "TRESUsageInAve" | "TRESUsageInTot" | "TRESUsageOutAve" | "TRESUsageOutTot" => {
            "energy=0".into()
        }
        _ => String::new(),
    }
}

/// `TotalCPU`, `UserCPU` or `SystemCPU` of CPU times in milliseconds: user plus system,
/// user, system.
pub fn cpu_time(name: &str, user_ms: u64, system_ms: u64) -> Option<String> {
    Some(elapsed_ms(match name {
        "TotalCPU" => user_ms + system_ms,
        "UserCPU" => user_ms,
        "SystemCPU" => system_ms,
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_read_as_slurms_elapsed_time() {
        assert_eq!(elapsed_ms(0), "00:00:00");
        assert_eq!(elapsed_ms(1_500), "00:01.500");
        assert_eq!(elapsed_ms(61_000), "00:01:01");
        assert_eq!(elapsed_ms(61_007), "01:01.007");
        // From an hour on, no milliseconds.
        assert_eq!(elapsed_ms(3_723_450), "01:02:03");
        assert_eq!(elapsed_ms(90_061_000), "1-01:01:01");
        assert_eq!(time_str(59), "00:00:59");
        assert_eq!(time_str(86_400 + 61), "1-00:01:01");
    }

    #[test]
    fn small_sizes_show_fractions_of_a_mebibyte() {
        // sacct counts disk sizes in MiB: 5,000 bytes are 0.00M, 3 MiB are 3M.
        assert_eq!(small(5000.0 / 1048576.0, 2, Convert::Exact), "0.00M");
        assert_eq!(small(0.5, 2, Convert::Exact), "0.50M");
        assert_eq!(small(3.0, 2, Convert::Exact), "3M");
        assert_eq!(small(0.0, 2, Convert::Exact), "0");
        // sstat counts bytes.
        assert_eq!(small(2012.0, 0, Convert::Exact), "2012");
        assert_eq!(small(3.0 * 1048576.0, 0, Convert::Exact), "3M");
    }

    fn stat(max: u64, max_task: u32, min: u64, min_task: u32, tot: u64) -> Stat {
        Stat {
            max,
            max_node: "n1".into(),
            max_task,
            min,
            min_node: "n1".into(),
            min_task,
            tot,
        }
    }

    /// Real Slurm 22.05.8's srun step of two tasks (`compat/scenarios/160`), as
    /// slurmdbd kept its figures: the largest task's, task 1, also as the smallest.
    fn sacct_step() -> StepUsage {
        StepUsage {
            tasks: 2,
            cpu_ms: stat(0, 1, 0, 1, 0),
            user_cpu_ms: 154,
            system_cpu_ms: 26,
            rss: stat(8_953_856, 1, 8_953_856, 1, 8_953_856),
            vmem: stat(10_121_216, 1, 10_121_216, 1, 10_121_216),
            pages: stat(0, 1, 0, 1, 0),
            disk_read: stat(9_012_773, 1, 9_012_773, 1, 9_012_773),
            disk_write: stat(6_000_001, 1, 6_000_001, 1, 6_000_001),
            ..StepUsage::default()
        }
    }

    fn fields(u: &StepUsage, printer: Printer, how: Convert, names: &str) -> String {
        names
            .split(',')
            .map(|n| value(n, u, printer, how).expect(n))
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn sacct_prints_a_steps_figures_as_real_slurm() {
        let u = sacct_step();
        let exact = Convert::Exact;
        assert_eq!(
            fields(&u, Printer::Sacct, exact, "MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxPages,MaxPagesNode,MaxPagesTask,AvePages"),
            "8744K|n1|1|4372K|9884K|n1|1|4942K|0|n1|1|0"
        );
        assert_eq!(
            fields(&u, Printer::Sacct, exact, "MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite"),
            "8.60M|n1|1|4.30M|5.72M|n1|1|2.86M"
        );
        assert_eq!(
            fields(
                &u,
                Printer::Sacct,
                exact,
                "TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask"
            ),
            "cpu=00:00:00,energy=0,fs/disk=4506386,mem=4372K,pages=0,vmem=4942K|\
             cpu=00:00:00,energy=0,fs/disk=9012773,mem=8744K,pages=0,vmem=9884K|\
             cpu=n1,energy=n1,fs/disk=n1,mem=n1,pages=n1,vmem=n1|\
             cpu=1,fs/disk=1,mem=1,pages=1,vmem=1"
        );
        assert_eq!(
            fields(
                &u,
                Printer::Sacct,
                exact,
                "TRESUsageInMin,TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot"
            ),
            "cpu=00:00:00,energy=0,fs/disk=9012773,mem=8744K,pages=0,vmem=9884K|\
             cpu=n1,energy=n1,fs/disk=n1,mem=n1,pages=n1,vmem=n1|\
             cpu=1,fs/disk=1,mem=1,pages=1,vmem=1|\
             cpu=00:00:00,energy=0,fs/disk=9012773,mem=8744K,pages=0,vmem=9884K"
        );
        assert_eq!(
            fields(&u, Printer::Sacct, exact, "TRESUsageOutAve,TRESUsageOutMax,TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,TRESUsageOutMinNode,TRESUsageOutMinTask,TRESUsageOutTot"),
            "energy=0,fs/disk=3000000|energy=0,fs/disk=6000001|energy=n1,fs/disk=n1|fs/disk=1|\
             energy=0,fs/disk=6000001|energy=n1,fs/disk=n1|fs/disk=1|energy=0,fs/disk=6000001"
        );
        assert_eq!(
            ["TotalCPU", "UserCPU", "SystemCPU"].map(|f| cpu_time(f, 154, 26).unwrap()),
            ["00:00.180", "00:00.154", "00:00.026"]
        );
        assert_eq!(without_figures("TRESUsageInAve"), "energy=0");
        assert_eq!(without_figures("TRESUsageOutTot"), "energy=0");
        assert_eq!(without_figures("TRESUsageInMax"), "");
        assert_eq!(without_figures("MaxRSS"), "");
    }

    #[test]
    fn units_and_noconvert_as_real_slurms_sacct() {
        let u = sacct_step();
        assert_eq!(
            fields(&u, Printer::Sacct, Convert::To(2), "MaxRSS,AveRSS,MaxVMSize,MaxDiskRead,MaxDiskWrite,TRESUsageInMax,TRESUsageOutTot"),
            "8.54M|4.27M|9.65M|8.60M|5.72M|\
             cpu=00:00:00,energy=0,fs/disk=8.60M,mem=8.54M,pages=0,vmem=9.65M|energy=0,fs/disk=5.72M"
        );
        assert_eq!(
            fields(
                &u,
                Printer::Sacct,
                Convert::To(3),
                "MaxRSS,AvePages,TRESUsageInAve"
            ),
            "0.01G|0|cpu=00:00:00,energy=0,fs/disk=0.00G,mem=0.00G,pages=0,vmem=0.00G"
        );
        assert_eq!(
            fields(
                &u,
                Printer::Sacct,
                Convert::No,
                "MaxRSS,MaxDiskRead,TRESUsageInMax"
            ),
            "8953856|8.60M|cpu=00:00:00,energy=0,fs/disk=9012773,mem=8953856,pages=0,vmem=10121216"
        );
    }

    #[test]
    fn sstat_prints_a_running_steps_figures_as_real_slurm() {
        // Real sstat of a running two-task step (`compat/scenarios/161`).
        let u = StepUsage {
            tasks: 2,
            cpu_ms: stat(0, 0, 0, 0, 0),
            rss: stat(1_470_464, 1, 1_429_504, 0, 2_899_968),
            vmem: stat(2_560_000, 0, 2_560_000, 0, 5_120_000),
            pages: stat(0, 0, 0, 0, 0),
            disk_read: stat(3981, 0, 3981, 0, 7962),
            disk_write: stat(1, 0, 1, 0, 2),
            ..StepUsage::default()
        };
        let exact = Convert::Exact;
        assert_eq!(
            fields(&u, Printer::Sstat, exact, "MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU"),
            "2500K|n1|0|2500K|1436K|n1|1|1416K|0|n1|0|0|00:00:00|n1|0|00:00:00"
        );
        assert_eq!(
            fields(&u, Printer::Sstat, exact, "MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite"),
            "3981|n1|0|3981|1.00M|n1|0|1.00M"
        );
        assert_eq!(
            fields(&u, Printer::Sstat, exact, "TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot"),
            "cpu=00:00:00,energy=0,fs/disk=3981,mem=1416K,pages=0,vmem=2500K|\
             cpu=00:00:00,energy=0,fs/disk=3981,mem=1436K,pages=0,vmem=2500K|\
             cpu=n1,energy=n1,fs/disk=n1,mem=n1,pages=n1,vmem=n1|\
             cpu=00:00:00,fs/disk=0,mem=1,pages=0,vmem=0|\
             cpu=00:00:00,energy=0,fs/disk=3981,mem=1396K,pages=0,vmem=2500K|\
             cpu=n1,energy=n1,fs/disk=n1,mem=n1,pages=n1,vmem=n1|\
             cpu=00:00:00,fs/disk=0,mem=0,pages=0,vmem=0|\
             cpu=00:00:00,energy=0,fs/disk=7962,mem=2832K,pages=0,vmem=5000K"
        );
        assert_eq!(
            fields(&u, Printer::Sstat, exact, "TRESUsageOutAve,TRESUsageOutMax,TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,TRESUsageOutMinNode,TRESUsageOutMinTask,TRESUsageOutTot"),
            "energy=0,fs/disk=1|energy=0,fs/disk=1|energy=n1,fs/disk=n1|fs/disk=0|\
             energy=0,fs/disk=1|energy=n1,fs/disk=n1|fs/disk=0|energy=0,fs/disk=2"
        );
    }

    #[test]
    fn gpus_add_gpumem_and_gpuutil_to_the_in_lists() {
        let gpu = |node: &str, index, util_sum, mem_max| GpuUsage {
            node: node.into(),
            index,
            samples: 4,
            util_sum,
            mem_max,
            ..GpuUsage::default()
        };
        let u = StepUsage {
            tasks: 2,
            gpus: vec![gpu("n1", 0, 360, 2 << 30), gpu("n2", 1, 42, 512 << 20)],
            ..sacct_step()
        };
        // Means 90 % and 10.5 % (11 rounded); the busiest on n1 (index 0), the idlest
        // on n2 (index 1); memory 2 GiB and 512 MiB.
        let list = |which| tres_list(&u, Direction::In, which, Printer::Sacct, Convert::Exact);
        assert!(
            list(Pick::Max).contains(",fs/disk=9012773,gres/gpumem=2G,gres/gpuutil=90,mem="),
            "{}",
            list(Pick::Max)
        );
        assert!(list(Pick::Min).contains(",gres/gpumem=512M,gres/gpuutil=11,"));
        assert!(list(Pick::Tot).contains(",gres/gpumem=2.50G,gres/gpuutil=101,"));
        assert!(list(Pick::Ave).contains(",gres/gpumem=1280M,gres/gpuutil=50,"));
        assert!(list(Pick::MaxNode).contains(",gres/gpumem=n1,gres/gpuutil=n1,"));
        assert!(list(Pick::MinNode).contains(",gres/gpumem=n2,gres/gpuutil=n2,"));
        assert!(list(Pick::MinTask).contains(",gres/gpumem=1,gres/gpuutil=1,"));
        // None on the out side, and none without GPUs.
        let out = tres_list(
            &u,
            Direction::Out,
            Pick::Max,
            Printer::Sacct,
            Convert::Exact,
        );
        assert!(!out.contains("gres/"));
        assert!(!tres_list(
            &sacct_step(),
            Direction::In,
            Pick::Max,
            Printer::Sacct,
            Convert::Exact
        )
        .contains("gres/"));
    }
}
