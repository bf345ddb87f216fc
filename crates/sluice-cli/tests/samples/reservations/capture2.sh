#!/bin/bash
export RS_VNODES=4 RS_GPUS=4 RS_DBD=1
T=/work/shared/tools/real-slurm
O=/tmp/rescap/out2; rm -rf $O; mkdir -p $O
$T start >$O/start.log 2>&1
eval "$($T env)"
cap() { local f=$O/$1.txt; shift
  { echo "\$ $*"; bash -c "$*" >$O/.o 2>$O/.e; rc=$?; cat $O/.o; if [ -s $O/.e ]; then echo '--- stderr'; cat $O/.e; fi; echo "--- exit $rc"; } >$f; }
sleep 2
for r in $(scontrol show res | sed -n 's/^ReservationName=\([^ ]*\).*/\1/p'); do scontrol delete reservation $r; done
scancel -u root; sleep 1
cap show_empty "scontrol show reservation"
cap sbatch_busy "sbatch -w n3 -t 10 --wrap='sleep 600' -o /dev/null"
sleep 3
cap create_busy_jobs "scontrol create reservation ReservationName=busy starttime=now duration=60 nodes=n3 users=root"
cap create_busy_jobs_ignore "scontrol create reservation ReservationName=ign starttime=now duration=60 nodes=n3 users=root flags=ignore_jobs"
cap create_nodecnt_busy "scontrol create reservation ReservationName=nc starttime=now duration=60 nodecnt=4 users=root"
cap create_maint_now "scontrol create reservation ReservationName=mnow starttime=now duration=120 nodes=n1 users=root flags=maint"
cap create_allflags "scontrol create reservation ReservationName=allf starttime=now+3hours duration=60 nodes=n2 users=root,daemon flags=maint,flex,ignore_jobs,weekly,purge_comp partition=debug"
cap create_tres_gpu "scontrol create reservation ReservationName=gpur starttime=now+6hours duration=60 tres=gres/gpu=2 users=root"
cap create_tres_gpu_nodes "scontrol create reservation ReservationName=gpun starttime=now+7hours duration=60 nodes=n4 tres=gres/gpu=2 users=root"
cap create_tres_gpu_cnt "scontrol create reservation ReservationName=gpuc starttime=now+8hours duration=60 nodecnt=1 tres=gres/gpu=2 users=root"
cap create_accounts_neg "scontrol create reservation ReservationName=acn starttime=now+9hours duration=60 nodes=n4 accounts=-root"
cap create_badtime "scontrol create reservation starttime=junk duration=60 nodes=n4 users=root"
cap create_past "scontrol create reservation starttime=2020-01-01T00:00:00 duration=60 nodes=n4 users=root"
cap show_all "scontrol show reservation"
cap sinfo_maint "sinfo"
cap sinfo_N_maint "sinfo -N"
cap show_node_maint "scontrol show node n1"
cap show_node_ign "scontrol show node n3"
J1=$(sbatch --parsable -N1 -w n1 -t 10 --wrap='sleep 60' -o /dev/null)
J2=$(sbatch --parsable --reservation=mnow -t 10 --wrap='sleep 60' -o /dev/null)
J3=$(sbatch --parsable --reservation=allf -t 10 --wrap='sleep 60' -o /dev/null)
J4=$(sbatch --parsable -N4 -t 5:00:00 --wrap='sleep 60' -o /dev/null)
sleep 5
cap squeue "squeue -o '%i %T %r %v'"
cap show_job_blocked_maint "scontrol show job $J1"
cap show_job_in_maint "scontrol show job $J2"
cap show_job_in_flex "scontrol show job $J3"
cap show_job_N4 "scontrol show job $J4"
cap sinfo_after "sinfo"
cap update_nobody "su nobody -s /bin/sh -c 'scontrol update reservation ReservationName=mnow duration=45'"
cap update_badkey "scontrol update reservation ReservationName=mnow bogus=1"
cap update_flags "scontrol update reservation ReservationName=allf flags=daily"
cap update_nodes_busy "scontrol update reservation ReservationName=allf nodes=n3"
cap show_allf "scontrol show reservation allf"
cap show_res_short "scontrol show res allf"
cap show_oneliner "scontrol -o show reservation allf"
scancel -u root
for r in $(scontrol show res | sed -n 's/^ReservationName=\([^ ]*\).*/\1/p'); do scontrol delete reservation $r; done
$T stop >$O/stop.log 2>&1
