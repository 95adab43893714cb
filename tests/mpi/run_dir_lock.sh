#!/usr/bin/env bash
# One job per run dir: while a job trains in it (held here in a checkpoint save until the checks below are
# done: FACTORYBENCH_TEST_CKPT_RELEASE; a fixed 15 s was not always long enough for three mpirun jobs on a
# loaded CI machine, and the first job's end freed the run dir under them), a second job on the
# same --run-dir stops with exit 2 naming the holder, before it writes anything there; the first job finishes
# untouched (also when its .lock file is deleted meanwhile, and when a resilience run, which clears a run dir
# for its fresh job, is started there), and once it has ended the run dir is free again. The lock is the
# kernel's (flock): a job killed with SIGKILL leaves no stale lock behind.
. "$(dirname "$0")/../lib.sh"

RUN=$T/run
TRAIN=(train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 2 --run-dir "$RUN")
rm -f "$T/marks" "$T/release"
# 50 s at most: under the 60 s a save is allowed before the watchdog calls it a hang.
FACTORYBENCH_TEST_CKPT_PAUSE="shard=50@2" FACTORYBENCH_TEST_CKPT_MARK=$T/marks FACTORYBENCH_TEST_CKPT_RELEASE=$T/release \
  mpirun --oversubscribe -x FACTORYBENCH_TEST_CKPT_PAUSE -x FACTORYBENCH_TEST_CKPT_MARK -x FACTORYBENCH_TEST_CKPT_RELEASE \
  -np 2 "$FACTORYBENCH" "${TRAIN[@]}" --steps 4 >"$T/first.out" 2>"$T/first.err" &
job=$!
for _ in $(seq 1 2400); do grep -q '^shard 2 ' "$T/marks" 2>/dev/null && break; sleep 0.05; done
grep -q '^shard 2 ' "$T/marks" || { kill -9 "$job" 2>/dev/null; die "the first job never reached its save"; }
lines_before=$(wc -l <"$RUN/events.jsonl")

export FACTORYBENCH_RUN_DIR_LOCK_WAIT=0
run_capture second fb_mpirun 2 "${TRAIN[@]}" --steps 4 --resume
[ "$RC" -eq 2 ] && grep -q "^factorybench: error: --run-dir $RUN is in use by pid [0-9]* on .* (its lock $RUN/.lock): stop that job, or choose another --run-dir$" "$T/second.err" \
  && ok "a second job on the run dir: exit 2, naming the holder" || fail "second: exit $RC: $(head -3 "$T/second.err")"
[ "$(wc -l <"$RUN/events.jsonl")" -eq "$lines_before" ] && ok "the second job wrote no event" \
  || fail "the second job wrote to events.jsonl: $(tail -2 "$RUN/events.jsonl")"
# The lock file deleted under the holder (a cleanup of dot files): the directory's own lock still excludes.
rm -f "$RUN/.lock"
run_capture second_no_file fb_mpirun 2 "${TRAIN[@]}" --steps 4 --resume
[ "$RC" -eq 2 ] && grep -q "^factorybench: error: --run-dir $RUN is in use by another job (its lock $RUN/.lock)" "$T/second_no_file.err" \
  && ok "with its .lock deleted the run dir stays locked (exit 2)" \
  || fail "second_no_file: exit $RC: $(head -3 "$T/second_no_file.err")"
[ "$(wc -l <"$RUN/events.jsonl")" -eq "$lines_before" ] && ok "nor did a job after the lock file was deleted" \
  || fail "a job wrote to events.jsonl after .lock was deleted: $(tail -2 "$RUN/events.jsonl")"
# A resilience run on the same run dir clears it for a fresh job: it must refuse before touching it (it used
# to delete the running job's event log, which then stopped, and exit 0 itself).
run_capture supervised fb resilience --launcher none --model tiny-dense --layers 1 --steps 4 --faults none \
  --run-dir "$RUN" -o "$T/supervised.json"
# (The holder's text went with the deleted .lock: "another job".)
[ "$RC" -eq 2 ] && grep -q "^factorybench: error: --run-dir $RUN is in use by another job (its lock $RUN/.lock): stop that job, or choose another --run-dir$" "$T/supervised.err" \
  && [ ! -e "$T/supervised.json" ] && ok "resilience on a run dir in use: exit 2, no report" \
  || fail "supervised: exit $RC: $(head -3 "$T/supervised.err")"
[ "$(wc -l <"$RUN/events.jsonl")" -eq "$lines_before" ] && ok "the resilience run left the event log alone" \
  || fail "events.jsonl changed: $(wc -l <"$RUN/events.jsonl") lines, was $lines_before"

grep -q '^shard 2 ' "$T/marks" && [ ! -e "$RUN/checkpoints/step-00000002/manifest.json" ] \
  && ok "the first job was still in its save through every check" \
  || fail "the first job's save ended before the checks did: $(ls "$RUN/checkpoints" 2>&1)"
touch "$T/release"
RC=0
wait "$job" || RC=$?
[ "$RC" -eq 0 ] && ok "the first job finished (exit 0)" || fail "first: exit $RC: $(stderr_summary "$T/first.err")"

# Free once the holder has ended, also when it was killed with SIGKILL.
run_capture third fb_mpirun 2 "${TRAIN[@]}" --steps 6 --resume
[ "$RC" -eq 0 ] && ok "after the first job ended the run dir is free" || fail "third: exit $RC: $(stderr_summary "$T/third.err")"
KILLED=(train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 2 --run-dir "$T/killed")
"$FACTORYBENCH" "${KILLED[@]}" --steps 100000 >/dev/null 2>&1 &
killed=$!
for _ in $(seq 1 200); do [ -e "$T/killed/events.jsonl" ] && break; sleep 0.05; done
kill -9 "$killed"
wait "$killed" 2>/dev/null || true
run_capture after_kill fb "${KILLED[@]}" --steps 2 --resume
[ "$RC" -eq 0 ] && ok "a SIGKILLed holder leaves no stale lock" || fail "after_kill: exit $RC: $(stderr_summary "$T/after_kill.err")"
# A lock wait that is not a number of seconds is named, not replaced by the default, before anything is made.
for bad in abc -1 1e9 nan; do
  FACTORYBENCH_RUN_DIR_LOCK_WAIT=$bad expect_error "lock_wait_$bad" 2 \
    "^factorybench: error: invalid FACTORYBENCH_RUN_DIR_LOCK_WAIT '$bad': expected seconds" \
    fb train --backend host --model tiny-dense --layers 1 --steps 2 --run-dir "$T/bad_wait"
done
[ ! -e "$T/bad_wait" ] && ok "a bad lock wait makes no run dir" || fail "a bad lock wait made $T/bad_wait"
# A placement file whose slot is bad for one rank only: every rank checks every slot, so the job stops
# with one line instead of rank 1 stopping alone and rank 0 waiting for it forever.
mkdir -p "$T/placement" && echo '{"slots": [0, "x"]}' >"$T/placement/placement.json"
run_capture placement timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" train --backend host --model tiny-dense \
  --layers 1 --steps 2 --checkpoint-every 1 --run-dir "$T/placement"
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -q "placement.json: slots\[1\] is not a slot number" "$T/placement.err" \
  && ok "a placement slot bad for rank 1 stops both ranks with one line" || fail "placement: exit $RC: $(stderr_summary "$T/placement.err")"
finish
