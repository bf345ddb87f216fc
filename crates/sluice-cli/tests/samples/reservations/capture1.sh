#!/bin/bash
# Capture real Slurm 22.05 reservation behaviour. Run under flock.
export RS_VNODES=4 RS_GPUS=4 RS_DBD=0
T=/work/shared/tools/real-slurm
O=/tmp/rescap/out; rm -rf $O; mkdir -p $O
$T start >$O/start.log 2>&1
eval "$($T env)"
n=0
cap() { # name, command
  local f=$O/$1.txt; shift
  { echo "\$ $*"; bash -c "$*" >$O/.o 2>$O/.e; rc=$?; cat $O/.o; if [ -s $O/.e ]; then echo '--- stderr'; cat $O/.e; fi; echo "--- exit $rc"; } >$f
}
sleep 2
cap sinfo_before "sinfo"
cap create_auto "scontrol create reservation starttime=now duration=60 nodes=n1 users=root"
cap create_named_maint "scontrol create reservation ReservationName=maint1 starttime=now+1hour duration=30 nodecnt=2 users=root flags=maint"
cap create_flex "scontrol create reservation ReservationName=flexr starttime=now+2hours duration=1:00:00 nodes=n4 accounts=root flags=flex,daily"
cap show_all "scontrol show reservation"
cap show_one "scontrol show reservation maint1"
cap show_none "scontrol show reservation nosuch"
cap show_res_plural "scontrol show reservations"
cap sinfo_resv "sinfo"
cap sinfo_N "sinfo -N -l"
cap sbatch_nosuch "sbatch --reservation=nosuch --wrap='sleep 1' -o /dev/null"
cap sbatch_in_auto "sbatch --reservation=root_1 -t 5 --wrap='sleep 300' -o /dev/null"
cap sbatch_in_flex "sbatch --reservation=flexr -t 5 --wrap='sleep 300' -o /dev/null"
cap sbatch_in_maint "sbatch --reservation=maint1 -t 5 --wrap='sleep 300' -o /dev/null"
cap sbatch_long_all "sbatch -N4 -t 3:00:00 --wrap='sleep 300' -o /dev/null"
cap sbatch_long_one "sbatch -N1 -t 3:00:00 --wrap='sleep 300' -o /dev/null"
sleep 6
cap squeue_reasons "squeue"
cap squeue_reasons_l "squeue -o '%i %r %R'"
cap show_job_resv "scontrol show job 1"
cap show_job_resv_flex "scontrol show job 2"
cap show_job_resv_maint "scontrol show job 3"
cap show_job_long_all "scontrol show job 4"
cap create_busy "scontrol create reservation starttime=now duration=60 nodes=n1 users=root"
cap create_busy_ignore "scontrol create reservation ReservationName=ign starttime=now duration=60 nodes=n1 users=root flags=ignore_jobs"
cap create_overlap "scontrol create reservation ReservationName=ovl starttime=now+1hour duration=10 nodes=n1,n2 users=root"
cap create_nouser "scontrol create reservation starttime=now duration=60 nodes=n3"
cap create_noduration "scontrol create reservation starttime=now nodes=n3 users=root"
cap create_nostart "scontrol create reservation duration=60 nodes=n3 users=root"
cap create_nonodes "scontrol create reservation starttime=now duration=60 users=root"
cap create_badnode "scontrol create reservation starttime=now duration=60 nodes=zz9 users=root"
cap create_badflag "scontrol create reservation starttime=now duration=60 nodes=n3 users=root flags=bogus"
cap create_badkey "scontrol create reservation starttime=now duration=60 nodes=n3 users=root bogus=1"
cap create_dup "scontrol create reservation ReservationName=maint1 starttime=now+5hours duration=60 nodes=n3 users=root"
cap create_baduser "scontrol create reservation starttime=now+5hours duration=60 nodes=n3 users=nosuchuser"
cap create_tres "scontrol create reservation ReservationName=gpur starttime=now+6hours duration=60 tres=gres/gpu:2 users=root,-daemon"
cap create_tres2 "scontrol create reservation ReservationName=gpur2 starttime=now+6hours duration=60 nodecnt=1 tres=gres/gpu=2 users=-daemon"
cap create_users_neg "scontrol create reservation ReservationName=negr starttime=now+8hours duration=60 nodes=n3 users=-daemon"
cap create_endtime "scontrol create reservation ReservationName=endr starttime=now+10hours endtime=now+11hours nodes=n3 users=root flags=weekly,purge_comp"
cap show_all2 "scontrol show reservation"
cap update_ok "scontrol update reservation ReservationName=maint1 duration=45"
cap update_users "scontrol update reservation ReservationName=maint1 users+=daemon"
cap update_nosuch "scontrol update reservation ReservationName=nosuch duration=45"
cap update_noname "scontrol update reservation duration=45"
cap show_after_update "scontrol show reservation maint1"
cap sbatch_nobody "su nobody -s /bin/sh -c \"sbatch --reservation=maint1 --wrap='sleep 1' -o /dev/null\""
cap scontrol_create_nobody "su nobody -s /bin/sh -c 'scontrol create reservation starttime=now+20hours duration=60 nodes=n3 users=root'"
cap delete_nobody "su nobody -s /bin/sh -c 'scontrol delete reservation maint1'"
cap delete_nosuch "scontrol delete reservation nosuch"
cap delete_inuse "scontrol delete reservation root_1"
cap delete_ok "scontrol delete reservation endr"
cap delete_ok2 "scontrol delete ReservationName=negr"
cap show_after_delete "scontrol show reservation"
cap sinfo_end "sinfo"
cap squeue_end "squeue -o '%i %T %r %v'"
$T stop >$O/stop.log 2>&1
