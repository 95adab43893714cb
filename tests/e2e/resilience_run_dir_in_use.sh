#!/usr/bin/env bash
# A resilience run clears its run dir for a fresh job (checkpoints, events.jsonl, faults.fired). On a run dir
# another job is using it must refuse, with exit 2 and the holder, before it touches anything: it used to
# delete the running job's event log (which then stopped) and exit 0 itself. Held: by a training job's lock
# (train alone), and by a supervisor's .supervisor.lock for its whole job, relaunch gaps included (which a
# train run started there checks too, unless it is one of that supervisor's own jobs: FB_SUPERVISED).
. "$(dirname "$0")/../lib.sh"
cd "$T"
JOB=(--launcher none --model tiny-dense --layers 1)

# A train run in the run dir.
"$FACTORYBENCH" train --backend host --model tiny-dense --layers 1 --steps 1000000 --run-dir "$T/train_rd" \
  >"$T/train.out" 2>&1 &
train=$!
for _ in $(seq 1 1200); do grep -q '"type":"step"' "$T/train_rd/events.jsonl" 2>/dev/null && break; sleep 0.05; done
grep -q '"type":"step"' "$T/train_rd/events.jsonl" 2>/dev/null || { kill "$train"; die "the train run never stepped"; }
lines=$(wc -l <"$T/train_rd/events.jsonl")
expect_error on_train 2 "^factorybench: error: --run-dir $T/train_rd is in use by pid $train on .* \(its lock $T/train_rd/.lock\): stop that job, or choose another --run-dir$" \
  fb resilience "${JOB[@]}" --faults none --steps 4 --run-dir "$T/train_rd" -o "$T/on_train.json"
[ ! -e "$T/on_train.json" ] && ok "on_train: no report" || fail "on_train: a report was written"
# A second fresh train there is told the run dir is in use, not to add --resume (which would then wait and
# be refused), even when the running job holds checkpoints.
mkdir -p "$T/train_rd/checkpoints/step-00000005" && touch "$T/train_rd/checkpoints/step-00000005/manifest.json"
expect_error second_train 2 "^factorybench: error: --run-dir $T/train_rd is in use by pid $train on .* \(its lock $T/train_rd/.lock\): stop that job, or choose another --run-dir$" \
  fb train --backend host --model tiny-dense --layers 1 --steps 2 --run-dir "$T/train_rd" -o "$T/second_train.json"
kill -0 "$train" 2>/dev/null && [ "$(wc -l <"$T/train_rd/events.jsonl")" -ge "$lines" ] \
  && ok "the train run goes on, its event log intact" || fail "the train run stopped: $(tail -3 "$T/train.out")"
kill "$train"; wait "$train" 2>/dev/null || true

# A supervised job: refused while it trains, and in the gap between two attempts (a crash at step 3 and a
# 2 s relaunch delay would leave no training job holding .lock).
"$FACTORYBENCH" resilience "${JOB[@]}" --backend host --time-budget 12s --faults "crash@step=3" \
  --run-dir "$T/sup_rd" -o "$T/first.json" >"$T/first.out" 2>"$T/first.err" &
