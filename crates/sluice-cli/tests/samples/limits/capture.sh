#!/usr/bin/env bash
# Captures real Slurm 22.05's answers to accounting limits and partition policy into this
# directory (one file per command, format as ../sacctmgr/README.md). Run as root, inside
# `flock /tmp/real-slurm.lock`. Uses accounts lima/limb and QOS limq/limd/partq, removed
# at the end.
set -u
RS=/work/shared/tools/real-slurm
R=/tmp/real-slurm
OUT=$(cd "$(dirname "$0")" && pwd)
n=0
cap() { # cap NAME CMD...: one sample file
  n=$((n + 1))
  local f; f=$(printf '%s/%03d_%s.txt' "$OUT" "$n" "$1"); shift
  local o e rc
  o=$(mktemp); e=$(mktemp)
  bash -c "$*" >"$o" 2>"$e"; rc=$?
  { echo "\$ $*"; cat "$o"; if [ -s "$e" ]; then echo "--- stderr"; cat "$e"; fi; echo "--- exit $rc"; } >"$f"
  rm -f "$o" "$e"
}
q() { bash -c "$*" >/dev/null 2>&1; }
settle() { sleep "${1:-4}"; }
clear_jobs() { scancel -u root; scancel -u nobody; sleep 3; }

RS_GPUS=4 $RS start >/dev/null || exit 1
eval "$($RS env)"
# accounts and QOS (the partitions below name them)
q sacctmgr -i add qos limq
q sacctmgr -i add qos limd flags=DenyOnLimit
q sacctmgr -i add qos partq
q sacctmgr -i add account lima
q sacctmgr -i add account limb
q sacctmgr -i add user root account=lima
q sacctmgr -i add user root account=limb
q sacctmgr -i add user nobody account=lima
q "sacctmgr -i modify user root set qos+=limq,limd"
$RS stop >/dev/null
mkdir -p /tmp/lim-conf && cp -a $R/etc/. /tmp/lim-conf/
cat >>/tmp/lim-conf/slurm.conf <<CONF
AccountingStorageEnforce=associations,limits,qos,safe
PartitionName=allowacct Nodes=ALL AllowAccounts=limb
PartitionName=denyacct Nodes=ALL DenyAccounts=lima
PartitionName=allowqos Nodes=ALL AllowQos=normal
PartitionName=denyqos Nodes=ALL DenyQos=limq
PartitionName=allowgrp Nodes=ALL AllowGroups=root
PartitionName=pdown Nodes=ALL State=DOWN
PartitionName=pdrain Nodes=ALL State=DRAIN
PartitionName=pinactive Nodes=ALL State=INACTIVE
PartitionName=minnodes Nodes=ALL MinNodes=2
PartitionName=excl Nodes=ALL OverSubscribe=EXCLUSIVE ExclusiveUser=YES
PartitionName=pqos Nodes=ALL QOS=partq
CONF
$RS start /tmp/lim-conf >/dev/null || exit 1
eval "$($RS env)"
S="sbatch -o /dev/null"

# ---- partition policy at submission
cap part_allowacct_denied "$S -A lima -p allowacct --wrap true"
cap part_allowacct_ok "$S -H -A limb -p allowacct --wrap true"
cap part_denyacct_denied "$S -A lima -p denyacct --wrap true"
cap part_allowqos_denied "$S -A lima --qos=limq -p allowqos --wrap true"
cap part_denyqos_denied "$S -A lima --qos=limq -p denyqos --wrap true"
cap part_allowgroups_denied "setpriv --reuid=65534 --regid=65534 --clear-groups $S -A lima -p allowgrp --wrap true"
cap part_allowgroups_root "$S -H -A lima -p allowgrp --wrap true"
cap part_drain_denied "$S -A lima -p pdrain --wrap true"
cap part_inactive_denied "$S -A lima -p pinactive --wrap true"
cap part_down_accepted "$S -A lima -p pdown --wrap 'sleep 30'"
cap part_minnodes_accepted "$S -A lima -p minnodes --wrap 'sleep 30'"
settle
cap part_squeue "squeue -h -o '%P %t %r' -p pdown,minnodes"
cap part_show "scontrol show partition allowacct denyacct allowqos denyqos allowgrp pdown pdrain pinactive minnodes excl pqos"
clear_jobs

