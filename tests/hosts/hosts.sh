#!/usr/bin/env bash
# A lab of hosts on one machine, made of Linux namespaces, for multi-host tests.
#
# Needs root, bash, util-linux (unshare, nsenter, setpriv, flock), iproute2, findutils,
# gawk or mawk. Programs run on the hosts are this machine's (/usr, /work... are seen as
# they are); what differs per host is listed below.
#
# Every host is a long-lived holder process (`sleep infinity` renamed
# sluice-hosts:ID:host:NAME) in namespaces of its own:
#   network  lo and eth0 (10.213.ID.N/24, N = its place in the list, a fixed MAC); no
#            default route: it reaches the other hosts and nothing beyond;
#   UTS      its hostname (and /etc/hostname);
#   mount    /tmp, /var/tmp, /dev/shm, /run: fresh tmpfs (lost when the host is killed);
#            /var/spool, /var/log: its own directories (kept across kill and start);
#            /home: the one shared home (--home DIR, else ID's home/); /etc/hosts: every
#            host by name (read-only); --bind SRC:DST: SRC of this machine on DST;
#   IPC      its own System V IPC.
# Processes are not in a PID namespace: pids are this machine's.
# The hosts' eth0 are veth pairs plugged into a bridge that lives in a network namespace
# of its own (the "switch", holder sluice-hosts:ID:switch): nothing of the lab is made in
# the machine's own network namespace, and no real interface is connected to it. `exec`
# enters a host's namespaces (nsenter) and then *is* the command (the same pid: signals
# reach it). The machine's own mounts, interfaces, routes and /etc/hosts are never
# touched, and nothing is entered or killed by a namespace that is the machine's.
#
# Several labs may run at once, one per instance ID (0-254; -i ID, $SLUICE_HOSTS_ID,
# default 0; `-i auto` with `up` takes the first free one): each has its own subnet
# 10.213.ID.0/24, its own switch and its own directory /run/sluice-hosts/ID. `up` on an
# instance in use refuses (exit 3); one whose owner (--owner) is gone is cleaned first.
# `down` tears down everything of an instance, leftovers of a crashed run included: its
# holders (found by their tags) with every process in their namespaces (recorded at
# start, and held open while killing so that no other namespace can take their
# numbers); `down --all` every instance. A failed `up` tears down what it had built.
# With --owner PID (what tests use), a watchdog tears the lab down when that process
# ends, however it ends. Left behind: only the empty lock file /run/lock/sluice-hosts.lock.
# Limit: processes of a host whose holder was killed by hand (not by `kill` or `down`)
# can no longer be told from others and are left alone.
#
# By hand, the seeds' lab (head01 + node[01-04]):
#   tests/hosts/hosts.sh up head01 'node[01-04]'
#   tests/hosts/hosts.sh status
#   tests/hosts/hosts.sh exec node01 getent hosts head01
#   tests/hosts/hosts.sh exec node02                 # a root shell on node02
#   tests/hosts/hosts.sh exec -u nobody -C /tmp node03 id
#   tests/hosts/hosts.sh link down node03; tests/hosts/hosts.sh link up node03
#   tests/hosts/hosts.sh kill node04; tests/hosts/hosts.sh start node04
#   tests/hosts/hosts.sh down
# or, torn down when the command ends, whatever happens:
#   tests/hosts/hosts.sh run head01 'node[01-04]' -- ./my-test.sh
# The scripts run inside namespaces are single-quoted on purpose:
# shellcheck disable=SC2016
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
RUN_ROOT=/run/sluice-hosts
LOCK_FILE=/run/lock/sluice-hosts.lock
[ -d /run/lock ] || LOCK_FILE=/run/sluice-hosts.lock
TAG=sluice-hosts
PREFIX=sluh # interface names (only ever inside the lab's own namespaces)
PRIVATE_TMPFS=(/tmp /var/tmp /dev/shm /run)
PRIVATE_DIRS=(spool:/var/spool log:/var/log)

