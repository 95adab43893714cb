#!/usr/bin/env bash
# A run dir removed under a running job (an rm -rf of the wrong directory, a cleanup cron): training on would
# log into a deleted file, with its lock gone and checkpoints recreated where no event says they are. train
# stops at the next step with one line naming the run dir, exit 3, no report; the resilience supervisor stops
# its attempt the same way and does not relaunch it.
. "$(dirname "$0")/../lib.sh"

# Waits until the job in $1 has logged a step, then removes the directory.
remove_after_first_step() {
  for _ in $(seq 1 600); do grep -q '"type":"step"' "$1/events.jsonl" 2>/dev/null && break; sleep 0.05; done
  grep -q '"type":"step"' "$1/events.jsonl" || return 1
  rm -rf "$1"
}

"$FACTORYBENCH" train --backend host --model tiny-dense --layers 1 --steps 1000000 --checkpoint-every 20 \
  --run-dir "$T/train" -o "$T/train.json" >"$T/train.out" 2>"$T/train.err" &
job=$!
remove_after_first_step "$T/train" || { kill -9 "$job"; die "train never logged a step"; }
RC=0
timeout 120 tail --pid="$job" -f /dev/null || { kill -9 "$job"; die "train did not stop after its run dir was removed"; }
wait "$job" || RC=$?
[ "$RC" -eq 3 ] && grep -q "^factorybench: error: --run-dir $T/train: its event log was deleted during the run (the run dir removed or replaced?); the job stops at step [0-9]* rather than train on without its event log and lock$" "$T/train.err" \
  && ok "train: exit 3 naming the run dir" || fail "train: exit $RC: $(tail -3 "$T/train.err")"
[ ! -e "$T/train.json" ] && ok "train: no report" || fail "train: a report was written"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$FACTORYBENCH" resilience --backend host --ranks 2 --model tiny-dense --steps 1000000 --checkpoint-every 50 \
  --faults none --run-dir "$T/res" -o "$T/res.json" >"$T/res.out" 2>"$T/res.err" &
job=$!
remove_after_first_step "$T/res" || { kill -9 "$job"; die "resilience never logged a step"; }
RC=0
timeout 120 tail --pid="$job" -f /dev/null || { kill -9 "$job"; die "resilience did not stop after its run dir was removed"; }
wait "$job" || RC=$?
[ "$RC" -eq 3 ] && grep -q "^factorybench: error: --run-dir $T/res: its event log was deleted during the run (the run dir removed or replaced?); attempt 1 was stopped, and no relaunch follows" "$T/res.err" \
  && ok "resilience: exit 3 naming the run dir and the attempt" || fail "resilience: exit $RC: $(tail -3 "$T/res.err")"
! grep -q "attempt 2" "$T/res.err" && ok "resilience: no relaunch" || fail "resilience relaunched: $(cat "$T/res.err")"
[ ! -e "$T/res.json" ] && ok "resilience: no report" || fail "resilience: a report was written"
sleep 1
[ -z "$(pgrep -f "$T/res" || true)" ] && ok "resilience: no rank outlives the job" || fail "left running: $(pgrep -af "$T/res")"
finish