# ---- association limits (the account lima)
q sacctmgr -i modify account lima set grptres=cpu=1
cap grp_cpu_first "$S -A lima --wrap 'sleep 60'"
cap grp_cpu_second "$S -A lima --wrap 'sleep 60'"
cap grp_cpu_other_account "$S -A limb --wrap 'sleep 60'"
settle
cap grp_cpu_squeue "squeue -h -o '%a %t %r'"
q sacctmgr -i modify account lima set grptres=cpu=-1
clear_jobs
q sacctmgr -i modify account lima set grptres=gres/gpu=1
cap grp_gres_first "$S -A lima --gpus=1 --wrap 'sleep 60'"
cap grp_gres_second "$S -A lima --gpus=1 --wrap 'sleep 60'"
cap grp_gres_nogpu "$S -A lima --wrap 'sleep 60'"
settle
cap grp_gres_squeue "squeue -h -o '%t %b %r'"
cap grp_gres_raise "sacctmgr -i modify account lima set grptres=gres/gpu=2"
settle 35
cap grp_gres_squeue_raised "squeue -h -o '%t %b %r'"
q sacctmgr -i modify account lima set grptres=gres/gpu=-1
clear_jobs
q sacctmgr -i modify account lima set grptres=mem=1024
cap grp_mem "$S -A lima --mem=2048 --wrap 'sleep 60'"
settle
cap grp_mem_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify account lima set grptres=mem=-1
clear_jobs
q sacctmgr -i modify account lima set grptres=node=0
cap grp_node "$S -A lima --wrap 'sleep 60'"
settle
cap grp_node_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify account lima set grptres=node=-1
clear_jobs
q sacctmgr -i modify account lima set grpjobs=1
q "$S -A lima --wrap 'sleep 60'"; q "$S -A lima --wrap 'sleep 60'"
settle
cap grp_jobs_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify account lima set grpjobs=-1
clear_jobs
q sacctmgr -i modify user root where account=lima set maxjobs=1
q "$S -A lima --wrap 'sleep 60'"; q "$S -A lima --wrap 'sleep 60'"
settle
cap max_jobs_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify user root where account=lima set maxjobs=-1
clear_jobs
q sacctmgr -i modify user root where account=lima set maxsubmitjobs=1
cap max_submit_first "$S -H -A lima --wrap true"
cap max_submit_second "$S -H -A lima --wrap true"
q sacctmgr -i modify user root where account=lima set maxsubmitjobs=-1
clear_jobs
q sacctmgr -i modify account lima set grpsubmitjobs=1
cap grp_submit_first "$S -H -A lima --wrap true"
cap grp_submit_second "$S -H -A lima --wrap true"
q sacctmgr -i modify account lima set grpsubmitjobs=-1
clear_jobs
q sacctmgr -i modify user root where account=lima set maxwall=10
cap max_wall_over "$S -A lima -t 20 --wrap 'sleep 60'"
cap max_wall_default "$S -A lima --wrap 'sleep 60'"
settle
cap max_wall_squeue "squeue -h -o '%i %l %t %r'"
q sacctmgr -i modify user root where account=lima set maxwall=-1
clear_jobs
q sacctmgr -i modify user root where account=lima set maxtres=cpu=1
cap max_tres_per_job "$S -A lima -n 2 --wrap 'sleep 60'"
settle
cap max_tres_per_job_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify user root where account=lima set maxtres=cpu=-1
clear_jobs
q sacctmgr -i modify user root where account=lima set maxtres=node=0
cap max_node_per_job "$S -A lima --wrap 'sleep 60'"
settle
cap max_node_per_job_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify user root where account=lima set maxtres=node=-1
clear_jobs
q sacctmgr -i modify account lima set grptresmins=cpu=1
cap grp_tres_mins "$S -A lima -t 5 --wrap 'sleep 60'"
settle
cap grp_tres_mins_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify account lima set grptresmins=cpu=-1
clear_jobs
q sacctmgr -i modify account lima set grptresrunmins=cpu=5
cap grp_tres_run_mins "$S -A lima -t 10 --wrap 'sleep 60'"
settle
cap grp_tres_run_mins_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify account lima set grptresrunmins=cpu=-1
clear_jobs

