#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, from Debian's packages (munge, slurmctld, slurmd,
# slurm-client), for tests and for trying the sbatch templates. Everything (munge key and socket, slurm.conf,
# state, spool, logs, pid files) lives under one run directory, so it never touches /etc/slurm or a system munged.
#
#   scripts/slurm/local-cluster.sh start    install the packages when missing, start munged, slurmctld, slurmd,
#                                           wait until the node is idle
#   scripts/slurm/local-cluster.sh stop     stop the daemons (jobs are cancelled first)
#   scripts/slurm/local-cluster.sh status   daemons and sinfo
#   scripts/slurm/local-cluster.sh env      prints `export SLURM_CONF=...` for srun/sbatch/sinfo in your shell:
#                                           eval "$(scripts/slurm/local-cluster.sh env)"
#
# Environment: FB_SLURM_DIR (run directory, default /tmp/factorybench-slurm), FB_SLURM_CPUS (CPUs declared for the
# node, default 4), FB_SLURM_PORT (slurmctld port; slurmd uses PORT+1; default 6817), FB_SLURM_TIMEOUT (seconds to
# wait for the node, default 60). Runs as root (slurmd must); as another user through sudo.
# Exit status: 0 ok; 3 the cluster could not start (the reason is printed and the logs' tails shown).
set -euo pipefail

RUN_DIR=${FB_SLURM_DIR:-/tmp/factorybench-slurm}
CPUS=${FB_SLURM_CPUS:-4}
PORT=${FB_SLURM_PORT:-6817}
TIMEOUT=${FB_SLURM_TIMEOUT:-60}
NODE=$(hostname -s)
CONF="$RUN_DIR/slurm.conf"
MUNGE_SOCKET="$RUN_DIR/munge/munge.socket"
PACKAGES=(munge slurmctld slurmd slurm-client)

say() { echo "local-cluster: $*"; }
die() { echo "local-cluster: $*" >&2; exit 3; }

SUDO=""
# `env` only prints a path: any user may eval it.
if [ "$(id -u)" -ne 0 ] && [ "${1:-}" != env ]; then
  command -v sudo >/dev/null || die "must run as root (slurmd needs it) or with sudo"
  SUDO=sudo
fi

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Package post-install scripts would start system daemons; this cluster runs its own, so forbid that
  # (policy-rc.d exit 101 = "action forbidden") unless a policy is already in place.
  local policy_added=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  local rc=0
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"/tmp/factorybench-slurm-apt.log" 2>&1 || rc=$?
  [ $policy_added -eq 1 ] && $SUDO rm -f /usr/sbin/policy-rc.d
  [ $rc -eq 0 ] || { tail -5 /tmp/factorybench-slurm-apt.log >&2; die "apt-get install ${missing[*]} failed (exit $rc)"; }
}

# The MPI plugin: pmix when Slurm was built with it (Debian's is), else none.
mpi_default() {
  local plugdir
  plugdir=$(dirname "$(dpkg -L slurmd 2>/dev/null | grep -m1 '/slurm-wlm/.*\.so$' || echo /usr/lib/x86_64-linux-gnu/slurm-wlm/x.so)")
  if compgen -G "$plugdir/mpi_pmix*.so" >/dev/null || compgen -G "/usr/lib/*/slurm*/mpi_pmix*.so" >/dev/null; then
    echo pmix
  else
    echo none
  fi
}

