#!/usr/bin/env bash
# The supervisor's --heartbeat-timeout inside a checkpoint save: a healthy save held longer than the
# heartbeat (the event log silent, rank 0's watchdog pulsing) is not a hang, where every attempt used to be
# killed in it until the restarts ran out (exit 1); a frozen job (SIGSTOP: log and pulse both stopped) is
# still killed and counted as a hang, named as the supervisor's. (A hang in a step is the supervisor's after
# the heartbeat as before: tests/e2e/slurm_cluster.sh.)
. "$(dirname "$0")/../lib.sh"
cd "$T"

# A save held 25 s at step 10 under a 10 s heartbeat (10 s, not less: the launch before init_done is covered
# by the event log alone, and under ctest's load on a 2-core CI machine it takes seconds).
run_capture slow_save env FACTORYBENCH_TEST_CKPT_PAUSE="shard=25@10" FACTORYBENCH_TEST_CKPT_MARK="$T/slow.marks" \
  timeout 300 "$FACTORYBENCH" resilience --ranks 2 --launcher-args "--oversubscribe" --model tiny-dense --steps 20 \
  --checkpoint-every 5 --faults none --heartbeat-timeout 10s --max-restarts 1 --run-dir "$T/slow" -o "$T/slow.json"
[ "$RC" -eq 0 ] && ok "a 25 s save under a 10 s heartbeat: exit 0" || fail "slow save: exit $RC: $(stderr_summary "$T/slow_save.err")"
! grep -q '"type":"failure_detected"' "$T/slow/events.jsonl" && ok "slow save: no failure detected" \
  || fail "slow save: $(grep failure_detected "$T/slow/events.jsonl" | cut -c1-300)"
grep '"type":"ckpt_commit"' "$T/slow/events.jsonl" | grep -q '"step":10' && ok "slow save: the held save of step 10 committed" \
  || fail "slow save: step 10 not committed"
# The save was held: both ranks paused in the shard phase of step 10, and it took the 25 s from its start to
# its commit (a run without the pause passed the checks above).
[ "$(sort "$T/slow.marks" 2>/dev/null)" = $'shard 10 0\nshard 10 1' ] && ok "slow save: both ranks held in the shard phase of step 10" \
  || fail "slow save: pause marks: '$(cat "$T/slow.marks" 2>&1)', expected shard 10 on ranks 0 and 1"
E=$T/slow/events.jsonl
"$PY" - "$E" <<'PYEOF' && ok "slow save: the save of step 10 took ≥ 25 s (ckpt_save_start to ckpt_commit)" || fail "slow save: the save of step 10 was not held 25 s: $(grep '"step":10' "$E" | grep '"type":"ckpt_' | cut -c1-300)"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
t = {e["type"]: e["t"] for e in events if e.get("step") == 10 and e["type"] in ("ckpt_save_start", "ckpt_commit")}
sys.exit(0 if len(t) == 2 and t["ckpt_commit"] - t["ckpt_save_start"] >= 25 else 1)
PYEOF

# A frozen job: one rank under --launcher none, stopped once it has trained a step. No restart is allowed, so
# the run ends at the supervisor's hang.
"$FACTORYBENCH" resilience --ranks 1 --launcher none --model tiny-dense --steps 1000000 --checkpoint-every 100000 \
  --faults none --heartbeat-timeout 8s --max-restarts 0 --run-dir "$T/frozen" -o "$T/frozen.json" \
  >"$T/frozen.out" 2>"$T/frozen.err" &
sup=$!
for _ in $(seq 1 120); do  # until the job has trained a step
  grep -q '"type":"step"' "$T/frozen/events.jsonl" 2>/dev/null && break
  sleep 0.5
done
grep -q '"type":"step"' "$T/frozen/events.jsonl" 2>/dev/null || { kill -9 "$sup"; die "frozen: the job never trained a step"; }
stopped=()
stop_tree() {  # SIGSTOP a process and everything under it
  local p
  for p in $(pgrep -P "$1"); do stop_tree "$p"; done
  kill -STOP "$1" 2>/dev/null && stopped+=("$1")
}
for child in $(pgrep -P "$sup"); do stop_tree "$child"; done
rc=0
for _ in $(seq 1 120); do  # the supervisor kills it after 3 s of silence
  kill -0 "$sup" 2>/dev/null || break
  sleep 0.5
done
if kill -0 "$sup" 2>/dev/null; then
  pkill -CONT -P "$sup"
  kill -9 "$sup"
  die "frozen: the supervisor did not end the frozen job within 60 s"
fi
wait "$sup" || rc=$?
# The supervisor killed the rank; what ran under it (the singleton's orted) is still stopped and would wait
# forever for a rank that is gone: let it go on, and see it gone.
kill -CONT "${stopped[@]}" 2>/dev/null || true
for _ in $(seq 1 20); do
  alive=$(for p in "${stopped[@]}"; do if kill -0 "$p" 2>/dev/null; then echo "$p"; fi; done)
  [ -z "$alive" ] && break
  sleep 0.25
done
[ -z "$alive" ] && ok "frozen job: nothing of it left running" || { fail "frozen: left running: $(ps -o pid,stat,args -p $alive)"; kill -9 $alive; }
[ "$rc" -eq 1 ] && ok "frozen job: killed, restarts exhausted (exit 1)" || fail "frozen: exit $rc: $(stderr_summary "$T/frozen.err")"
grep '"type":"failure_detected"' "$T/frozen/events.jsonl" | grep '"kind":"hang"' \
  | grep -q "supervisor: event log silent for 8 s; job killed" \
  && ok "frozen job: a hang, named as the supervisor's" \
  || fail "frozen: $(grep failure_detected "$T/frozen/events.jsonl" | cut -c1-300)"
finish
