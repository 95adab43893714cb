#!/usr/bin/env bash
# A slow, healthy checkpoint save is not a hang: the watchdog gives a save (and the wait for an async one) an
# allowance of its own (max(step timeout, 60 s, 10 x the longest save)). A save held 5 s in its shard phase,
# longer than the 3 s floor of the auto step timeout, used to end the job with exit 75 and a "hang".
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
finish
