#!/usr/bin/env bash
# The sbatch templates' decisions (scripts/slurm/): what they do with each exit status of the steps they run.
# srun and scontrol are stand-ins here (on PATH, in $T/bin): srun exits with the status the case gives the
# command it was asked to run, and scontrol logs what it was asked. tests/e2e/slurm_cluster.sh runs the same
# templates under a real Slurm; this test covers the exits that a healthy or faulty run does not produce there:
# a step refusing its input (exit 2: factorybench's usage and input errors, docs/errors.md) must fail no node
# and requeue nothing; a burn-in that names no node still fails the job; a refused requeue fails the job.
. "$(dirname "$0")/../lib.sh"
cd "$T"

mkdir -p "$T/bin"
cat >"$T/bin/srun" <<'EOF'
#!/usr/bin/env bash
# FAKE_RC_<command>: the exit status of that factorybench command (default 0); FAKE_OUT_<command>: its output.
# FAKE_SLEEP_<command>: run that long first (exec, so that a SIGTERM ends it). A successful train writes its report.
cmd=
out=
prev=
for a in "$@"; do
  case "$a" in suite | burnin | locate | train | collective) [ -z "$cmd" ] && cmd=$a ;; esac
  [ "$prev" = --output ] && out=$a
  prev=$a
done
echo "srun $cmd" >>"$FAKE_LOG"
sleep_var=FAKE_SLEEP_$cmd
[ -n "${!sleep_var:-}" ] && exec sleep "${!sleep_var}"
out_var=FAKE_OUT_$cmd
[ -n "${!out_var:-}" ] && printf '%s\n' "${!out_var}"
rc_var=FAKE_RC_$cmd
rc=${!rc_var:-0}
[ "$rc" -eq 0 ] && [ -n "$out" ] && echo '{}' >"$out"
exit "$rc"
EOF
cat >"$T/bin/scontrol" <<'EOF'
#!/usr/bin/env bash
if [ "$1 $2" = "show hostnames" ]; then tr ',' '\n' <<<"$3"; exit 0; fi
echo "scontrol $*" >>"$FAKE_LOG"
exit "${FAKE_SCONTROL_RC:-0}"
EOF
chmod +x "$T/bin/srun" "$T/bin/scontrol"
export PATH="$T/bin:$PATH" FAKE_LOG="$T/calls.log" FACTORYBENCH=factorybench SLURM_JOB_ID=42

# NAME SCRIPT [ENV=VALUE...]: the template run with those variables; RC, $T/NAME.out, calls in $T/NAME.calls.
template() {
  local name=$1 script=$2
  shift 2
  : >"$FAKE_LOG"
  run_capture "$name" env SLURM_JOB_NODELIST=n1,n2 SLURM_NTASKS_PER_NODE=2 FB_OUT_DIR="$T/$name-out" \
    FB_RUN_DIR="$T/$name-run" "$@" bash "$FB_SOURCE_DIR/scripts/slurm/$script"
  cp "$FAKE_LOG" "$T/$name.calls"
}
has() { grep -qE -- "$2" "$T/$1.out"; }
called() { grep -qE -- "$2" "$T/$1.calls"; }

# Node validation.
template nv_pass node-validation.sbatch FB_BURNIN=1s
[ "$RC" -eq 0 ] && has nv_pass "^all nodes passed" && ok "node-validation: every step passes, exit 0" \
  || fail "nv_pass: exit $RC: $(cat "$T/nv_pass.out")"

template nv_suite_refused node-validation.sbatch FB_BURNIN=1s FB_DRAIN_FAILED=1 FAKE_RC_suite=2
[ "$RC" -eq 2 ] && has nv_suite_refused "^ERROR n1: the suite refused its input" && ! has nv_suite_refused "node\(s\) failed" \
  && ! called nv_suite_refused "scontrol update" && ok "node-validation: a refused suite (exit 2) fails no node, drains none, exit 2" \
  || fail "nv_suite_refused: exit $RC: $(cat "$T/nv_suite_refused.out" "$T/nv_suite_refused.calls")"

template nv_burnin_dead node-validation.sbatch FB_BURNIN=1s FAKE_RC_burnin=137
[ "$RC" -eq 1 ] && has nv_burnin_dead "^FAIL burnin" && has nv_burnin_dead "no node named" \
  && ok "node-validation: a burn-in that ends without naming a node (exit 137) still fails the job" \
  || fail "nv_burnin_dead: exit $RC: $(cat "$T/nv_burnin_dead.out")"

template nv_burnin_hang node-validation.sbatch FB_BURNIN=1s FB_DRAIN_FAILED=1 FAKE_RC_burnin=1 \
  FAKE_OUT_burnin="hang: rank 2 (host n2, GPU 0) never entered burnin_check #4 (24 B)"
