#!/usr/bin/env bash
# Issue 16, finding 1 on host, deterministically: the H200 plan (async saves, crash at 12, ckpt-corrupt at 16
# while the step-15 save is in flight, hang at 22 while the step-20 save is in flight) with the writer paused
# in its shard phase (FACTORYBENCH_TEST_CKPT_PAUSE) so each save spans several steps, as 7–9 s writes of
# 11.5 GB did there. On the H200 the step-15 checkpoint was unusable at the third attempt; here a second
# ckpt-corrupt at step 21 (step-20 save in flight) damages it. The corrupt fault at 16 hit step 10 (the
# newest committed one then), and the commit of 15 pruned step 5 counting the damaged 10 as kept: the third
# attempt then had nothing to restore. The fix: --keep counts verified checkpoints only, so 5 survives and
# the third attempt resumes from it.
. "$(dirname "$0")/../lib.sh"
set -e

export FACTORYBENCH_TEST_CKPT_PAUSE="shard=1.5"
export FACTORYBENCH_TEST_CKPT_MARK="$T/pauses"
run_capture loss fb resilience --backend host --launcher mpirun --launcher-args "--oversubscribe" --ranks 1 \
  --model tiny-dense --steps 30 --checkpoint-every 5 --async-checkpoint --state-bytes 1MiB --max-restarts 4 \
  --hang-timeout 6s --heartbeat-timeout 60s \
  --faults 'crash@step=12,rank=0;ckpt-corrupt@step=16;ckpt-corrupt@step=21;hang@step=22,rank=0' \
  --run-dir "$T/run" -o "$T/loss.json"
[ "$RC" -eq 0 ] || { cat "$T/loss.out" "$T/loss.err" >&2; die "resilience run failed with exit $RC"; }
cat "$T/loss.out"
grep -q '^shard ' "$T/pauses" && ok "the shard-phase pause was applied" || fail "no shard-phase pause"
L='d["results"][0]["extra"]["ledger"]'
E=$T/run/events.jsonl
ev() { "$PY" -c "import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print($1)" "$E"; }
# The timeline the H200 showed: 15's save still in flight when the fault at 16 fired, 20's when the hang hit.
[ "$(ev "[e['checkpoint'] for e in d if e['type'] == 'fault_injected' and e['kind'] == 'ckpt-corrupt']")" = \
  "['step-00000010', 'step-00000015']" ] && ok "ckpt-corrupt at 16 damaged step 10 (15 in flight), at 21 step 15 (20 in flight)" \
  || fail "corrupt faults hit $(ev "[e.get('checkpoint') for e in d if e['type'] == 'fault_injected' and e['kind'] == 'ckpt-corrupt']")"
assert_json "$T/loss.json" "d['results'][0]['metrics']['steps_completed']['value'] == 30" "reaches step 30"
assert_json "$T/loss.json" "$L['checkpoints']['restored_steps'] == [0, 5, 5]" "restores from 5 then 5: attempt 3 walks back past the damaged 15 and 10 to 5, not to 0 (got $(json "$T/loss.json" "$L['checkpoints']['restored_steps']"))"
[ "$(ev "[c for e in d if e['type'] == 'ckpt_commit' and e['attempt'] == 2 for c in e['pruned']]")" = "[]" ] \
  && ok "attempt 2 pruned nothing: step 10 no longer verifies, so 5 is one of the 2 kept" \
  || fail "attempt 2 pruned $(ev "[c for e in d if e['type'] == 'ckpt_commit' and e['attempt'] == 2 for c in e['pruned']]")"
finish