usage() {
    cat <<'EOF'
usage: hosts.sh [-i ID|auto] COMMAND ...
  up [--home DIR] [--bind SRC:DST]... [--owner PID] N | NAME...
                      make the hosts (N: node01..nodeNN; NAME may be a range: node[01-04])
  down [--all]        tear down this instance (every instance); idempotent
  exec [-u USER|UID[:GID]] [-C DIR] HOST [--] [CMD [ARG]...]
                      run CMD on HOST (default: bash), as root or as USER, in / or DIR;
                      it keeps this process's pid; exit status CMD's, 125 if HOST is down
  link down|up HOST   cut or restore HOST's network link
  kill HOST           kill every process of HOST and cut its link (power off)
  start HOST          start a killed HOST again (fresh /tmp and /run, same spool)
  status              hosts, addresses, state, link
  pids HOST           processes running on HOST (its holder excepted)
  dir                 this instance's directory (home/ is the shared home)
  run [up options] NAME... -- CMD...
                      up, run CMD on this machine with SLUICE_HOSTS_ID set, then down
-i: the instance (default $SLUICE_HOSTS_ID, else 0); `-i auto up` takes a free one and
says which on its first line ("instance ID"). up exits 3 if the instance is in use.
EOF
}

die() {
    echo "hosts.sh: $*" >&2
    exit 1
}
say() { echo "hosts.sh: $*" >&2; }

# ---------------------------------------------------------------------------- helpers

instance_dir() { echo "$RUN_ROOT/$1"; }

lock() {
    mkdir -p "$(dirname "$LOCK_FILE")"
    exec 9>>"$LOCK_FILE"
    flock -w 300 9 || die "could not take $LOCK_FILE"
}
unlock() { exec 9>&-; }

# Field N of /proc/PID/stat (as proc(5) numbers them).
stat_field() {
    local s
    { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
    s="${s##*) }"
    local -a f
    read -ra f <<<"$s"
    echo "${f[$2 - 3]}"
}

# PID and start time of a process (a pid is reused, the pair is not), or nothing.
identity() {
    local t
    t="$(stat_field "$1" 22)" || return 0
    echo "$1 $t"
}

alive() { # "PID STARTTIME"
    local pid t
    read -r pid t <<<"$1"
    [ -n "$pid" ] && [ "$(identity "$pid")" = "$pid $t" ]
}

# Pids whose argv[0] matches the glob $1 (holders and watchdogs are renamed so).
tagged_pids() {
    local p a
    for p in /proc/[0-9]*; do
        a=""
        { IFS= read -r -d '' a <"$p/cmdline"; } 2>/dev/null || true
        # shellcheck disable=SC2053
        [[ -n "$a" && "$a" == $1 ]] && echo "${p#/proc/}"
    done
    return 0
}

# Namespaces of kinds $2.. of process $1, as recorded: "net:[N] uts:[N] ...".
namespaces_of() {
    local pid="$1" out="" k l
    shift
    for k in "$@"; do
        l="$(readlink "/proc/$pid/ns/$k")" || return 1
        out+="$l "
    done
    echo "${out% }"
}

# True if one of the namespaces in $1 is this machine's own (pid 1's or this script's).
# Nothing is ever entered or killed by such a record.
machine_namespace() {
    local l k
    for l in $1; do
        k="${l%%:*}"
        case "$k" in net | uts | mnt | ipc) ;; *) return 0 ;; esac
        # (pid 1's may be unreadable, in a sandbox: then this script's are the machine's.)
        [ "$l" = "$(readlink "/proc/1/ns/$k" 2>/dev/null)" ] && return 0
        [ "$l" = "$(readlink "/proc/$$/ns/$k")" ] && return 0
    done
    return 1
}

