#!/usr/bin/env bash
# Captures real Slurm 22.05's preemption (partition_prio, REQUEUE, GraceTime=5) into this
# folder. Run as root under the real-slurm lock:
#   flock /tmp/real-slurm.lock bash crates/sluice-cli/tests/samples/preempt/capture.sh
set -u
RS=/work/shared/tools/real-slurm
OUT=$(cd "$(dirname "$0")" && pwd)
R=${RS_ROOT:-/tmp/real-slurm}
$RS stop >/dev/null 2>&1
$RS start >/dev/null 2>&1 || { echo "start failed"; exit 1; }
$RS stop >/dev/null 2>&1
C=/tmp/preempt-capture-conf; rm -rf $C; mkdir -p $C; cp $R/etc/* $C/ 2>/dev/null
sed -i '/^PartitionName=/d' $C/slurm.conf
cat >>$C/slurm.conf <<EOC
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PartitionName=low Nodes=ALL Default=YES MaxTime=1-00:00:00 State=UP PriorityTier=1 GraceTime=5
PartitionName=high Nodes=ALL MaxTime=1-00:00:00 State=UP PriorityTier=10
EOC
$RS start $C >/dev/null 2>&1 || { echo "start with preempt conf failed"; tail -20 $R/log/slurmctld.log; exit 1; }
export SLURM_CONF=$C/slurm.conf
W=/tmp/preempt-capture-work; rm -rf $W; mkdir -p $W; cd $W
cap() { # name, command...
  local name=$1; shift
  { echo "\$ $*"; local e; e=$(mktemp); "$@" 2>"$e"; local rc=$?
    if [ -s "$e" ]; then echo "--- stderr"; cat "$e"; fi; echo "--- exit $rc"; rm -f "$e"; } >"$OUT/$name.txt"
}
cat >low.sh <<'EOS'
#!/bin/bash
#SBATCH -p low --exclusive -o low-%j.out
trap 'echo "got SIGTERM restart=$SLURM_RESTART_COUNT"; exit 0' TERM
echo "start restart=${SLURM_RESTART_COUNT:-none}"
for i in $(seq 60); do sleep 1; done
echo done
EOS
cat >high.sh <<'EOS'
#!/bin/bash
#SBATCH -p high --exclusive -o high-%j.out
sleep 8
EOS
low=$(sbatch --parsable low.sh); sleep 4
cap squeue_low_running squeue
high=$(sbatch --parsable high.sh); sleep 1
cap squeue_during_grace squeue
cap scontrol_show_job_low_grace scontrol show job $low
sleep 6
cap squeue_after_grace squeue
cap scontrol_show_job_low_requeued scontrol show job $low
cap sacct_D_after_grace sacct -D -j $low -X -o JobID,JobName,Partition,State,ExitCode,Restarts
sleep 12
cap squeue_low_rerun squeue
cap scontrol_show_job_low_rerun scontrol show job $low
cp low-$low.out $OUT/low_job_output.txt
scancel $low; sleep 3
cap sacct_D_final sacct -D -j $low,$high -o JobID,JobName,Partition,State,ExitCode
cap sacct_final sacct -j $low,$high -X -o JobID,JobName,Partition,State,ExitCode
grep -i -E "preempt|requeue" $R/log/slurmctld.log | tail -20 > $OUT/slurmctld_log_excerpt.txt
$RS stop >/dev/null 2>&1
echo captured
