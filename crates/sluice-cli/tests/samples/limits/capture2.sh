#!/usr/bin/env bash
# Second round (partition access, EnforcePartLimits=ALL). Captures real Slurm 22.05's answers to accounting limits and partition policy into this
# directory (one file per command, format as ../sacctmgr/README.md). Run as root, inside
# `flock /tmp/real-slurm.lock`. Uses accounts lima/limb and QOS limq/limd/partq, removed
# at the end.
set -u
RS=/work/shared/tools/real-slurm
R=/tmp/real-slurm
OUT=$(cd "$(dirname "$0")" && pwd)
n=${FIRST:-58}
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

# ---- partition access: pending reasons (EnforcePartLimits=NO)
cap part_access_allowacct "$S -A lima -p allowacct --wrap true"
cap part_access_denyacct "$S -A lima -p denyacct --wrap true"
cap part_access_allowqos "$S -A lima --qos=limq -p allowqos --wrap true"
cap part_access_denyqos "$S -A lima --qos=limq -p denyqos --wrap true"
settle
cap part_access_squeue "squeue -h -o '%P %t %r'"
for p in allowacct denyacct allowqos denyqos allowgrp pdown pdrain pinactive minnodes excl pqos; do
  cap part_show_$p "scontrol show partition $p"
done
clear_jobs
$RS stop >/dev/null
echo EnforcePartLimits=ALL >>/tmp/lim-conf/slurm.conf
$RS start /tmp/lim-conf >/dev/null || exit 1
eval "$($RS env)"
cap enforce_allowacct "$S -A lima -p allowacct --wrap true"
cap enforce_denyacct "$S -A lima -p denyacct --wrap true"
cap enforce_allowqos "$S -A lima --qos=limq -p allowqos --wrap true"
cap enforce_denyqos "$S -A lima --qos=limq -p denyqos --wrap true"
cap enforce_minnodes "$S -A lima -p minnodes --wrap true"
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
