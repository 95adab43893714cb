#!/usr/bin/env bash
# An attempt killed after its final checkpoint committed (a rank dying at teardown, a launcher hanging on
# exit): the relaunch resumes at the last step, has nothing left to train, and the job is complete. The
# supervisor used to read that relaunch as one that trained nothing, relaunch until its restarts ran out and
# report a finished job as FAILED.
. "$(dirname "$0")/../lib.sh"
cd "$T"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RD="$T/rd"
# Checkpoints at 3, 6 and 9 with --keep 1: committing step 9 (the last) prunes step 3, where the test hook
# holds rank 0 for 20 s and marks the moment. The attempt is killed there.
FACTORYBENCH_TEST_CKPT_PAUSE="prune=20@3" FACTORYBENCH_TEST_CKPT_MARK="$T/mark" \
  "$FACTORYBENCH" resilience --backend host --ranks 2 --launcher-args=--oversubscribe --model tiny-dense --steps 9 \
  --checkpoint-every 3 --keep 1 --max-restarts 2 --faults none --run-dir "$RD" -o "$T/r.json" >"$T/r.out" 2>"$T/r.err" &
sup=$!
for _ in $(seq 240); do grep -q "^prune 3 " "$T/mark" 2>/dev/null && break; sleep 0.25; done
grep -q "^prune 3 " "$T/mark" 2>/dev/null || { kill -9 $sup 2>/dev/null; die "the final checkpoint was never committed"; }
pkill -9 -f "factorybench train .*--run-dir $RD" || true
rc=0; wait $sup || rc=$?
[ "$rc" -eq 0 ] && ok "the job finished: exit 0" || fail "exit $rc: $(grep -E 'FAILED|failure' "$T/r.out" | head -3)"
validate "$T/r.json"
assert_json "$T/r.json" "d['results'][0]['metrics']['steps_completed']['value'] == 9" "all 9 steps completed"
assert_json "$T/r.json" "d['results'][0]['status'] == 'ok'" "the result is ok"
assert_json "$T/r.json" "d['results'][0]['metrics']['failures']['value'] == 1" "one failure: the killed attempt"
pgrep -f "$RD" >/dev/null && fail "processes left running" || ok "nothing left running"
finish