first=$!
for _ in $(seq 1 200); do [ -e "$T/sup_rd/.supervisor.lock" ] && break; sleep 0.05; done
saw=0 judged=0
alive() { kill -0 "$first" 2>/dev/null; }
# Each attempt is judged only when the first job ran throughout it (a loaded machine may reach its budget).
for _ in 1 2 3 4 5 6; do
  alive || break
  run_capture second fb resilience "${JOB[@]}" --faults none --steps 4 --run-dir "$T/sup_rd" -o "$T/second.json"
  alive || break
  judged=$((judged + 1))
  if [ "$RC" -ne 2 ] || ! grep -qE "^factorybench: error: --run-dir $T/sup_rd is in use by (the supervisor )?pid [0-9]+ on " "$T/second.err"; then
    fail "second resilience run: exit $RC: $(head -2 "$T/second.err")"; break
  fi
  [ ! -e "$T/second.json" ] || { fail "the refused resilience run wrote a report"; break; }
  grep -q "the supervisor pid $first " "$T/second.err" && saw=1
  # The lock named is the one held: the supervisor's own, or the training job's (it named .lock for both).
  if grep -q "the supervisor pid" "$T/second.err" && ! grep -q "(its lock $T/sup_rd/.supervisor.lock)" "$T/second.err"; then
    fail "the supervisor's hold names another lock: $(head -1 "$T/second.err")"; break
  fi
  # A train run there is refused alike (by the job's lock, or in a relaunch gap by the supervisor's).
  FACTORYBENCH_RUN_DIR_LOCK_WAIT=0 run_capture third fb train --backend host --model tiny-dense --layers 1 \
    --steps 2 --run-dir "$T/sup_rd" --resume -o "$T/third.json"
  alive || break
  if [ "$RC" -ne 2 ] || ! grep -qE "^factorybench: error: --run-dir $T/sup_rd is in use by (the supervisor )?pid [0-9]+ on " "$T/third.err"; then
    fail "train on the supervised run dir: exit $RC: $(head -2 "$T/third.err")"; break
  fi
  [ ! -e "$T/third.json" ] || { fail "the refused train run wrote a report"; break; }
  sleep 0.5
done
[ "$judged" -ge 1 ] && ok "resilience and train runs on the supervised run dir refused ($judged round(s))" \
  || fail "the first job ended before any second run could be judged"
RC=0; wait "$first" || RC=$?
[ "$RC" -eq 0 ] && ok "the first resilience run finished (exit 0)" || fail "first: exit $RC: $(stderr_summary "$T/first.err")"
assert_json "$T/first.json" "d['results'][0]['status'] == 'ok' and d['results'][0]['metrics']['failures']['value'] == 1" "the first run's job, crash and all, is whole"
[ "$saw" -eq 1 ] && ok "the supervisor's own hold was seen at least once" || echo "note: every refusal named the training job's lock"

# `mpirun -np N factorybench resilience`: rank 0 supervises and alone judges the run dir. The other ranks used
# to check it too and, once rank 0 had taken .supervisor.lock, refuse their own rank 0's run dir (exit 2, and
# mpirun ended the job). Deterministically: rank 1 (an MPMD launch) is given a run dir whose supervisor lock
# another process holds; it must not judge it.
mkdir -p "$T/held_rd"
flock "$T/held_rd/.supervisor.lock" sleep 60 &
holder=$!
for _ in $(seq 1 100); do ! flock -n "$T/held_rd/.supervisor.lock" true && break; sleep 0.05; done
run_capture mpmd mpirun --oversubscribe -np 1 "$FACTORYBENCH" resilience "${JOB[@]}" --backend host --faults none \
  --steps 4 --run-dir "$T/mpmd_rd" -o "$T/mpmd.json" : -np 1 "$FACTORYBENCH" resilience "${JOB[@]}" --backend host \
  --faults none --steps 4 --run-dir "$T/held_rd" -o "$T/mpmd.json"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true
[ "$RC" -eq 0 ] && assert_json "$T/mpmd.json" "d['results'][0]['status'] == 'ok'" \
  "mpirun -np 2: rank 1 leaves the run dir to rank 0, whose job runs" \
  || fail "mpirun -np 2 with rank 1 seeing a held run dir: exit $RC: $(head -3 "$T/mpmd.err")"
# As users launch it: every rank the same run dir (the race that failed 4 of 4 at -np 4).
for i in 1 2; do
  run_capture np4_$i fb_mpirun 4 resilience "${JOB[@]}" --backend host --faults none --steps 3 \
    --run-dir "$T/np4_rd_$i" -o "$T/np4_$i.json"
  [ "$RC" -eq 0 ] && [ -s "$T/np4_$i.json" ] && ok "mpirun -np 4 resilience, run $i: exit 0 and a report" \
    || fail "mpirun -np 4 resilience, run $i: exit $RC: $(head -3 "$T/np4_$i.err")"
done
finish