# Pids in the namespaces in $1, a holder's record (only the namespaces it made): in at
# least two of them when it made several (so that a process that made a namespace of one
# kind of its own still counts), else in that one.
pids_in() {
    [ -n "$1" ] || return 0
    if machine_namespace "$1"; then
        say "refusing to look for processes in this machine's namespaces ($1)"
        return 1
    fi
    find /proc/[0-9]*/ns -maxdepth 1 \( -name net -o -name uts -o -name mnt -o -name ipc \) \
        -printf '%h %l\n' 2>/dev/null |
        awk -v want="$1" '
            BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) W[w[i]] = 1; need = n < 2 ? n : 2 }
            ($2 in W) { c[$1]++ }
            END { for (p in c) if (c[p] >= need) { split(p, a, "/"); print a[3] } }'
}

# SIGKILL the pids printed by "$@" until none is left (up to 10 s). Never pid 1, this
# script or its parent.
kill_until_gone() {
    local pids i
    for i in $(seq 100); do
        pids="$("$@" | grep -vxE "1|$$|$PPID" || true)"
        [ -z "$pids" ] && return 0
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
        sleep 0.1
    done
    say "processes would not die: $pids"
    return 1
}

valid_id() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -le 254 ]; }

# Expands node[01-04], node[1,3-5] and N (node01..nodeNN).
expand_names() {
    local w pre body suf part a b n width
    if [ $# -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
        [ "$1" -ge 1 ] || die "no hosts"
        width=2
        [ ${#1} -gt 2 ] && width=${#1}
        for ((n = 1; n <= $1; n++)); do printf 'node%0*d\n' "$width" "$n"; done
        return
    fi
    for w in "$@"; do
        if [[ "$w" =~ ^([^][]*)\[([0-9,-]+)\]([^][]*)$ ]]; then
            pre="${BASH_REMATCH[1]}" body="${BASH_REMATCH[2]}" suf="${BASH_REMATCH[3]}"
            IFS=, read -ra parts <<<"$body"
            for part in "${parts[@]}"; do
                if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
                    a="${BASH_REMATCH[1]}" b="${BASH_REMATCH[2]}"
                    width=${#a}
                    for ((n = 10#$a; n <= 10#$b; n++)); do
                        printf '%s%0*d%s\n' "$pre" "$width" "$n" "$suf"
                    done
                elif [[ "$part" =~ ^[0-9]+$ ]]; then
                    echo "$pre$part$suf"
                else
                    die "bad host range: $w"
                fi
            done
        else
            echo "$w"
        fi
    done
}

# The instance's configuration (written by up): NAMES, HOME_SRC, BINDS, OWNER.
load() {
    DIR="$(instance_dir "$ID")"
    [ -f "$DIR/config" ] || die "instance $ID is not up (no $DIR/config)"
    # shellcheck disable=SC1091
    . "$DIR/config"
}

index_of() {
    local i
    for i in "${!NAMES[@]}"; do
        [ "${NAMES[$i]}" = "$1" ] && {
            echo $((i + 1))
            return
        }
    done
    die "no host $1 in instance $ID (hosts: ${NAMES[*]})"
}

address_of() { echo "10.213.$ID.$1"; }

# The holder recorded in directory $1 if it still runs: the same tag and the namespaces
# recorded when it started (a pid reused by another process is never entered).
holder_at() {
    local d="$1" pid ns tag a=""
    { read -r pid <"$d/pid" && read -r ns <"$d/ns" && read -r tag <"$d/tag"; } 2>/dev/null || return 1
    [ -n "$pid" ] && [ -n "$ns" ] || return 1
    machine_namespace "$ns" && return 1
    { IFS= read -r -d '' a <"/proc/$pid/cmdline"; } 2>/dev/null || true
    [ "$a" = "$tag" ] || return 1
    # shellcheck disable=SC2046
    [ "$(namespaces_of "$pid" $(for l in $ns; do echo "${l%%:*}"; done) 2>/dev/null)" = "$ns" ] || return 1
    echo "$pid"
}

# The holder of host $1; fails if it does not run.
holder() { holder_at "$DIR/node/$1"; }

# The switch's holder; fails if it does not run.
switch_holder() { holder_at "$DIR/switch"; }

# Kills the holder recorded in directory $1 and every process in its namespaces. Only
# while the holder runs can they be told apart from others: its namespaces are then held
# open here until the end, so that no new namespace takes their numbers meanwhile. A
# holder already gone leaves nothing that could be safely identified (the lab's holders
# die only here).
kill_holder_at() {
    local d="$1" pid ns l fd rc=0
    local -a fds=()
    pid="$(holder_at "$d")" || return 0
    read -r ns <"$d/ns"
    for l in $ns; do
        exec {fd}<"/proc/$pid/ns/${l%%:*}" || { rc=1; break; }
        fds+=("$fd")
        [ "$(readlink "/proc/$$/fd/$fd")" = "$l" ] || { rc=1; break; }
    done
    if [ $rc = 0 ]; then
        kill_until_gone pids_in "$ns" || rc=1
    else
        say "the holder in $d changed under us; nothing killed"
    fi
    for fd in "${fds[@]}"; do exec {fd}<&-; done
    return $rc
}

in_switch() {
    local sw
    sw="$(switch_holder)" || die "the switch of instance $ID is gone"
    nsenter -F -t "$sw" -n -- "$@"
}

# Starts a holder process tagged $1 in new namespaces of the kinds $3 ("net uts ...";
# the rest are unshare's flags), waits until it runs in them, records its pid and
# namespaces in directory $2.
start_holder() {
    local tag="$1" d="$2" kinds="$3" pid i k
    shift 3
    mkdir -p "$d"
    rm -f "$d/pid" "$d/ns" "$d/tag"
    # setsid: its own session, untouched by the caller's terminal; neither fd 9 (the lock)
    # nor the caller's output pipes are inherited.
    setsid unshare "$@" -- bash -c 'exec -a "$0" sleep infinity' "$tag" \
        </dev/null >/dev/null 2>&1 9>&- &
    disown $!
    for i in $(seq 200); do
        pid="$(tagged_pids "$tag" | head -1)"
        # Tagged means unshare has made the namespaces and exec'd; check anyway that they
        # are not this machine's before anything enters them.
        if [ -n "$pid" ] && [ -e "/proc/$pid/ns/net" ]; then
            for k in $kinds; do
                [ "$(readlink "/proc/$pid/ns/$k")" != "$(readlink "/proc/$$/ns/$k")" ] ||
                    die "holder $tag shares its $k namespace with this machine"
            done
            echo "$tag" >"$d/tag"
            # shellcheck disable=SC2086
            namespaces_of "$pid" $kinds >"$d/ns"
            echo "$pid" >"$d/pid"
            return 0
        fi
        sleep 0.05
    done
    die "holder $tag did not start"
}

start_switch() {
    local d="$DIR/switch" pid
    start_holder "$TAG:$ID:switch" "$d" net --net
    pid="$(switch_holder)"
    nsenter -F -t "$pid" -n -- bash -c '
        set -e
        [ "$(readlink /proc/self/ns/net)" = "$2" ] || { echo "not in the switch" >&2; exit 99; }
        ip link add "$1" type bridge
        [ ! -d /proc/sys/net/ipv6 ] || echo 1 >"/proc/sys/net/ipv6/conf/$1/disable_ipv6"
        ip link set "$1" up' _ "${PREFIX}${ID}br" "$(cat "$d/ns")"
}

# Brings up host number $1 (1-based) named $2: holder, mounts, link.
start_host() {
    local i="$1" name="$2" d="$DIR/node/$2" pid sw port="${PREFIX}${ID}p$1" b
    mkdir -p "$d/spool" "$d/log"
    echo "$name" >"$d/hostname"
    start_holder "$TAG:$ID:host:$name" "$d" "net uts mnt ipc" \
        --net --uts --mount --ipc --propagation private
    pid="$(holder "$name")"
    local mnt
    mnt="$(readlink "/proc/$pid/ns/mnt")"
    local -a binds=("$HOME_SRC:/home")
    for b in "${PRIVATE_DIRS[@]}"; do binds+=("$d/${b%%:*}:${b#*:}"); done
    binds+=("${BINDS[@]}")
    # Mounts, inside the host's mount namespace only (checked again there).
    nsenter -F -t "$pid" -m -u -- bash -c '
        set -euo pipefail
        [ "$(readlink /proc/self/ns/mnt)" = "$1" ] || { echo "not in the host mount namespace" >&2; exit 99; }
        name="$2" hosts="$3" hostname="$4"; shift 4
        echo "$name" >/proc/sys/kernel/hostname
        mount --bind "$hosts" /etc/hosts
        mount -o remount,bind,ro /etc/hosts
        if [ -e /etc/hostname ]; then
            mount --bind "$hostname" /etc/hostname
            mount -o remount,bind,ro /etc/hostname
        fi
        while [ "$1" != "--" ]; do
            [ -d "${1#*:}" ] || { echo "no directory ${1#*:} to mount ${1%%:*} on" >&2; exit 1; }
            mount --bind "${1%%:*}" "${1#*:}"
            shift
        done
        shift
        for t in "$@"; do
            mode=1777
            [ "$t" = /run ] && mode=0755
            mount -t tmpfs -o "mode=$mode,nosuid,nodev" tmpfs "$t"
        done
        mkdir -m 1777 /run/lock
        ' _ "$mnt" "$name" "$DIR/etc-hosts" "$d/hostname" "${binds[@]}" -- "${PRIVATE_TMPFS[@]}"
    # The link: a veth pair made in the switch, its far end created directly inside the
    # host as eth0, with a MAC address of its own that a restart keeps (as a real card
    # does: the other hosts' ARP caches stay right).
    sw="$(switch_holder)" || die "the switch of instance $ID is gone"
    nsenter -F -t "$sw" -n -- bash -c '
        set -e
        [ "$(readlink /proc/self/ns/net)" = "$5" ] || { echo "not in the switch" >&2; exit 99; }
        ip link add "$1" type veth peer name eth0 address "$4" netns "$2"
        [ ! -d /proc/sys/net/ipv6 ] || echo 1 >"/proc/sys/net/ipv6/conf/$1/disable_ipv6"
        ip link set "$1" master "$3"
        ip link set "$1" up' _ "$port" "$pid" "${PREFIX}${ID}br" \
        "$(printf '02:73:6c:00:%02x:%02x' "$ID" "$i")" "$(cat "$DIR/switch/ns")"
    nsenter -F -t "$pid" -n -- bash -c '
        set -e
        [ "$(readlink /proc/self/ns/net)" = "$2" ] || { echo "not in the host" >&2; exit 99; }
        ip link set lo up
        [ ! -d /proc/sys/net/ipv6 ] || echo 1 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6
        ip addr add "$1/24" dev eth0
        ip link set eth0 up' _ "$(address_of "$i")" "$(readlink "/proc/$pid/ns/net")"
}

# Kills every process of host $1 (holder included) and removes its link.
kill_host() {
    local name="$1" d="$DIR/node/$1" i
    i="$(index_of "$name")"
    if switch_holder >/dev/null; then
        in_switch ip link del "${PREFIX}${ID}p$i" 2>/dev/null || true
    fi
    kill_holder_at "$d" || return 1
    # A holder whose start never got as far as being recorded.
    kill_until_gone tagged_pids "$TAG:$ID:host:$name" || return 1
    rm -f "$d/pid"
    return 0
}

write_hosts_file() {
    local i
    {
        echo "# Generated by hosts.sh for instance $ID"
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        for i in "${!NAMES[@]}"; do
            echo "$(address_of $((i + 1))) ${NAMES[$i]}"
        done
    } >"$DIR/etc-hosts"
}

# The instance's configuration, read back by load (plain assignments: global when
# sourced inside a function).
write_config() {
    {
        printf 'NAMES=('
        printf '%q ' "${NAMES[@]}"
        printf ')\nBINDS=('
        [ ${#BINDS[@]} = 0 ] || printf '%q ' "${BINDS[@]}"
        printf ')\nHOME_SRC=%q\nOWNER=%q\n' "$HOME_SRC" "$OWNER"
    } >"$DIR/config.tmp"
    mv "$DIR/config.tmp" "$DIR/config"
}

owner_alive() {
    [ -n "${OWNER:-}" ] && alive "$OWNER"
}

# Tears down instance $1 (lock held). Leaves nothing: processes, namespaces, interfaces,
# mounts, directory.
teardown() {
    local id="$1" d ok=0 n
    d="$(instance_dir "$id")"
    # Watchdogs (other than this very process, when a watchdog tears down) with their
    # children: they are process-group leaders.
    for n in $(tagged_pids "$TAG:$id:watch"); do
        [ "$n" = "$$" ] && continue
        kill -KILL -- "-$n" 2>/dev/null || kill -KILL "$n" 2>/dev/null || true
    done
    # Every host with its processes, then the switch; then holders whose start never got
    # as far as being recorded, by their tag.
    for n in "$d"/node/* "$d"/switch; do
        [ -d "$n" ] || continue
        kill_holder_at "$n" || ok=1
    done
    kill_until_gone tagged_pids "$TAG:$id:*" || ok=1
    # Interfaces live in the lab's namespaces and went with them; one that ever leaked
    # into this machine's namespace is removed by its name.
    for n in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
        grep -E "^${PREFIX}${id}(br|p[0-9]+)$" || true); do
        ip link del "$n" 2>/dev/null || true
    done
    # No mount of this machine's is under the directory (the lab mounts only inside its
    # own mount namespaces); were there one, it is unmounted rather than removed through.
    if [ -d "$d" ]; then
        while read -r n; do
            umount -l "$n" 2>/dev/null || ok=1
        done < <(awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
        rm -rf --one-file-system "$d" || ok=1
    fi
    rmdir "$RUN_ROOT" 2>/dev/null || true
    return $ok
}

# ---------------------------------------------------------------------------- commands

up_failed() {
    local status=$?
    say "up failed; tearing down instance $ID"
    teardown "$ID" || true
    exit $status
}

cmd_up() {
    local home="" owner="" names=() binds=() id_auto=0 i
    while [ $# -gt 0 ]; do
        case "$1" in
        --home) home="$(realpath -e "$2")" || die "no home directory $2"; shift 2 ;;
        --home=*) home="$(realpath -e "${1#*=}")" || die "no home directory ${1#*=}"; shift ;;
        --bind)
            [[ "$2" == /*:/* ]] || die "--bind wants SRC:DST, absolute paths: $2"
            [ -e "${2%%:*}" ] || die "no ${2%%:*} to bind"
            binds+=("$2")
            shift 2
            ;;
        --owner)
            owner="$(identity "$2")"
            [ -n "$owner" ] || die "no process $2 to own the hosts"
            shift 2
            ;;
        --) shift; break ;;
        -*) die "unknown option of up: $1" ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || die "up: which hosts? (N or names)"
    mapfile -t names < <(expand_names "$@")
    [ ${#names[@]} -le 250 ] || die "at most 250 hosts"
    local seen=" "
    for i in "${names[@]}"; do
        [[ "$i" =~ ^[a-z][a-z0-9-]{0,62}$ ]] || die "bad host name: $i (lower-case letters, digits, '-')"
        [[ "$seen" == *" $i "* ]] && die "host $i named twice"
        seen+="$i "
    done

    lock
    mkdir -p "$RUN_ROOT"
    chmod 0700 "$RUN_ROOT"
    local first=$ID last=$ID
    if [ "$ID" = auto ]; then id_auto=1 first=0 last=254; fi
    local claimed=""
    for ((i = first; i <= last; i++)); do
        DIR="$(instance_dir "$i")"
        if [ -d "$DIR" ]; then
            OWNER="" NAMES=()
            # shellcheck disable=SC1091
            [ -f "$DIR/config" ] && . "$DIR/config"
            if [ -n "$OWNER" ] && ! alive "$OWNER"; then
                say "instance $i: its owner (pid ${OWNER%% *}) is gone; cleaning up what it left"
                teardown "$i" || die "could not clean instance $i"
                # (Its teardown removes the directory of instances when it was the last.)
                mkdir -p "$RUN_ROOT"
                chmod 0700 "$RUN_ROOT"
            else
                [ $id_auto = 1 ] && continue
                echo "hosts.sh: instance $i is in use (hosts: ${NAMES[*]:-?}${OWNER:+, owner pid ${OWNER%% *}})." >&2
                echo "hosts.sh: tear it down with: hosts.sh -i $i down; or choose another with -i ID (or -i auto)" >&2
                exit 3
            fi
        fi
        mkdir "$DIR"
        claimed=$i
        break
    done
    [ -n "$claimed" ] || die "no free instance"
    ID=$claimed
    echo "instance $ID"
    # From here on, a failure tears down what was built.
    trap up_failed EXIT
    [ -n "$home" ] || {
        home="$DIR/home"
        mkdir -p "$home"
        chmod 0755 "$home"
    }
    NAMES=("${names[@]}")
    HOME_SRC="$home"
    BINDS=("${binds[@]}")
    OWNER="$owner"
    write_config
    write_hosts_file
    start_switch
    for i in "${!NAMES[@]}"; do
        start_host $((i + 1)) "${NAMES[$i]}"
    done
    if [ -n "$OWNER" ]; then
        setsid bash -c 'exec -a "$0" bash "$1" -i "$2" _watch' "$TAG:$ID:watch" "$SELF" "$ID" \
            </dev/null >/dev/null 2>&1 9>&- &
        disown $!
    fi
    trap - EXIT
    unlock
    for i in "${!NAMES[@]}"; do
        echo "${NAMES[$i]} $(address_of $((i + 1)))"
    done
}

cmd_watch() {
    load
    while owner_alive; do sleep 1; done
    lock
    teardown "$ID"
}

cmd_down() {
    local all=0 i ok=0
    [ "${1:-}" = "--all" ] && all=1
    lock
    if [ $all = 1 ]; then
        for i in "$RUN_ROOT"/*; do
            [ -d "$i" ] || continue
            valid_id "$(basename "$i")" || continue
            teardown "$(basename "$i")" || ok=1
        done
        kill_until_gone tagged_pids "$TAG:*" || ok=1
        for i in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
            grep -E "^${PREFIX}[0-9]+(br|p[0-9]+)$" || true); do
            ip link del "$i" 2>/dev/null || true
        done
    else
        valid_id "$ID" || die "down: bad instance $ID"
        teardown "$ID" || ok=1
    fi
    [ $ok = 0 ] || die "something could not be torn down (see above)"
}

cmd_exec() {
    local user="" cwd="/"
    while [ $# -gt 0 ]; do
        case "$1" in
        -u) user="$2"; shift 2 ;;
        -C) cwd="$2"; shift 2 ;;
        --) shift; break ;;
        -*) die "unknown option of exec: $1" ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || die "exec: on which host?"
    local host="$1"
    shift
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || set -- bash
    load
    index_of "$host" >/dev/null
    local pid
    pid="$(holder "$host")" || {
        echo "hosts.sh: host $host is not running (killed?)" >&2
        exit 125
    }
    local -a ids=() env=(HOSTNAME="$host")
    if [ -n "$user" ]; then
        local uid gid name home entry
        uid="${user%%:*}"
        gid=""
        [[ "$user" == *:* ]] && gid="${user#*:}"
        if entry="$(getent passwd "$uid")"; then
            IFS=: read -r name _ uid g _ home _ <<<"$entry"
            [ -n "$gid" ] || gid="$g"
            ids=(setpriv --reuid="$uid" --regid="$gid" --init-groups --)
            env+=(HOME="$home" USER="$name" LOGNAME="$name")
        else
            [[ "$uid" =~ ^[0-9]+$ ]] || die "no user $uid"
            [ -n "$gid" ] || gid="$uid"
            ids=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --)
            env+=(HOME=/ USER="$uid" LOGNAME="$uid")
        fi
    fi
    exec nsenter -F -t "$pid" -n -u -m -i --wdns="$cwd" -- "${ids[@]}" env "${env[@]}" "$@"
}

cmd_link() {
    local how="${1:-}" host="${2:-}" i
    if [[ "$how" != up && "$how" != down ]] || [ -z "$host" ]; then
        die "usage: link down|up HOST"
    fi
    load
    i="$(index_of "$host")"
    holder "$host" >/dev/null || die "host $host is not running"
    in_switch ip link set "${PREFIX}${ID}p$i" "$how"
}

cmd_kill() {
    [ $# -eq 1 ] || die "usage: kill HOST"
    load
    lock
    kill_host "$1"
}

start_failed() {
    local status=$?
    say "start failed; killing $STARTING again"
    kill_host "$STARTING" || true
    exit $status
}

cmd_start() {
    [ $# -eq 1 ] || die "usage: start HOST"
    load
    lock
    local i
    i="$(index_of "$1")"
    ! holder "$1" >/dev/null || die "host $1 is running"
    kill_host "$1" # leftovers of a crashed start, if any
    STARTING="$1"
    trap start_failed EXIT
    start_host "$i" "$1"
    trap - EXIT
}

cmd_status() {
    load
    local i name state link pid
    echo "instance $ID: 10.213.$ID.0/24, home $HOME_SRC${OWNER:+, owner pid ${OWNER%% *}}"
    for i in "${!NAMES[@]}"; do
        name="${NAMES[$i]}"
        if pid="$(holder "$name")"; then
            state="up pid $pid"
            link="$(in_switch ip -o link show "${PREFIX}${ID}p$((i + 1))" 2>/dev/null |
                grep -q '[<,]UP[,>]' && echo up || echo down)"
        else
            state="killed" link="-"
        fi
        echo "$name $(address_of $((i + 1))) $state link $link"
    done
}

cmd_pids() {
    [ $# -eq 1 ] || die "usage: pids HOST"
    load
    index_of "$1" >/dev/null
    local d="$DIR/node/$1" pid
    pid="$(holder_at "$d")" || return 0
    pids_in "$(cat "$d/ns")" | grep -vx "$pid" | sort -n || true
}

cmd_run() {
    local -a up_args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        up_args+=("$1")
        shift
    done
    if [ "${1:-}" != "--" ] || [ $# -lt 2 ]; then
        die "usage: run [up options] NAME... -- CMD..."
    fi
    shift
    local out
    out="$(cmd_up --owner $$ "${up_args[@]}")" || exit $?
    echo "$out"
    ID="$(echo "$out" | awk 'NR == 1 { print $2 }')"
    trap 'status=$?; lock; teardown "$ID" || status=1; exit $status' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    SLUICE_HOSTS_ID="$ID" "$@"
}

# ---------------------------------------------------------------------------- main

ID="${SLUICE_HOSTS_ID:-0}"
if [ "${1:-}" = "-i" ]; then
    [ $# -ge 2 ] || die "-i wants an instance id"
    ID="$2"
    shift 2
fi
cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
"" | help | -h | --help) usage; exit 0 ;;
esac
[ "$(id -u)" = 0 ] || die "needs root (it makes network, UTS, mount and IPC namespaces)"
if [ "$ID" = auto ]; then
    [ "$cmd" = up ] || [ "$cmd" = run ] || die "-i auto is for up and run"
else
    valid_id "$ID" || die "bad instance id $ID (0-254)"
fi
case "$cmd" in
up) cmd_up "$@" ;;
_watch) cmd_watch ;;
down) cmd_down "$@" ;;
exec) cmd_exec "$@" ;;
link) cmd_link "$@" ;;
kill) cmd_kill "$@" ;;
start) cmd_start "$@" ;;
status) cmd_status ;;
pids) cmd_pids "$@" ;;
dir) instance_dir "$ID" ;;
run) cmd_run "$@" ;;
*) usage >&2; exit 2 ;;
esac
