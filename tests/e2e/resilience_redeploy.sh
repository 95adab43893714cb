#!/usr/bin/env bash
# A redeploy during a supervised run: a new build renamed over the binary (what `install` and package
# managers do). The relaunch after the next failure runs the binary at the path the job started from, now the
# new one, and says so; it used to exec "/proc/self/exe", by then "PATH (deleted)", and every relaunch failed.
. "$(dirname "$0")/../lib.sh"
cd "$T"
export FACTORYBENCH_CONFIG_DIR="$FB_SOURCE_DIR/configs"  # the copy lives outside the build tree

cp "$FACTORYBENCH" "$T/fb"
cp "$FACTORYBENCH" "$T/fb.new"  # copied now, so that only the rename falls inside the hang's 8 s
"$T/fb" resilience --ranks 2 --launcher-args "--oversubscribe" --backend host --model tiny-dense --steps 20 \
  --checkpoint-every 5 --faults "hang@step=12,rank=1" --hang-timeout 8s --run-dir "$T/run" -o "$T/r.json" \
  >"$T/r.out" 2>"$T/r.err" &
sup=$!
for _ in $(seq 1 240); do  # until the hang was injected: the supervisor waits --hang-timeout to detect it
  grep -q '"type":"fault_injected"' "$T/run/events.jsonl" 2>/dev/null && break
  sleep 0.25
done
grep -q '"type":"fault_injected"' "$T/run/events.jsonl" 2>/dev/null || { kill -9 "$sup"; die "the hang was never injected"; }
mv "$T/fb.new" "$T/fb"  # the redeploy: a new inode at the same path
wait "$sup"
rc=$?
[ "$rc" -eq 0 ] && ok "the run finished after the redeploy (exit 0)" || fail "exit $rc: $(tail -3 "$T/r.err" "$T/r.out")"
assert_json "$T/r.json" "d['results'][0]['metrics']['steps_completed']['value'] == 20 and d['results'][0]['metrics']['restarts']['value'] == 1" "all 20 steps, one relaunch"
grep -q "supervisor: $T/fb was replaced since the job started; this attempt runs the new binary" "$T/r.err" \
  && ok "the relaunch says it runs the new binary" || fail "no redeploy warning: $(cat "$T/r.err")"
finish
