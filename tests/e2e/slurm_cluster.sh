# Sourced by slurm_test.sh: a throwaway one-node Slurm cluster from Debian's slurm-wlm (munge,
# slurmctld, slurmd as root) with its configuration, state and logs under $1. CPUs are
# over-declared (8) so 4 single-CPU tasks fit on a 2-core machine; MpiDefault=pmix as on GPU
# clusters; accounting is off, so job states come from scontrol.
# slurm_start <dir> | slurm_stop | slurm_job_state <id> | slurm_wait_job <id> <seconds> <states regex>

slurm_start() {
  slurm_dir=$1
  local host
  host=$(hostname -s)
  mkdir -p "$slurm_dir/state" "$slurm_dir/spool"
  cat >"$slurm_dir/slurm.conf" <<CONF
ClusterName=shardtune-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=cred_expire=10  # how long a requeued job waits before it may start again (default 120 s)
StateSaveLocation=$slurm_dir/state
SlurmdSpoolDir=$slurm_dir/spool
SlurmctldPidFile=$slurm_dir/slurmctld.pid
SlurmdPidFile=$slurm_dir/slurmd.pid
SlurmctldLogFile=$slurm_dir/slurmctld.log
SlurmdLogFile=$slurm_dir/slurmd.log
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$slurm_dir/slurm.conf
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null
    [ -f /etc/munge/munge.key ] || mungekey --create >/dev/null 2>&1 || create-munge-key -f >/dev/null 2>&1
    munged --force --pid-file="$slurm_dir/munged.pid" 2>/dev/null || fail "munged did not start"
    slurm_started_munge=1
  fi
  slurmctld || fail "slurmctld did not start: $(tail -5 "$slurm_dir/slurmctld.log")"
  slurmd || fail "slurmd did not start: $(tail -5 "$slurm_dir/slurmd.log")"
  for _ in $(seq 60); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && return 0
    sleep 0.5
  done
  fail "the node never became idle: $(sinfo 2>&1) $(tail -5 "$slurm_dir/slurmd.log")"
}

slurm_stop() {
  [ -n "${slurm_dir:-}" ] || return 0
  local pids
  pids=$(cat "$slurm_dir"/slurmctld.pid "$slurm_dir"/slurmd.pid 2>/dev/null)
  scancel --quiet --user=root 2>/dev/null
  scontrol shutdown >/dev/null 2>&1
  for _ in $(seq 40); do
    kill -0 $pids 2>/dev/null || break
    sleep 0.25
  done
  kill -9 $pids 2>/dev/null
  # Only the munged started here: a multi-host test cluster's own munged may run beside it.
  [ -n "${slurm_started_munge:-}" ] && kill "$(cat "$slurm_dir/munged.pid" 2>/dev/null)" 2>/dev/null
  slurm_dir=
}

slurm_job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

# Waits until job <id> is in a state matching <states regex>; fails after <seconds>.
slurm_wait_job() {
  local id=$1 seconds=$2 states=$3 state
  for _ in $(seq $((seconds * 4))); do
    state=$(slurm_job_state "$id")
    [[ "$state" =~ ^($states)$ ]] && return 0
    sleep 0.25
  done
  fail "job $id is $state after ${seconds}s, expected $states"
}
