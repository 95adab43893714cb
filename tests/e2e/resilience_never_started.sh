#!/usr/bin/env bash
# Issue 16 finding 3: a job whose launcher fails (here an option mpirun does not know) never starts. The
# report says so in figures that agree: ETTR 0, goodput 0, no failure of the job (no MTTF), two launch
# failures carrying the launcher's own message, the wall time partitioned, exit 1 with the reason.
. "$(dirname "$0")/../lib.sh"
set -e

run_capture bad fb resilience --backend host --ranks 2 --launcher mpirun --launcher-args "--no-such-mpirun-option" \
  --steps 4 --faults "crash@step=2,rank=1" --run-dir "$T/bad" --output "$T/bad.json"
[ "$RC" -eq 1 ] && ok "exit 1" || fail "exit $RC: $(cat "$T/bad.err")"
validate "$T/bad.json"
R='d["results"][0]'
L="$R[\"extra\"][\"ledger\"]"
assert_json "$T/bad.json" "$R['metrics']['ettr']['value'] == 0 and $R['metrics']['goodput_pct']['value'] == 0 and $R['metrics']['steps_completed']['value'] == 0" "ETTR 0, goodput 0, no step"
assert_json "$T/bad.json" "$R['metrics']['failures']['value'] == 0 and $L['failure_list'] == [] and $L['failures_by_kind'] == {} and $L['mttf_censored']" "no failure of the job, nothing in MTTF"
assert_json "$T/bad.json" "$R['metrics']['launch_failures']['value'] == 2 and [f['attempt'] for f in $L['launch_failure_list']] == [1, 2] and all(f['kind'] == 'launch' for f in $L['launch_failure_list'])" "two launch failures"
assert_json "$T/bad.json" "all('unknown option' in f['how'] and 'no-such-mpirun-option' in f['how'] for f in $L['launch_failure_list'])" "each with the launcher's message"
assert_json "$T/bad.json" "'failed before any rank started' in $R['error'] and 'no-such-mpirun-option' in $R['error']" "the result's error names the launcher's complaint"
assert_json "$T/bad.json" "not any(e['type'] == 'failure_detected' and e['kind'] == 'crash' for e in d['events'])" "no crash in the event log"
assert_json "$T/bad.json" "abs(sum($L['split_s'].values()) - $L['wall_s']) <= 1e-6 * max($L['wall_s'], 1)" "the split partitions the wall time"
assert_json "$T/bad.json" "abs(d['summary']['productive_s'] + sum(d['summary']['badput_s'].values()) - d['summary']['wall_s']) <= 1e-6 * max(d['summary']['wall_s'], 1)" "summary: productive + badput = wall"
grep -q "launch failed (attempt 1), no rank started: .*unknown option" "$T/bad.out" && ok "console names the launch failure" \
  || fail "console: $(cat "$T/bad.out")"
finish
