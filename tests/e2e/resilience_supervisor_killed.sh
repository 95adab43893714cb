#!/usr/bin/env bash
# The supervisor killed from outside (SIGKILL: the OOM killer, a scancel, a timeout) or stopped by Ctrl-C
# (SIGINT) takes its training job with it: the launcher carries a parent-death signal, so no rank trains on,
# unaccounted for, in the run dir. The supervisor's status is the signal's (128 + its number).
. "$(dirname "$0")/../lib.sh"
cd "$T"
set -m  # background jobs keep SIGINT (a script's background jobs otherwise ignore it)
declare -A expect_rc=([KILL]=137 [TERM]=143 [INT]=130)

for sig in KILL TERM INT; do
  "$FACTORYBENCH" resilience --ranks 2 --launcher-args "--oversubscribe" --model tiny-dense --steps 100000 --checkpoint-every 1000 \
    --faults "crash@step=99999,rank=1" --run-dir "$T/run-$sig" -o "$T/$sig.json" >"$T/$sig.out" 2>&1 &
  sup=$!
  for _ in $(seq 1 120); do  # until the job has trained a step
    grep -q '"type":"step"' "$T/run-$sig/events.jsonl" 2>/dev/null && break
    sleep 0.5
  done
  grep -q '"type":"step"' "$T/run-$sig/events.jsonl" 2>/dev/null || { kill -9 "$sup"; die "$sig: the job never trained a step"; }
  kill -"$sig" "$sup"
  wait "$sup" 2>/dev/null
  rc=$?
  [ "$rc" = "${expect_rc[$sig]}" ] || fail "SIG$sig to the supervisor: exit $rc, expected ${expect_rc[$sig]}"
  [ ! -e "$T/$sig.json" ] || fail "SIG$sig to the supervisor: it wrote a report of an unfinished job"
  gone=0
  for _ in $(seq 1 120); do  # mpirun ends its ranks on SIGTERM within seconds
    if ! pgrep -f -- "--run-dir $T/run-$sig" >/dev/null; then gone=1; break; fi
    sleep 0.5
  done
  if [ "$gone" = 1 ]; then
    ok "SIG$sig to the supervisor: no rank or launcher left running"
  else
    fail "SIG$sig to the supervisor: still running: $(pgrep -af -- "--run-dir $T/run-$sig" | cut -c1-160)"
    pkill -9 -f -- "--run-dir $T/run-$sig"
  fi
done
finish
