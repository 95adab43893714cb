#!/usr/bin/env bash
# factorybench under a real Slurm cluster on this machine (scripts/slurm/local-cluster.sh: munge, slurmctld, slurmd
# from Debian's packages, one node declaring 4 CPUs): srun direct launch over PMIx, the report's run.slurm block,
# sbatch, and the resilience supervisor relaunching through srun after a crash. Skipped (exit 77, with the reason)
# only when Slurm cannot start here: not root, packages not installable, daemons refusing to start.
. "$(dirname "$0")/../lib.sh"
cd "$T"

CLUSTER="$FB_SOURCE_DIR/scripts/slurm/local-cluster.sh"
# Own directory and ports, so a cluster someone started by hand (default port 6817) is left alone.
export FB_SLURM_DIR="$T/slurm" FB_SLURM_PORT=${FB_SLURM_TEST_PORT:-6837} FB_SLURM_CPUS=4
export SLURM_CONF="$FB_SLURM_DIR/slurm.conf"
# The node declares 4 CPUs on a 2-core machine: Open MPI cannot see the oversubscription under srun (mpirun's
# --oversubscribe sets this for it), and busy-polling ranks would starve each other.
export OMPI_MCA_mpi_yield_when_idle=1
trap '"$CLUSTER" stop >/dev/null 2>&1; [ -n "${FB_KEEP_TMP:-}" ] || rm -rf "$T"' EXIT

if ! "$CLUSTER" start >"$T/start.out" 2>"$T/start.err"; then
  cat "$T/start.err" >&2
  skip "Slurm cannot start on this machine (the reason above)"
fi
cat "$T/start.out"
NODE=$(hostname -s)

# Plain srun: four tasks on the one node.
run_capture hostname timeout 60 srun -n 4 hostname
[ "$RC" -eq 0 ] && [ "$(grep -c "^$NODE\$" "$T/hostname.out")" -eq 4 ] && ok "srun -n 4 hostname" \
  || fail "srun -n 4 hostname: exit $RC, $(cat "$T/hostname.out" "$T/hostname.err")"

# Direct launch over PMIx: Open MPI takes ranks from Slurm, one world of 4, one report.
CMD=(collective --op allreduce -b 8 -e 64K --check --backend host)
run_capture srun4 timeout 120 srun --mpi=pmix -n 4 "$FACTORYBENCH" "${CMD[@]}" --output "$T/srun.json"
if [ "$RC" -ne 0 ] || [ ! -f "$T/srun.json" ]; then
  fail "srun --mpi=pmix -n 4 factorybench ${CMD[*]}: exit $RC: $(tail -5 "$T/srun4.err")"
else
  ok "srun --mpi=pmix -n 4 factorybench ${CMD[*]}"
  validate "$T/srun.json"
  assert_json "$T/srun.json" "d['run']['world_size'] == 4" "world size 4 under srun"
  assert_json "$T/srun.json" "d['run']['hosts'] == ['$NODE']" "hosts = [$NODE]"
  assert_json "$T/srun.json" "d['run']['slurm']['job_id'].isdigit() and d['run']['slurm']['step_id'].isdigit()" \
    "run.slurm job and step ids"
  assert_json "$T/srun.json" "d['run']['slurm']['nodelist'] == '$NODE' and d['run']['slurm']['ntasks'] == 4" \
    "run.slurm nodelist and ntasks"
  assert_json "$T/srun.json" "d['run']['slurm']['local_ids'] == [0, 1, 2, 3]" "run.slurm.local_ids = SLURM_LOCALID per rank"
  assert_json "$T/srun.json" "[r['local_rank'] for r in d['system']['ranks']] == [0, 1, 2, 3]" "local ranks 0..3"
  assert_json "$T/srun.json" "all(r['status'] == 'ok' for r in d['results'])" "every result ok"
  # Only rank 0 prints: the first line of the human output appears once.
  first=$(grep -m1 . "$T/srun4.out")
  [ -n "$first" ] && [ "$(grep -cxF "$first" "$T/srun4.out")" -eq 1 ] && ok "one report printed" \
    || fail "output printed more than once: $(head -5 "$T/srun4.out")"
fi