[ "$RC" -eq 1 ] && has nv_burnin_hang "no node named" && has nv_burnin_hang "^hang: rank 2 \(host n2, GPU 0\) never entered" \
  && ! called nv_burnin_hang "scontrol update" && called nv_burnin_hang "srun burnin" \
  && ok "node-validation: a burn-in hang is shown, fails the job, drains nothing" \
  || fail "nv_burnin_hang: exit $RC: $(cat "$T/nv_burnin_hang.out" "$T/nv_burnin_hang.calls")"

template nv_burnin_node node-validation.sbatch FB_BURNIN=1s FB_DRAIN_FAILED=1 FAKE_RC_burnin=1 \
  FAKE_OUT_burnin="node n2: FAIL (sdc: rank 3 differs at check 2)"
[ "$RC" -eq 1 ] && has nv_burnin_node "^1 node\(s\) failed: n2$" && called nv_burnin_node "scontrol update NodeName=n2 State=DRAIN" \
  && ok "node-validation: the node a burn-in names is failed and drained" \
  || fail "nv_burnin_node: exit $RC: $(cat "$T/nv_burnin_node.out" "$T/nv_burnin_node.calls")"

# Burn-in names hosts as MPI sees them, here fully qualified: drained by their Slurm names; a host the
# allocation does not know is named but not drained (scontrol would refuse the whole update).
template nv_fqdn node-validation.sbatch FB_BURNIN=1s FB_DRAIN_FAILED=1 FAKE_RC_burnin=1 \
  FAKE_OUT_burnin="node n2.cluster.example: FAIL (sdc)"$'\n'"node gpu-x.example: FAIL (sdc)"
[ "$RC" -eq 1 ] && called nv_fqdn "scontrol update NodeName=n2 State=DRAIN" && has nv_fqdn "^not drained: gpu-x.example" \
  && has nv_fqdn "^2 node\(s\) failed: n2 gpu-x.example$" \
  && ok "node-validation: fully qualified host names drain their Slurm nodes; unknown ones are named, not drained" \
  || fail "nv_fqdn: exit $RC: $(cat "$T/nv_fqdn.out" "$T/nv_fqdn.calls")"

template nv_locate_refused node-validation.sbatch FB_BURNIN=0 FAKE_RC_locate=2 \
  FAKE_OUT_locate="factorybench: error: invalid --floors h300: unknown floor"$'\n'"srun: error: n1: task 0: Exited with exit code 2"
[ "$RC" -eq 2 ] && has nv_locate_refused "^ERROR locate" && has nv_locate_refused "unknown floor" \
  && ok "node-validation: a refused locate exits 2 and shows why" \
  || fail "nv_locate_refused: exit $RC: $(cat "$T/nv_locate_refused.out")"

# Restart by requeue.
template rq_refused train-requeue.sbatch FAKE_RC_train=2
[ "$RC" -eq 2 ] && has rq_refused "refused its input \(exit 2\); not requeued" && ! called rq_refused "requeue" \
  && ok "train-requeue: refused options (exit 2) are not requeued" \
  || fail "rq_refused: exit $RC: $(cat "$T/rq_refused.out" "$T/rq_refused.calls")"

template rq_crash train-requeue.sbatch FAKE_RC_train=137
[ "$RC" -eq 0 ] && called rq_crash "^scontrol requeue 42$" && [ "$(cat "$T/rq_crash-run/requeued-failures-42")" = 1 ] \
  && ok "train-requeue: a crash (exit 137) requeues the job and counts one failure" \
  || fail "rq_crash: exit $RC: $(cat "$T/rq_crash.out" "$T/rq_crash.calls")"

template rq_requeue_refused train-requeue.sbatch FAKE_RC_train=137 FAKE_SCONTROL_RC=1
[ "$RC" -eq 1 ] && has rq_requeue_refused "scontrol requeue failed" \
  && ok "train-requeue: a requeue Slurm refuses fails the job (exit 1), not COMPLETED" \
  || fail "rq_requeue_refused: exit $RC: $(cat "$T/rq_requeue_refused.out")"

mkdir -p "$T/rq_limit-run" && echo 3 >"$T/rq_limit-run/requeued-failures-42"
template rq_limit train-requeue.sbatch FAKE_RC_train=1 SLURM_RESTART_COUNT=5
[ "$RC" -eq 1 ] && has rq_limit "restart limit 3 reached" && ! called rq_limit "requeue" \
  && ok "train-requeue: the fourth failure gives up (FB_MAX_RESTARTS 3)" \
  || fail "rq_limit: exit $RC: $(cat "$T/rq_limit.out")"

# A later job resuming the same run directory starts with no failures counted.
template rq_next_job train-requeue.sbatch FAKE_RC_train=1 SLURM_JOB_ID=43 FB_RUN_DIR="$T/rq_limit-run"
[ "$RC" -eq 0 ] && called rq_next_job "^scontrol requeue 43$" \
  && ok "train-requeue: another job in the same run directory is requeued (the failures were job 42's)" \
  || fail "rq_next_job: exit $RC: $(cat "$T/rq_next_job.out")"

