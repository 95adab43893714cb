#!/usr/bin/env bash
# A shard damaged after its write but before the manifest commits it (held in the manifest phase by
# FACTORYBENCH_TEST_CKPT_PAUSE, 4 s: longer than the 3 s floor of the auto step timeout) must not cost the
# previous checkpoint, even with --keep 1: the commit's prune does not count the checkpoint it has just
# committed (nothing has read it back). It used to count it on its sizes alone, prune step 3, and leave only
# the damaged step 6, so the resume started from scratch. With --async-checkpoint the commit happens in a
# later step; it used to be timed against the step timeout and end the job as a hang (exit 75).
. "$(dirname "$0")/../lib.sh"

for mode in sync async; do
  extra=()
  [ "$mode" = async ] && extra=(--async-checkpoint)
  RUN=$T/$mode
  TRAIN=(train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 3 --keep 1
    --state-bytes 1M --run-dir "$RUN" "${extra[@]}")
  rm -f "$T/marks"
  FACTORYBENCH_TEST_CKPT_PAUSE="manifest=4@6" FACTORYBENCH_TEST_CKPT_MARK=$T/marks \
    mpirun --oversubscribe -x FACTORYBENCH_TEST_CKPT_PAUSE -x FACTORYBENCH_TEST_CKPT_MARK -np 2 \
    "$FACTORYBENCH" "${TRAIN[@]}" --steps 8 >"$T/$mode.out" 2>"$T/$mode.err" &
  job=$!
  for _ in $(seq 1 2400); do grep -q '^manifest 6 ' "$T/marks" 2>/dev/null && break; sleep 0.05; done
  grep -q '^manifest 6 ' "$T/marks" || { kill -9 "$job" 2>/dev/null; die "$mode: the commit of step 6 never started"; }
  flip_middle "$RUN/checkpoints/step-00000006/rank-00001.shard"
  RC=0
  wait "$job" || RC=$?  # run_capture leaves errexit on
  [ "$RC" -eq 0 ] && ok "$mode: a 4 s commit is not a hang (exit 0)" || fail "$mode: exit $RC: $(stderr_summary "$T/$mode.err")"
  E=$RUN/events.jsonl
  "$PY" - "$E" <<'PYEOF' && ok "$mode: committing 6 pruned nothing; step 3 stays" || fail "$mode: $(grep ckpt_commit "$E" | cut -c1-300)"
import json, sys
commits = [e for e in map(json.loads, open(sys.argv[1])) if e["type"] == "ckpt_commit"]
six = [e for e in commits if e["step"] == 6]
sys.exit(0 if six and six[0]["pruned"] == [] else 1)
PYEOF
  [ -e "$RUN/checkpoints/step-00000003/manifest.json" ] && ok "$mode: step 3 still committed" || fail "$mode: step 3 gone: $(ls "$RUN/checkpoints")"
  run_capture "$mode.resume" fb_mpirun 2 "${TRAIN[@]}" --steps 8 --resume
  [ "$RC" -eq 0 ] || fail "$mode: resume exit $RC: $(stderr_summary "$T/$mode.resume.err")"
  "$PY" - "$E" <<'PYEOF' && ok "$mode: the resume skips the damaged 6 and restores 3" || fail "$mode: $(grep ckpt_restore_end "$E" | tail -1 | cut -c1-400)"
import json, sys
end = [e for e in map(json.loads, open(sys.argv[1])) if e["type"] == "ckpt_restore_end"][-1]
skipped = {s["checkpoint"]: s["reason"] for s in end["skipped"]}
sys.exit(0 if end["step"] == 3 and "rank-00001.shard checksum mismatch" in skipped.get("step-00000006", "") else 1)
PYEOF
done
finish