# A task that dies (the OOM killer's SIGKILL here) under srun without --kill-on-bad-exit: Slurm's PMIx plugin
# cancels the step with SIGKILL to the other tasks, so rank 0 has no chance to write; -o already holds the report
# so far (tools/interrupt_report.hpp). With --kill-on-bad-exit=1 (scripts/slurm) the others get SIGTERM, and
# rank 0 writes the interrupted report, as under mpirun; scancel's SIGTERM likewise.
rank_pid() {  # NAME RANK: the PID of that task of run NAME (its report path is in no other test's command line)
  local p
  for p in $(pgrep -f -- "--output $T/$1.json"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMIX_RANK=$2" && { echo "$p"; return; }
  done
}
signal_run() {  # NAME SIGNAL-TO-RANK-1|scancel [SRUN OPTIONS...]: a long sweep, signalled once its first size is saved
  local name=$1 how=$2
  shift 2
  timeout 120 srun --mpi=pmix -n 2 "$@" "$FACTORYBENCH" collective --backend host -b 64K -e 256M -n 100 \
    --output "$T/$name.json" >"$T/$name.out" 2>"$T/$name.err" &
  local launcher=$!
  for _ in $(seq 600); do
    grep -qE "^ +65536 " "$T/$name.out" 2>/dev/null && [ -s "$T/$name.json" ] && break
    sleep 0.1
  done
  if [ "$how" = scancel ]; then
    scancel -s TERM "$(squeue -h -o %i | head -1)"
  else
    kill "-$how" "$(rank_pid "$name" 1)"
  fi
  wait "$launcher" || true
}
signal_run sigkill KILL
validate "$T/sigkill.json"
assert_json "$T/sigkill.json" "d['results'][0]['name'] == 'allreduce/fp32/65536' and d['results'][0]['status'] == 'ok' and d['results'][-1]['name'] == 'unfinished' and d['results'][-1]['status'] == 'failed'" \
  "srun, rank 1 SIGKILLed: the others are SIGKILLed, and -o keeps the sizes so far and 'unfinished'"
grep -q "task 0: Killed" "$T/sigkill.err" && ok "srun: rank 0 was SIGKILLed" || fail "srun sigkill: $(tail -5 "$T/sigkill.err")"
signal_run killonbad KILL --kill-on-bad-exit=1
assert_json "$T/killonbad.json" "d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['params']['signal'] == 'SIGTERM' and d['results'][0]['status'] == 'ok'" \
  "srun --kill-on-bad-exit=1, rank 1 SIGKILLed: rank 0 gets SIGTERM and writes the interrupted report"
signal_run scancel scancel
assert_json "$T/scancel.json" "d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['params']['signal'] == 'SIGTERM' and d['results'][0]['status'] == 'ok'" \
  "scancel -s TERM: rank 0 writes the interrupted report"
for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done

# PMI2 cannot start Debian's Open MPI: a clear failure, not a hang (documents why the templates say --mpi=pmix).
run_capture pmi2 timeout 60 srun --mpi=pmi2 -n 2 "$FACTORYBENCH" info --backend host
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && ok "srun --mpi=pmi2 fails cleanly (exit $RC)" || fail "srun --mpi=pmi2: exit $RC"

# sbatch: a batch job whose step runs factorybench; the report names the job's id.
cat >"$T/job.sbatch" <<EOF
#!/usr/bin/env bash
#SBATCH --ntasks=2
#SBATCH --output=$T/job.out
srun --mpi=pmix "$FACTORYBENCH" info --backend host --output "$T/sbatch.json"
EOF
run_capture sbatch timeout 120 sbatch --parsable --wait "$T/job.sbatch"
job=$(head -1 "$T/sbatch.out" | cut -d';' -f1)
if [ "$RC" -eq 0 ] && [ -f "$T/sbatch.json" ]; then
  ok "sbatch --wait job $job"
  validate "$T/sbatch.json"
  assert_json "$T/sbatch.json" "d['run']['world_size'] == 2 and d['run']['slurm']['job_id'] == '$job'" "sbatch report: job $job, 2 ranks"
else
  fail "sbatch: exit $RC: $(cat "$T/sbatch.err" "$T/job.out" 2>/dev/null | tail -5)"
fi

# Node validation (scripts/slurm/node-validation.sbatch, its GPU line dropped and one CPU per task): the suite on
# the node, burn-in and locate across the allocation, here on 4 host ranks declared as 2 hosts. Healthy: every
# step passes. With one flipped bit in rank 2's burn-in result, the script fails and names rank 2's host.
sed -e '/--gpus-per-node/d' -e 's/--cpus-per-task=8/--cpus-per-task=1/' \
  "$FB_SOURCE_DIR/scripts/slurm/node-validation.sbatch" >"$T/nv.sbatch"
cat >"$T/nv-suite.json" <<'EOF2'
{"name": "nv-host", "steps": [
  {"name": "gemm", "command": "gemm", "args": "--m 128 --n 128 --k 128 --iters 3 --warmup 1"},
  {"name": "allreduce", "command": "collective", "args": "--op allreduce -b 8 -e 64K -f 16 --iters 3 --warmup 1 --check"}
]}
EOF2
nv_run() {  # NAME [ENV=VALUE...]: one sbatch --wait of the template; RC, $T/NAME/ and $T/NAME.log
  local name=$1
  shift
  run_capture "$name" timeout 240 env FACTORYBENCH="$FACTORYBENCH" FB_SUITE="$T/nv-suite.json" FB_OUT_DIR="$T/$name" \
    FB_BURNIN=3s FB_BURNIN_ARGS="--backend host --check-interval 1s --size 128" FB_FLOORS= \
    FB_LOCATE_ARGS="--backend host" FACTORYBENCH_FAKE_HOSTS=2 "$@" \
    sbatch --parsable --wait --nodes=1 --ntasks-per-node=4 --time=00:05:00 --output="$T/$name.log" "$T/nv.sbatch"
}
nv_run nv
if [ "$RC" -eq 0 ] && grep -qx "PASS $NODE" "$T/nv.log" && grep -qx "PASS burnin (3s)" "$T/nv.log" \
  && grep -qx "PASS locate" "$T/nv.log" && grep -q "^all nodes passed" "$T/nv.log"; then
  ok "node-validation.sbatch: suite, burn-in and locate pass on a healthy node"
else
  fail "node-validation.sbatch: exit $RC: $(cat "$T/nv.err" "$T/nv.log" 2>/dev/null | tail -8)"
fi
for f in "$NODE.json" burnin.json locate.json; do validate "$T/nv/$f"; done
assert_json "$T/nv/locate.json" "d['run']['hosts'] == ['$NODE-fake0', '$NODE-fake1'] and d['results'][0]['params']['endpoints'] == 2" \
  "locate: the 2 declared hosts, one p2p pair"
assert_json "$T/nv/burnin.json" "d['summary']['burnin']['verdict'] == 'pass'" "burn-in verdict pass"
# The bit flip is injected into the burn-in alone: locate has no SDC check and refuses an sdc entry (exit 2,
# which the template reports as refused input, not as a node failure).
printf '#!/usr/bin/env bash\n[ "$1" = burnin ] && export FACTORYBENCH_INJECT=sdc@rank=2,check=2\nexec "%s" "$@"\n' \
  "$FACTORYBENCH" >"$T/fb-sdc"
chmod +x "$T/fb-sdc"
nv_run nv-sdc FACTORYBENCH="$T/fb-sdc"
if [ "$RC" -eq 1 ] && grep -qx "FAIL burnin (see $T/nv-sdc/burnin.log)" "$T/nv-sdc.log" \
  && grep -qx "1 node(s) failed: $NODE-fake1" "$T/nv-sdc.log"; then
  ok "node-validation.sbatch: a flipped bit fails burn-in and names rank 2's host"
else
  fail "node-validation.sbatch with sdc: exit $RC: $(cat "$T/nv-sdc.err" "$T/nv-sdc.log" 2>/dev/null | tail -8)"
fi

# Restart by requeue (scripts/slurm/train-requeue.sbatch, its GPU line dropped: this node has none): the crash at
# step 6 fails the step, the script requeues the job, and the second run resumes from the step-4 checkpoint.
# Slurm holds a requeued job back for two minutes (BeginTime); the test releases it after 5 s with StartTime=now.
sed '/--gpus-per-node/d' "$FB_SOURCE_DIR/scripts/slurm/train-requeue.sbatch" >"$T/requeue.sbatch"
run_capture requeue env FACTORYBENCH="$FACTORYBENCH" FB_RUN_DIR="$T/run-requeue" \
  FB_TRAIN_ARGS="--backend host --model tiny-dense --steps 12 --checkpoint-every 4 --faults crash@step=6,rank=1" \
  sbatch --parsable --nodes=1 --ntasks-per-node=4 -c 1 --time=00:05:00 --output="$T/requeue-%j.out" "$T/requeue.sbatch"
rjob=$(head -1 "$T/requeue.out" | cut -d';' -f1)
job_field() { scontrol show job "$rjob" -o 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"; }
released=0 state=""
for _ in $(seq 1 120); do
  state=$(job_field JobState)
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  if [ "$released" = 0 ] && [ "$state" = PENDING ] && [ "$(job_field Restarts)" = 1 ]; then
    # Give slurmstepd a few seconds to tear down the killed step's PMIx state (same step id 0 again).
    sleep 5 && scontrol update JobId="$rjob" StartTime=now && released=1
  fi
  sleep 1
done
if [ "$RC" -eq 0 ] && [ "$state" = COMPLETED ]; then
  ok "sbatch train-requeue.sbatch: job $rjob completed after a requeue"
  [ "$(job_field Restarts)" = 1 ] && ok "requeued once" || fail "restarts: $(job_field Restarts)"
  grep -q "requeueing job $rjob" "$T/requeue-$rjob.out" && grep -q "attempt 2: training finished" "$T/requeue-$rjob.out" \
    && ok "the script requeued after the crash and the second run finished" \
    || fail "requeue script output: $(tail -5 "$T/requeue-$rjob.out")"
  validate "$T/run-requeue/train-report-1.json"
  assert_json "$T/run-requeue/train-report-1.json" "d['results'][0]['metrics']['steps_completed']['value'] == 8" \
    "second run did steps 5-12 (8 steps) after resuming"
  "$PY" - "$T/run-requeue/events.jsonl" <<'PYEOF' && ok "event log: attempts 1 and 2, resume from step-00000004, the crash fired once" || fail "requeue event log"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
starts = [e["attempt"] for e in events if e["type"] == "attempt_start"]
restores = [e.get("checkpoint") for e in events if e["type"] == "ckpt_restore_end"]
crashes = [e for e in events if e["type"] == "fault_injected" and e["kind"] == "crash"]
assert starts == [1, 2], starts
assert restores == [None, "step-00000004"], restores
assert len(crashes) == 1 and crashes[0]["step"] == 6, crashes
PYEOF
else
  fail "train-requeue.sbatch: exit $RC, job $rjob state '$state': $(tail -8 "$T/requeue-$rjob.out" "$T/requeue.err" 2>/dev/null)"
fi

# The supervisor relaunching through srun inside an allocation (salloc gives it one, as sbatch would).
RES=(resilience --launcher srun --ranks 4 --launcher-args "--mpi=pmix" --backend host --model tiny-dense
     --steps 12 --checkpoint-every 4 --max-restarts 3)
R="d['results'][0]"  # set here, not in the crash branch: the hang checks use it whether the crash run passed or not
# A crash: rank 1 is SIGKILLed at step 6; srun --kill-on-bad-exit ends the step, the supervisor relaunches it.
run_capture crash timeout 150 salloc -n 4 "$FACTORYBENCH" "${RES[@]}" --hang-timeout 30s \
  --faults "crash@step=6,rank=1" --run-dir "$T/run-crash" --output "$T/crash.json"
if [ "$RC" -eq 0 ] && [ -f "$T/crash.json" ]; then
  ok "resilience --launcher srun with a crash"
  validate "$T/crash.json"
  assert_json "$T/crash.json" "$R['metrics']['failures']['value'] == 1 and $R['metrics']['restarts']['value'] == 1" \
    "one failure, one restart"
  assert_json "$T/crash.json" "$R['metrics']['steps_completed']['value'] == 12" "all 12 steps completed"
  assert_json "$T/crash.json" "[f['rank'] for f in $R['extra']['ledger']['failure_list']] == [1]" "failure blamed on rank 1"
  launches=$("$PY" -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if l.strip() and
    (e := json.loads(l))['type'] == 'attempt_start' and e['command'][0] == 'srun'))" "$T/run-crash/events.jsonl")
  [ "$launches" = 2 ] && ok "both attempts launched with srun" || fail "srun launches in the event log: $launches"
else
  fail "resilience --launcher srun (crash): exit $RC: $(tail -8 "$T/crash.err")"
fi
# A hang the training watchdog would not catch in time (--hang-timeout 5m): the supervisor's heartbeat
# timeout fires, it stops the srun step (SIGTERM to srun, scancel if the step outlives it) and relaunches.
# 12 s: above a 4-rank srun launch before its first event on a loaded CI machine (6 s was close).
run_capture hang timeout 150 salloc -n 4 "$FACTORYBENCH" "${RES[@]}" --hang-timeout 5m --heartbeat-timeout 12s \
  --faults "hang@step=6,rank=2" --run-dir "$T/run-hang" --output "$T/hang.json"
if [ "$RC" -eq 0 ] && [ -f "$T/hang.json" ]; then
  ok "resilience --launcher srun with a hang"
  assert_json "$T/hang.json" "$R['metrics']['failures']['value'] == 1 and $R['metrics']['steps_completed']['value'] == 12" \
    "hang: one failure, 12 steps"
  assert_json "$T/hang.json" "[f['kind'] for f in $R['extra']['ledger']['failure_list']] == ['hang']" "failure kind hang"
else
  fail "resilience --launcher srun (hang): exit $RC: $(tail -8 "$T/hang.err")"
fi
# Nothing left behind: no job step and no rank of this test's runs (Slurm's teardown takes a moment).
for _ in $(seq 60); do
  [ -z "$(squeue -h -s 2>/dev/null)" ] && ! pgrep -f "$T/run-" >/dev/null && break
  sleep 0.5
done
[ -z "$(squeue -h -s 2>/dev/null)" ] && ok "no job steps left" || fail "steps left: $(squeue -s)"
pgrep -f "$T/run-" >/dev/null && fail "processes left: $(pgrep -af "$T/run-")" || ok "no processes left"

"$CLUSTER" stop
finish
