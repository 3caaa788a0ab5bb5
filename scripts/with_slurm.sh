#!/usr/bin/env bash
# Runs a command next to a throwaway one-node Slurm cluster on this machine, for the sharded
# tuning test (scripts/shard_tune_e2e.sh --slurm):
#   scripts/with_slurm.sh sbatch --wait --array=0-1 job.sh
# Installs Debian's slurm-wlm and munge when missing (as root), then in a fresh temporary
# folder: a munge key and munged on its own socket, a slurm.conf for this host (all its CPUs,
# one partition, no accounting, no cgroups), slurmctld and slurmd on free ports. Exports
#   SLURM_CONF=FOLDER/slurm.conf
# so that sbatch, srun, squeue and sinfo talk to it, waits until the node is idle, runs the
# command, and always stops the daemons and removes the folder, whatever the command did.
# Exits with the command's status. Needs root (the daemons run as root here).
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "error: with_slurm.sh starts slurmctld and slurmd as root: run it as root" >&2
  exit 1
fi
missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "with_slurm: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera_slurm.XXXXXX")
chmod 755 "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
log_fail() { echo "error: $1 (its log follows)" >&2; cat "$2" >&2 || true; exit 1; }

# munge: a fresh key, a private socket; the daemons run as root here, so --force.
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge.key"
munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" \
  || log_fail "munged did not start" "$dir/munged.log"
pids+=("$(cat "$dir/munged.pid")")

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<CONF
ClusterName=tessera
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=tune Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$SLURM_CONF" -i || log_fail "slurmctld did not start" "$dir/slurmctld.log"
for _ in $(seq 100); do [ -s "$dir/slurmctld.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$dir/slurmctld.pid")")
slurmd -f "$SLURM_CONF" || log_fail "slurmd did not start" "$dir/slurmd.log"
for _ in $(seq 100); do [ -s "$dir/slurmd.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$dir/slurmd.pid")")

# The node registers within seconds; jobs submitted before would wait anyway, but a broken
# setup should fail here, naming the daemon, not hang the command.
state=""
for _ in $(seq 60); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = "idle" ] && break
  sleep 0.5
done
if [ "$state" != "idle" ]; then
  echo "error: the Slurm node is '${state:-unknown}', not idle, after 30 s" >&2
  tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  exit 1
fi
echo "with_slurm: Slurm $(slurmctld -V | awk '{print $2}') on $host ($cpus CPUs), SLURM_CONF=$SLURM_CONF"
status=0
"$@" || status=$?
exit "$status"
