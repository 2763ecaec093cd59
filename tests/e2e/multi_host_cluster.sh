# Sourced by multi_host_test.sh: a Slurm cluster of N test hosts on this one machine. Each host
# is a network namespace (own address on a private bridge, own hostname through a UTS namespace,
# own mount namespace whose /tmp and /dev/shm are the host's own scratch, own /etc/hosts) running
# its own slurmd; a head namespace holds the bridge, slurmctld and the Slurm client commands; one
# munged (own socket) serves all. The work directory is the cluster's shared storage. Open MPI
# ranks on different hosts talk TCP over the bridge: for MPI and PMIx they are different nodes.
#
#   cluster_start <dir> <hosts> | cluster_stop | on_head <command...> | host_ns <k>
#   cluster_binds[k]="src:dst ..." before cluster_start: files host k sees instead of its own
#   cluster_cut_link <k> | cluster_kill_ranks <k> | cluster_kill_slurmd <k> | cluster_slow_link <k>
#
# Names carry this shell's PID so parallel runs never meet; leftovers of a killed run (whose PID
# is gone) are removed at the next start. Nothing lives in the machine's own network namespace.

cluster_prefix() { echo "stmh$1"; }
declare -A cluster_binds=()
cluster_subnet=10.213.0

# Everything of a run whose owner is gone (or of $1): the processes in its namespaces (slurmd,
# step daemons, ranks; munged and slurmctld live in the head namespace), the namespaces.
cluster_sweep() {
  local ns owner
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^stmh[0-9]*-'); do
    owner=${ns#stmh}
    owner=${owner%%-*}
    if [ "$owner" = "${1:-}" ] || ! kill -0 "$owner" 2>/dev/null; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    fi
  done
}

# cluster_start <dir> <hosts>: hosts st-n1..st-nN at 10.213.0.11.., controller st-head at .1.
cluster_start() {
  cluster_dir=$1
  cluster_hosts=$2
  cluster_owner=$$
  local prefix k
  prefix=$(cluster_prefix "$cluster_owner")
  cluster_sweep
  ip netns add "$prefix-head" || { echo "SKIP: cannot create network namespaces (ip netns add)"; exit 77; }
  cluster_head_ns=$prefix-head
  mkdir -p "$cluster_dir/ctl/state" "$cluster_dir/munge"
  {
    echo "127.0.0.1 localhost"
    echo "$cluster_subnet.1 st-head"
    for k in $(seq "$cluster_hosts"); do echo "$cluster_subnet.$((10 + k)) st-n$k"; done
  } >"$cluster_dir/hosts"
  ip -n "$cluster_head_ns" link set lo up
  ip -n "$cluster_head_ns" link add br0 type bridge
  ip -n "$cluster_head_ns" addr add "$cluster_subnet.1/24" dev br0
  ip -n "$cluster_head_ns" link set br0 up
  for k in $(seq "$cluster_hosts"); do
    ip netns add "$prefix-n$k" || fail "ip netns add $prefix-n$k failed"
    ip -n "$cluster_head_ns" link add "v$k" type veth peer name eth0 netns "$prefix-n$k" ||
      fail "no veth pair for host $k"
    ip -n "$cluster_head_ns" link set "v$k" master br0
    ip -n "$cluster_head_ns" link set "v$k" up
    ip -n "$prefix-n$k" link set lo up
    ip -n "$prefix-n$k" addr add "$cluster_subnet.$((10 + k))/24" dev eth0
    ip -n "$prefix-n$k" link set eth0 up
    mkdir -p "$cluster_dir/n$k/tmp" "$cluster_dir/n$k/orig-tmp"
  done
  cluster_write_conf
  export SLURM_CONF=$cluster_dir/slurm.conf
  mungekey --create --keyfile="$cluster_dir/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$cluster_dir/munge/munge.key" bs=1k count=1 2>/dev/null
  chmod 700 "$cluster_dir/munge"
  chmod 600 "$cluster_dir/munge/munge.key"
  # In the head namespace (a unix socket needs no network) so that a sweep ends it too.
  on_head munged --force --socket="$cluster_dir/munge/socket" --key-file="$cluster_dir/munge/munge.key" \
    --pid-file="$cluster_dir/munge/pid" --log-file="$cluster_dir/munge/log" \
    --seed-file="$cluster_dir/munge/seed" || fail "munged did not start: $(tail -3 "$cluster_dir/munge/log")"
  on_host_root head slurmctld || fail "slurmctld did not start: $(tail -5 "$cluster_dir/ctl/slurmctld.log")"
  for k in $(seq "$cluster_hosts"); do
    on_host_root "$k" slurmd || fail "slurmd of st-n$k did not start: $(tail -5 "$cluster_dir/n$k/tmp/slurmd.log")"
  done
  for _ in $(seq 120); do
    [ "$(on_head sinfo -h -N -o %t 2>/dev/null | grep -c idle)" = "$cluster_hosts" ] && return 0
    sleep 0.5
  done
  fail "the $cluster_hosts hosts never became idle: $(on_head sinfo -N 2>&1) $(tail -5 "$cluster_dir"/n*/tmp/slurmd.log)"
}

cluster_write_conf() {
  local nodes="st-n[1-$cluster_hosts]"
  [ "$cluster_hosts" = 1 ] && nodes=st-n1
  cat >"$cluster_dir/slurm.conf" <<CONF
ClusterName=shardtune-mh
SlurmctldHost=st-head($cluster_subnet.1)
SlurmUser=root
SlurmctldPort=26817
SlurmdPort=26818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster_dir/munge/socket,cred_expire=10
StateSaveLocation=$cluster_dir/ctl/state
SlurmctldPidFile=$cluster_dir/ctl/slurmctld.pid
SlurmctldLogFile=$cluster_dir/ctl/slurmctld.log
# node-local: every host's /tmp is its own
SlurmdSpoolDir=/tmp/slurmd
SlurmdPidFile=/tmp/slurmd.pid
SlurmdLogFile=/tmp/slurmd.log
TmpFS=/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
SlurmdParameters=config_overrides
JobRequeue=1
MinJobAge=3600
# a lost host is noticed within seconds (defaults: minutes)
SlurmdTimeout=10
MessageTimeout=5
KillWait=10
CONF
  local k
  for k in $(seq "$cluster_hosts"); do
    echo "NodeName=st-n$k NodeAddr=$cluster_subnet.$((10 + k)) CPUs=4 State=UNKNOWN" >>"$cluster_dir/slurm.conf"
  done
  echo "PartitionName=ci Nodes=$nodes Default=YES MaxTime=INFINITE State=UP" >>"$cluster_dir/slurm.conf"
}

host_ns() { echo "$(cluster_prefix "$cluster_owner")-n$1"; }

# on_host_root <k|head> <command...>: runs the command as host k sees the world: its network,
# its hostname, its /tmp and /dev/shm, its /etc/hosts; paths under the real /tmp that the test
# needs (the work directory, the build, the sources) are bound back in.
on_host_root() {
  local k=$1 ns name scratch
  shift
  if [ "$k" = head ]; then
    ns=$cluster_head_ns name=st-head scratch=""
  else
    ns=$(host_ns "$k") name=st-n$k scratch=$cluster_dir/n$k
  fi
  # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup tree slurmd needs.
  ST_HOST_BINDS=${cluster_binds[$k]:-} nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private \
    /bin/bash "$(dirname "${BASH_SOURCE[0]}")/multi_host_enter.sh" "$name" "$cluster_dir/hosts" "$scratch" \
    "${cluster_keep_paths[@]}" -- "$@"
}

on_head() { ip netns exec "$cluster_head_ns" "$@"; }

# The processes of host k: its slurmd, step daemons and ranks.
cluster_host_pids() { ip netns pids "$(host_ns "$1")" 2>/dev/null; }
cluster_pids_named() {
  local pid
  for pid in $(cluster_host_pids "$1"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid"
  done
}

cluster_cut_link() { ip -n "$cluster_head_ns" link set "v$1" down; }
cluster_kill_ranks() { cluster_pids_named "$1" shardtune | xargs -r kill -9; }
cluster_kill_slurmd() { cluster_pids_named "$1" slurmd | xargs -r kill -9; }
# cluster_slow_link <k> <rate>: host k's link limited to <rate> (tc netem where the kernel has
# it, else a token bucket); prints which.
cluster_slow_link() {
  if ip netns exec "$(host_ns "$1")" tc qdisc add dev eth0 root netem rate "$2" 2>/dev/null; then
    echo "netem rate $2"
  else
    if ! ip netns exec "$(host_ns "$1")" tc qdisc add dev eth0 root tbf rate "$2" burst 32kbit latency 400ms; then
      echo "SKIP: this kernel has neither the netem nor the tbf qdisc to slow a link" >&2
      exit 77
    fi
    echo "tbf rate $2"
  fi
}

cluster_stop() {
  [ -n "${cluster_owner:-}" ] || return 0
  [ -n "${SLURM_CONF:-}" ] && on_head scancel --quiet --user=root 2>/dev/null
  [ -f "$cluster_dir/ctl/slurmctld.pid" ] && kill -9 "$(cat "$cluster_dir/ctl/slurmctld.pid")" 2>/dev/null
  cluster_sweep "$cluster_owner"
  [ -f "$cluster_dir/munge/pid" ] && kill "$(cat "$cluster_dir/munge/pid")" 2>/dev/null
  cluster_owner=
}