# Near the time limit (USR1): the step is stopped and the job requeued. With a checkpoint saved during the
# attempt it is not counted as a failure (after 3 requeues, at the failure limit, it is still requeued);
# without one the attempt made no progress, and it counts; a save cut off (a step directory without its
# manifest) is no checkpoint.
time_limit_case() {  # NAME SAVES [FROM TO] (SAVES 1: the step commits checkpoint TO; partial: one without manifest)
  local name=$1 saves=$2 from=${3:-step-00000004} to=${4:-step-00000008}
  mkdir -p "$T/$name-run/checkpoints/$from"
  echo '{}' >"$T/$name-run/checkpoints/$from/manifest.json"
  echo 2 >"$T/$name-run/requeued-failures-42"
  : >"$FAKE_LOG"
  env SLURM_JOB_NODELIST=n1 SLURM_RESTART_COUNT=3 FB_RUN_DIR="$T/$name-run" FAKE_SLEEP_train=30 \
    bash "$FB_SOURCE_DIR/scripts/slurm/train-requeue.sbatch" >"$T/$name.out" 2>&1 &
  local job=$!
  for _ in $(seq 300); do grep -q "srun train" "$FAKE_LOG" && break; sleep 0.1; done
  [ "$saves" != 0 ] && mkdir -p "$T/$name-run/checkpoints/$to" \
    && touch "$T/$name-run/checkpoints/$to/.rank-00000.shard.tmp"
  [ "$saves" = 1 ] && echo '{}' >"$T/$name-run/checkpoints/$to/manifest.json"
  kill -USR1 "$job"
  wait "$job"
  RC=$?
  cp "$FAKE_LOG" "$T/$name.calls"
}
time_limit_case rq_time 1
[ "$RC" -eq 0 ] && has rq_time "time limit near; requeueing job 42" && called rq_time "^scontrol requeue 42$" \
  && [ "$(cat "$T/rq_time-run/requeued-failures-42")" = 2 ] \
  && ok "train-requeue: the time limit after a saved checkpoint requeues without counting a failure" \
  || fail "rq_time: exit $RC: $(cat "$T/rq_time.out" "$T/rq_time.calls")"
time_limit_case rq_time_stuck 0
[ "$RC" -eq 0 ] && has rq_time_stuck "no checkpoint saved since the attempt began; requeueing" \
  && [ "$(cat "$T/rq_time_stuck-run/requeued-failures-42")" = 3 ] \
  && ok "train-requeue: the time limit with no checkpoint saved counts as a failure" \
  || fail "rq_time_stuck: exit $RC: $(cat "$T/rq_time_stuck.out" "$T/rq_time_stuck.calls")"
time_limit_case rq_time_cut partial
[ "$RC" -eq 0 ] && has rq_time_cut "no checkpoint saved since the attempt began; requeueing" \
  && [ "$(cat "$T/rq_time_cut-run/requeued-failures-42")" = 3 ] \
  && ok "train-requeue: a save cut off by the time limit (no manifest) is no checkpoint: counted as a failure" \
  || fail "rq_time_cut: exit $RC: $(cat "$T/rq_time_cut.out" "$T/rq_time_cut.calls")"
# Step 100000000 has nine digits and sorts before step-99999998 as text: it is still the newer one.
time_limit_case rq_time_digits 1 step-99999998 step-100000000
[ "$RC" -eq 0 ] && has rq_time_digits "time limit near; requeueing job 42" \
  && [ "$(cat "$T/rq_time_digits-run/requeued-failures-42")" = 2 ] \
  && ok "train-requeue: step-100000000 saved after step-99999998 is progress" \
  || fail "rq_time_digits: exit $RC: $(cat "$T/rq_time_digits.out" "$T/rq_time_digits.calls")"

# local-cluster.sh env: a path with a space survives the eval, and no root is needed to print it.
conf=$(FB_SLURM_DIR="$T/x y" bash -c 'eval "$("$1" env)" && printf "%s" "$SLURM_CONF"' _ "$FB_SOURCE_DIR/scripts/slurm/local-cluster.sh" 2>&1)
[ "$conf" = "$T/x y/slurm.conf" ] && ok "local-cluster.sh env quotes a path with a space" \
  || fail "local-cluster.sh env: SLURM_CONF became '$conf'"
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
  # The script on stdin: the checkout's path need not be readable by that user.
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -s env <"$FB_SOURCE_DIR/scripts/slurm/local-cluster.sh" 2>&1)
  [ "$out" = "export SLURM_CONF=/tmp/factorybench-slurm/slurm.conf" ] && ok "local-cluster.sh env needs no root" \
    || fail "local-cluster.sh env as nobody: $out"
fi
finish
