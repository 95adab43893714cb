#!/usr/bin/env bash
# A run dir removed or moved under a running job (an rm -rf of the wrong directory, a cleanup cron, an mv to
# archive it): training on would log into a file nobody reads where it is looked for, with its lock gone and checkpoints recreated where no event says they are. train
# stops at the next step with one line naming the run dir, exit 3, no report; the resilience supervisor stops
# its attempt the same way and does not relaunch it.
. "$(dirname "$0")/../lib.sh"

# remove_under NAME DIR CMD...: starts CMD in the background, removes DIR (moves it to DIR.moved when
# MOVE=1) once the job has logged a step, and waits for the job to stop (at most 120 s); RC is its exit
# status, stderr in $T/NAME.err.
remove_under() {
  local name=$1 dir=$2; shift 2
  "$@" >"$T/$name.out" 2>"$T/$name.err" &
  local job=$!
  for _ in $(seq 1 600); do grep -q '"type":"step"' "$dir/events.jsonl" 2>/dev/null && break; sleep 0.05; done
  grep -q '"type":"step"' "$dir/events.jsonl" || { kill -9 "$job"; die "$name never logged a step"; }
  if [ "${MOVE:-0}" = 1 ]; then mv "$dir" "$dir.moved"; else rm -rf "$dir"; fi
  timeout 120 tail --pid="$job" -f /dev/null || { kill -9 "$job"; die "$name did not stop after its run dir was removed"; }
  RC=0
  wait "$job" || RC=$?
}

remove_under train "$T/train" "$FACTORYBENCH" train --backend host --model tiny-dense --layers 1 --steps 1000000 \
  --checkpoint-every 20 --run-dir "$T/train" -o "$T/train.json"
[ "$RC" -eq 3 ] && grep -q "^factorybench: error: --run-dir $T/train: its event log is no longer there (the run dir removed, moved or replaced during the run?); the job stops at step [0-9]* rather than train on without its event log and lock$" "$T/train.err" \
  && ok "train: exit 3 naming the run dir" || fail "train: exit $RC: $(stderr_summary "$T/train.err")"
[ ! -e "$T/train.json" ] && ok "train: no report" || fail "train: a report was written"
# Moved, not removed: the old file still has its link, under another name.
MOVE=1 remove_under moved "$T/moved" "$FACTORYBENCH" train --backend host --model tiny-dense --layers 1 --steps 1000000 \
  --checkpoint-every 20 --run-dir "$T/moved" -o "$T/moved.json"
[ "$RC" -eq 3 ] && grep -q "^factorybench: error: --run-dir $T/moved: its event log is no longer there" "$T/moved.err" \
  && ok "train: a moved run dir stops the job, exit 3" || fail "train, moved: exit $RC: $(stderr_summary "$T/moved.err")"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
remove_under res "$T/res" "$FACTORYBENCH" resilience --backend host --ranks 2 --model tiny-dense --steps 1000000 \
  --checkpoint-every 50 --faults none --run-dir "$T/res" -o "$T/res.json"
[ "$RC" -eq 3 ] && grep -q "^factorybench: error: --run-dir $T/res: its event log is no longer there (the run dir removed, moved or replaced during the run?); attempt 1 was stopped, and no relaunch follows" "$T/res.err" \
  && ok "resilience: exit 3 naming the run dir and the attempt" || fail "resilience: exit $RC: $(stderr_summary "$T/res.err")"
! grep -q "attempt 2" "$T/res.err" && ok "resilience: no relaunch" || fail "resilience relaunched: $(cat "$T/res.err")"
[ ! -e "$T/res.json" ] && ok "resilience: no report" || fail "resilience: a report was written"
for _ in $(seq 100); do pgrep -f "$T/res" >/dev/null || break; sleep 0.2; done  # the ranks end by themselves
[ -z "$(pgrep -f "$T/res" || true)" ] && ok "resilience: no rank outlives the job" || fail "left running: $(pgrep -af "$T/res")"
finish