write_config() {
  mkdir -p "$RUN_DIR"/{munge,state,spool,log}
  chmod 755 "$RUN_DIR"
  chmod 711 "$RUN_DIR/munge"  # clients need search permission to reach the socket
  if [ ! -s "$RUN_DIR/munge/munge.key" ]; then
    # 1024 random bytes, the size mungekey(8) creates by default.
    dd if=/dev/urandom of="$RUN_DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$RUN_DIR/munge/munge.key"
  fi
  cat >"$CONF" <<EOF
# Written by scripts/slurm/local-cluster.sh: one node on localhost.
ClusterName=factorybench
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$RUN_DIR/state
SlurmdSpoolDir=$RUN_DIR/spool
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$RUN_DIR/log/slurmctld.log
SlurmdLogFile=$RUN_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: containers and CI runners often cannot delegate them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=$(mpi_default)
ReturnToService=2
# The node declares $CPUS CPUs whatever the hardware has; config_overrides makes slurmd accept that.
SlurmdParameters=config_overrides
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
Waittime=0
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=1024 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# daemon_gone PIDFILE WAITED_S: the daemon wrote its pid file and is gone, or never wrote it in 15 s.
daemon_gone() {
  if [ -s "$1" ]; then ! pid_alive "$1"; else [ "$2" -ge 15 ]; fi
}

show_logs() {
  for f in "$RUN_DIR"/log/*.log; do
    [ -f "$f" ] || continue
    echo "--- tail $f" >&2
    tail -n 8 "$f" >&2
  done
}

start() {
  install_packages
  if pid_alive "$RUN_DIR/slurmctld.pid" && pid_alive "$RUN_DIR/slurmd.pid"; then
    say "already running in $RUN_DIR"
    return 0
  fi
  stop_daemons quiet
  write_config
  export SLURM_CONF="$CONF"

  $SUDO /usr/sbin/munged --key-file="$RUN_DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$RUN_DIR/munge/munged.pid" --log-file="$RUN_DIR/log/munged.log" \
    --seed-file="$RUN_DIR/munge/munged.seed" --force ||
    { show_logs; die "munged did not start"; }
  # A credential round trip proves the key and the socket.
  munge -S "$MUNGE_SOCKET" -n | unmunge -S "$MUNGE_SOCKET" >/dev/null || { show_logs; die "munge round trip failed"; }

  # -c: start clean (no state from an earlier run); -i: ignore saved state too.
  $SUDO env SLURM_CONF="$CONF" /usr/sbin/slurmctld -c -i || { show_logs; die "slurmctld did not start"; }
  $SUDO env SLURM_CONF="$CONF" /usr/sbin/slurmd -N "$NODE" || { show_logs; die "slurmd did not start"; }

  local waited=0 state=""
  while [ $waited -lt "$TIMEOUT" ]; do
    state=$(sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -1 || true)
    case "$state" in
      idle) break ;;
      down* | drain* | fail*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    # A daemon writes its pid file after it has forked: on a loaded machine that can take seconds, so a
    # missing pid file counts as an exit only after 15 s (an existing one whose process is gone, at once).
    daemon_gone "$RUN_DIR/slurmctld.pid" "$waited" && { show_logs; die "slurmctld exited during start-up"; }
    daemon_gone "$RUN_DIR/slurmd.pid" "$waited" && { show_logs; die "slurmd exited during start-up"; }
    sleep 1
    waited=$((waited + 1))
  done
  if [ "$state" != idle ]; then
    show_logs
    stop_daemons quiet
    die "node $NODE not idle after ${TIMEOUT}s (state '${state:-unknown}')"
  fi
  say "up in ${waited}s: node $NODE, $CPUS CPUs, MpiDefault=$(mpi_default), SLURM_CONF=$CONF"
}

# Stops one daemon by its pid file: TERM, then KILL after 10 s.
stop_one() {
  local name=$1 pidfile=$2
  pid_alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  $SUDO kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name ($pid) ignored TERM; killing"
    $SUDO kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

stop_daemons() {
  if pid_alive "$RUN_DIR/slurmctld.pid"; then
    # Running jobs would leave slurmstepd processes behind: cancel them while the controller still answers.
    SLURM_CONF="$CONF" scancel --full --quiet --partition=debug 2>/dev/null || true
    # shellcheck disable=SC2016  # expanded by the inner shell
    SLURM_CONF="$CONF" timeout 10 bash -c 'while [ -n "$(squeue -h 2>/dev/null)" ]; do sleep 0.5; done' || true
  fi
  stop_one slurmd "$RUN_DIR/slurmd.pid"
  stop_one slurmctld "$RUN_DIR/slurmctld.pid"
  stop_one munged "$RUN_DIR/munge/munged.pid"
  [ "${1:-}" = quiet ] || say "stopped (logs kept in $RUN_DIR/log)"
}

status() {
  local rc=0
  for d in munged:"$RUN_DIR/munge/munged.pid" slurmctld:"$RUN_DIR/slurmctld.pid" slurmd:"$RUN_DIR/slurmd.pid"; do
    if pid_alive "${d#*:}"; then echo "${d%%:*}: running (pid $(cat "${d#*:}"))"; else echo "${d%%:*}: stopped"; rc=1; fi
  done
  [ $rc -eq 0 ] && SLURM_CONF="$CONF" sinfo -N -l
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop_daemons ;;
  status) status ;;
  env) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
