#!/usr/bin/env bash
# factorybench resilience, the drain policy's options whose faults are timed by the clock or judged by relative
# speed: --policy compare on a random plan with a flaky rank (the plan's faults are due at job times), and
# straggler drain (a straggler is a rank slower than the others by a factor). ctest runs this alone
# (RUN_SERIAL, tests/CMakeLists.txt) so that a test beside it cannot look like a straggler or delay the plan.
# No assertion on speed: only on what happened.
. "$(dirname "$0")/../lib.sh"
set -e

COMMON=(--launcher mpirun --launcher-args "--oversubscribe" --model tiny-dense --backend host
        --hang-timeout 4s --heartbeat-timeout 60s)

# --- --policy compare on a random plan with a flaky rank -----------------------------------------------------
# Every fault lands on the one flaky rank (flaky-share=1): with drain, its first failure moves it to the spare
# and no fault follows; with none, it keeps failing. Same seed, same plan for both: seed 69 puts crashes on slot 2
# at 0.5, 1.0 and 14.4 s of job time. Both early ones are due before the first attempt's first step; the first
# kills that attempt, the second fires at the next attempt's first step (a fault due while the job is down fires
# then), so none fails at least twice however fast the machine is (an earlier seed relied on 200 steps taking
# longer than 5.8 s and failed on a fast CI runner).
MAX_RESTARTS=10 run_resilience compare --ranks 4 --steps 200 --checkpoint-every 10 --policy compare --spares 1 \
  --drain-after 1 --straggler-threshold 0.2 --faults "random:mtbf=8s,mix=crash:0.8/nan:0.2,flaky-ranks=1,flaky-share=1,seed=69"
cat "$T/compare.out"
N='[r for r in d["results"] if r["params"]["policy"] == "none"][0]'
D='[r for r in d["results"] if r["params"]["policy"] == "drain"][0]'
assert_json "$T/compare.json" "len(d['results']) == 2 and all(r['metrics']['steps_completed']['value'] == 200 for r in d['results'])" "compare: both policies finish"
assert_json "$T/compare.json" "$N['metrics']['failures']['value'] >= 2 and len({f['rank'] for f in $N['extra']['ledger']['failure_list']}) == 1" "compare: none keeps failing on the flaky rank"
assert_json "$T/compare.json" "$D['metrics']['failures']['value'] == 1 and len($D['extra']['drains']) == 1 and $D['extra']['drains'][0]['cause'] == 'failures'" "compare: drain fails once, drains that rank to the spare"
assert_json "$T/compare.json" "$D['extra']['drains'][0]['rank'] == $D['extra']['ledger']['failure_list'][0]['rank'] == $N['extra']['ledger']['failure_list'][0]['rank'] and $D['extra']['drains'][0]['to_slot'] == 4" "compare: the drained rank is the flaky one (same seed), moved to spare slot 4"
assert_json "$T/compare.json" "not [e for e in d['events'] if e.get('policy') == 'drain' and e['type'] == 'fault_injected' and e['t'] > $D['extra']['drains'][0]['t']]" "compare: no fault after the drain (the spare does not inherit them)"
assert_json "$T/compare.json" "abs(d['summary']['compare']['mttf_ratio'] - $D['metrics']['mttf_s']['value'] / $N['metrics']['mttf_s']['value']) < 1e-9 and d['summary']['compare']['mttf_ratio'] > 1" "compare: MTTF ratio drain/none reported (> 1)"
assert_json "$T/compare.json" "abs(d['summary']['compare']['goodput_pct_difference'] - ($D['metrics']['goodput_pct']['value'] - $N['metrics']['goodput_pct']['value'])) < 1e-6" "compare: goodput difference reported"
assert_json "$T/compare.json" "$D['extra']['mttf_before_drain_s'] > 0 and $D['extra']['mttf_after_drain_s'] > 0" "compare: MTTF before and after draining"
assert_json "$T/compare.json" "d['summary']['totals_policy'] == 'drain' and abs(d['summary']['wall_s'] - $D['extra']['ledger']['wall_s']) < 1e-9" "compare: the summary's totals are named as the drain job's, and are its"
grep -qE '^drain vs none: MTTF x[0-9.]+, goodput [+-][0-9.]+ points$' "$T/compare.out" && ok "compare: printed" || fail "compare line: $(tail -1 "$T/compare.out")"
# --- drain for straggling -------------------------------------------------------------------------------------
# A job that never fails still loses its straggler: once the slot's straggler reports reach --drain-after, the
# supervisor asks the job (RUN_DIR/drain-request) to checkpoint and stop at its next step; the relaunch puts the
# rank on the spare and resumes from that step, so no step is lost. The restart counts under "drain".
run_resilience stragdrain --ranks 2 --steps 40 --checkpoint-every 10 --policy drain --spares 1 --drain-after 2 \
  --faults "straggler@step=3,rank=1,factor=6"
S="d['results'][0]"
assert_json "$T/stragdrain.json" "[(x['rank'], x['cause'], x['to_slot']) for x in $S['extra']['drains']] == [(1, 'straggler', 2)]" "straggler drain: rank 1 to the spare, cause straggler"
assert_json "$T/stragdrain.json" "[e['reason'] for e in d['events'] if e['type'] == 'attempt_end'] == ['drain', 'completed']" "straggler drain: the first attempt stopped for it, the second completed"
assert_json "$T/stragdrain.json" "$S['extra']['mttf_before_drain_s'] is None and $S['extra']['mttf_after_drain_s'] is None" "straggler drain: no failure splits the log, no MTTF either side (null, not 0)"
assert_json "$T/stragdrain.json" "[e['last_step'] for e in d['events'] if e['type'] == 'attempt_end'][0] == [e['step'] for e in d['events'] if e['type'] == 'ckpt_restore_end'][-1] > 0" "straggler drain: the relaunch resumes from the step the job stopped at (checkpointed)"
assert_json "$T/stragdrain.json" "$S['extra']['ledger']['restarts_by_kind'] == {'drain': 1} and $S['metrics']['failures']['value'] == 0 and $S['metrics']['wasted_steps']['value'] == 0 and $S['metrics']['steps_completed']['value'] == 40" "straggler drain: no failure, no step lost, one restart for the drain"
assert_json "$T/stragdrain.json" "$S['extra']['ledger']['split_s']['relaunch'] > 0" "straggler drain: its relaunch time is accounted"
[ ! -e "$T/stragdrain/drain-request" ] && ok "straggler drain: no request left in the run dir" || fail "drain-request left behind"
# A straggler first seen at the job's last step (its only straggler check, --check-every 10): the job ends before
# it can stop, the slot is not drained, and the supervisor says so. Factor 20: its one check must see it (at 6
# a loaded clean-clone run missed it once).
run_resilience stragkept --ranks 2 --steps 10 --checkpoint-every 5 --check-every 10 --policy drain --spares 1 --drain-after 1 --faults "straggler@step=9,rank=1,factor=20"
assert_json "$T/stragkept.json" "not $S['extra'].get('drains')" "late straggler: not drained"
grep -q "slot 1 (rank 1) failed or straggled [0-9]* time(s) (--drain-after 1) but was not drained: the job ended before it could stop" "$T/stragkept.err" \
  && ok "late straggler: named on stderr" || fail "stragkept stderr: $(cat "$T/stragkept.err")"

finish
