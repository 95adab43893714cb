#!/usr/bin/env bash
# A slow, healthy checkpoint save (or restore) is not a hang: the watchdog gives a save (and the wait for an async one) an
# allowance of its own (max(step timeout, 60 s, 10 x the longest save)). A save held 5 s in its shard phase,
# longer than the 3 s floor of the auto step timeout, used to end the job with exit 75 and a "hang". A real hang
# still ends it, with one line on stderr; a failed save is a warning on the console.
. "$(dirname "$0")/../lib.sh"
cd "$T"

for mode in sync async; do
  extra=()
  [ "$mode" = async ] && extra=(--async-checkpoint)
  export FACTORYBENCH_TEST_CKPT_PAUSE="shard=5@6"
  run_capture "$mode" timeout 120 mpirun --oversubscribe -x FACTORYBENCH_TEST_CKPT_PAUSE -np 2 "$FACTORYBENCH" \
    train --backend host --model tiny-dense --steps 12 --warmup-steps 0 --checkpoint-every 3 --run-dir "$T/$mode" \
    "${extra[@]}" -o "$T/$mode.json"
  unset FACTORYBENCH_TEST_CKPT_PAUSE
  [ "$RC" -eq 0 ] && ok "$mode: a 5 s save finishes the run (exit 0)" || fail "$mode: exit $RC: $(tail -3 "$T/$mode.err")"
  ! grep -q '"type":"failure_detected"' "$T/$mode/events.jsonl" && ok "$mode: no failure detected" \
    || fail "$mode: $(grep failure_detected "$T/$mode/events.jsonl" | cut -c1-300)"
  grep '"type":"ckpt_commit"' "$T/$mode/events.jsonl" | grep -q '"step":6' && ok "$mode: the held save of step 6 committed" \
    || fail "$mode: step 6 not committed"
done

# A real hang still ends the job (exit 75), and train alone says so on stderr in one line.
run_capture hang fb train --backend host --model tiny-dense --steps 6 --warmup-steps 0 --faults hang@step=2 \
  --hang-timeout 3s --run-dir "$T/hang" -o "$T/hang.json"
[ "$RC" -eq 75 ] && grep -qx "factorybench: error: hang: watchdog on rank 0: no step completed in .* (exit 75; the timeline is in $T/hang/events.jsonl)" "$T/hang.err" \
  && ok "a hung step: exit 75 with one line on stderr" || fail "hang: exit $RC: $(cat "$T/hang.err")"
# The restore is watched too (it used to run before the watchdog started: a stalled read hung the job for
# good). A slow restore (5 s) finishes; one stalled past the checkpoint allowance (60 s at the least, and
# more for a large shard) ends the job with exit 75 and names the restore.
run_capture base fb train --backend host --model tiny-dense --steps 2 --warmup-steps 0 --checkpoint-every 2 \
  --run-dir "$T/restore" -o "$T/base.json"
[ "$RC" -eq 0 ] || fail "restore base run: exit $RC: $(cat "$T/base.err")"
run_capture slow_restore env FACTORYBENCH_TEST_CKPT_PAUSE="restore=5" "$FACTORYBENCH" train --backend host \
  --model tiny-dense --steps 3 --warmup-steps 0 --checkpoint-every 2 --hang-timeout 3s --resume \
  --run-dir "$T/restore" -o "$T/slow_restore.json"
[ "$RC" -eq 0 ] && ok "a 5 s restore is not a hang (exit 0)" || fail "slow restore: exit $RC: $(cat "$T/slow_restore.err")"
run_capture stalled_restore timeout 150 env FACTORYBENCH_TEST_CKPT_PAUSE="restore=300" "$FACTORYBENCH" train \
  --backend host --model tiny-dense --steps 4 --warmup-steps 0 --checkpoint-every 2 --hang-timeout 3s --resume \
  --run-dir "$T/restore" -o "$T/stalled_restore.json"
[ "$RC" -eq 75 ] && grep -q "factorybench: error: hang: watchdog on rank 0: the checkpoint restore has not finished in" "$T/stalled_restore.err" \
  && ok "a stalled restore: exit 75, named" || fail "stalled restore: exit $RC: $(cat "$T/stalled_restore.err")"
# A failed save is not fatal, but the console says so.
run_capture wfail fb train --backend host --model tiny-dense --steps 6 --warmup-steps 0 --checkpoint-every 2 \
  --faults ckpt-write-fail@step=4 --run-dir "$T/wfail" -o "$T/wfail.json"
[ "$RC" -eq 0 ] && grep -q "warning: checkpoint of step 4 not saved: the shard write failed on rank(s) 0 .*; the previous checkpoint stays the newest" "$T/wfail.err" \
  && ok "a failed save: a warning, the run goes on" || fail "wfail: exit $RC: $(cat "$T/wfail.err")"
finish
