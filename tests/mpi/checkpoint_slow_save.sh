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
  export FACTORYBENCH_TEST_CKPT_PAUSE="shard=5@6" FACTORYBENCH_TEST_CKPT_MARK=$T/$mode.marks
  run_capture "$mode" timeout 120 mpirun --oversubscribe -x FACTORYBENCH_TEST_CKPT_PAUSE -x FACTORYBENCH_TEST_CKPT_MARK \
    -np 2 "$FACTORYBENCH" train --backend host --model tiny-dense --steps 12 --warmup-steps 0 --checkpoint-every 3 \
    --run-dir "$T/$mode" "${extra[@]}" -o "$T/$mode.json"
  unset FACTORYBENCH_TEST_CKPT_PAUSE FACTORYBENCH_TEST_CKPT_MARK
  [ "$RC" -eq 0 ] && ok "$mode: a 5 s save finishes the run (exit 0)" || fail "$mode: exit $RC: $(stderr_summary "$T/$mode.err")"
  # The pause did happen: both ranks held in the shard phase of step 6 (and nowhere else), and the save of
  # step 6 took at least the 5 s from its start to its commit (a run without the pause passed the rest).
  [ "$(sort "$T/$mode.marks" 2>/dev/null)" = $'shard 6 0\nshard 6 1' ] && ok "$mode: both ranks held in the shard phase of step 6" \
    || fail "$mode: pause marks: '$(cat "$T/$mode.marks" 2>&1)', expected shard 6 on ranks 0 and 1"
  E=$T/$mode/events.jsonl
  "$PY" - "$E" <<'PYEOF' && ok "$mode: the save of step 6 took ≥ 5 s (ckpt_save_start to ckpt_commit)" || fail "$mode: the save of step 6 was not held 5 s: $(grep '"step":6' "$E" | grep '"type":"ckpt_' | cut -c1-300)"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
t = {e["type"]: e["t"] for e in events if e.get("step") == 6 and e["type"] in ("ckpt_save_start", "ckpt_commit")}
sys.exit(0 if len(t) == 2 and t["ckpt_commit"] - t["ckpt_save_start"] >= 5 else 1)
PYEOF
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
run_capture slow_restore env FACTORYBENCH_TEST_CKPT_PAUSE="restore=5" FACTORYBENCH_TEST_CKPT_MARK="$T/restore.marks" \
  "$FACTORYBENCH" train --backend host --model tiny-dense --steps 3 --warmup-steps 0 --checkpoint-every 2 \
  --hang-timeout 3s --resume --run-dir "$T/restore" -o "$T/slow_restore.json"
[ "$RC" -eq 0 ] && ok "a 5 s restore is not a hang (exit 0)" || fail "slow restore: exit $RC: $(cat "$T/slow_restore.err")"
# ... and it was held: the restore of step 2 paused, and its event took the 5 s.
[ "$(cat "$T/restore.marks" 2>/dev/null)" = "restore 2 0" ] \
  && grep '"type":"ckpt_restore_end"' "$T/restore/events.jsonl" | "$PY" -c "import json, sys; e = json.loads(sys.stdin.readline()); sys.exit(0 if e['step'] == 2 and e['seconds'] >= 5 else 1)" \
  && ok "slow restore: the restore of step 2 was held 5 s" \
  || fail "slow restore: not held: marks '$(cat "$T/restore.marks" 2>&1)', $(grep ckpt_restore_end "$T/restore/events.jsonl" | cut -c1-200)"
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