# ---- QOS limits (limq, limd with DenyOnLimit)
q sacctmgr -i modify qos limq set maxjobsperuser=1
q "$S -A lima --qos=limq --wrap 'sleep 60'"; q "$S -A lima --qos=limq --wrap 'sleep 60'"
settle
cap qos_max_jobs_pu_squeue "squeue -h -o '%q %t %r'"
q sacctmgr -i modify qos limq set maxjobsperuser=-1
clear_jobs
q sacctmgr -i modify qos limq set maxsubmitjobsperuser=1
cap qos_max_submit_pu_first "$S -H -A lima --qos=limq --wrap true"
cap qos_max_submit_pu_second "$S -H -A lima --qos=limq --wrap true"
q sacctmgr -i modify qos limq set maxsubmitjobsperuser=-1
clear_jobs
q sacctmgr -i modify qos limq set maxtrespu=cpu=1
q "$S -A lima --qos=limq --wrap 'sleep 60'"; q "$S -A lima --qos=limq --wrap 'sleep 60'"
settle
cap qos_max_tres_pu_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify qos limq set maxtrespu=cpu=-1
clear_jobs
q sacctmgr -i modify qos limq set grptres=gres/gpu=1
q "$S -A lima --qos=limq --gpus=1 --wrap 'sleep 60'"; q "$S -A lima --qos=limq --gpus=1 --wrap 'sleep 60'"
settle
cap qos_grp_gres_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify qos limq set grptres=gres/gpu=-1
clear_jobs
q sacctmgr -i modify qos limq set maxtresperuser=gres/gpu=1
q "$S -A lima --qos=limq --gpus=1 --wrap 'sleep 60'"; q "$S -A lima --qos=limq --gpus=1 --wrap 'sleep 60'"
settle
cap qos_max_gres_pu_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify qos limq set maxtresperuser=gres/gpu=-1
clear_jobs
q sacctmgr -i modify qos limq set maxtresperjob=cpu=1
cap qos_max_tres_per_job "$S -A lima --qos=limq -n 2 --wrap 'sleep 60'"
settle
cap qos_max_tres_per_job_squeue "squeue -h -o '%t %r'"
q sacctmgr -i modify qos limq set maxtresperjob=cpu=-1
clear_jobs
q sacctmgr -i modify qos limd set maxtresperjob=cpu=1 maxwall=10
cap deny_max_tres_per_job "$S -A lima --qos=limd -n 2 --wrap true"
cap deny_max_wall "$S -A lima --qos=limd -t 20 --wrap true"
q sacctmgr -i modify qos limd set maxtresperjob=cpu=-1 maxwall=-1
q sacctmgr -i modify user root where account=lima set maxtres=cpu=1
cap deny_assoc_max_tres_per_job "$S -A lima --qos=limd -n 2 --wrap true"
q sacctmgr -i modify user root where account=lima set maxtres=cpu=-1
clear_jobs
q sacctmgr -i modify qos partq set maxtresperjob=cpu=1
cap part_qos_limit "$S -A lima -p pqos -n 2 --wrap 'sleep 60'"
settle
cap part_qos_squeue "squeue -h -o '%P %q %t %r'"
q sacctmgr -i modify qos partq set maxtresperjob=cpu=-1
clear_jobs

# ---- Resources and Priority
q "$S -A lima -n 2 --wrap 'sleep 60'"
q "$S -A lima -n 2 --wrap 'sleep 60'"
q "$S -A lima -n 2 --wrap 'sleep 60'"
settle
cap res_prio_squeue "squeue -h -o '%t %r'"
clear_jobs

# ---- clean up
q sacctmgr -i delete user nobody account=lima
q sacctmgr -i delete user root account=lima
q sacctmgr -i delete user root account=limb
q sacctmgr -i delete account lima
q sacctmgr -i delete account limb
q sacctmgr -i delete qos limq
q sacctmgr -i delete qos limd
q sacctmgr -i delete qos partq
$RS stop >/dev/null
$RS start >/dev/null && $RS stop >/dev/null   # leave the default configuration behind
