#!/usr/bin/env bash
# factorybench resilience end to end: 4 host ranks under mpirun, real checkpoints, injected faults, the
# supervisor relaunching, and the goodput ledger (issue 6). Then each fault kind on its own.
. "$(dirname "$0")/../lib.sh"
set -e

COMMON=(--launcher mpirun --launcher-args "--oversubscribe" --model tiny-dense --backend host --max-restarts 6
        --hang-timeout 4s --heartbeat-timeout 60s)

# --- The issue's scenario ---------------------------------------------------------------------------------
FAULTS="crash@step=15,rank=1;hang@step=33,rank=2;ckpt-corrupt@step=40;crash@step=45,rank=3"
start=$(date +%s)
run_capture main fb resilience --ranks 4 "${COMMON[@]}" --steps 60 --checkpoint-every 10 --faults "$FAULTS" \
  --run-dir "$T/run" -o "$T/main.json"
elapsed=$(( $(date +%s) - start ))
[ "$RC" -eq 0 ] || { cat "$T/main.out" "$T/main.err" >&2; die "resilience run failed with exit $RC"; }
cat "$T/main.out"
validate "$T/main.json"
R='d["results"][0]'
L="$R[\"extra\"][\"ledger\"]"
assert_json "$T/main.json" "$R['metrics']['steps_completed']['value'] == 60" "reaches step 60"
# The hang alone keeps the job 4 s without a step: the supervisor says where the job is (stderr) before then.
grep -qE "^resilience: [0-9]+% \(step [0-9]+/60, attempt [0-9]+\), .* elapsed" "$T/main.err" \
  && ok "supervisor progress: $(grep -m1 '^resilience: [0-9]' "$T/main.err")" || fail "no supervisor progress: $(cat "$T/main.err")"
assert_json "$T/main.json" "$R['metrics']['failures']['value'] == 3" "3 failures"
assert_json "$T/main.json" "$R['metrics']['restarts']['value'] == 3" "3 restarts"
assert_json "$T/main.json" "$L['checkpoints']['restored_steps'] == [0, 10, 30, 30]" "restores from 10, 30, 30"
assert_json "$T/main.json" "any(s['checkpoint'] == 'step-00000040' and 'checksum mismatch' in s['reason'] for s in $L['checkpoints']['skipped'])" "corrupt step-40 checkpoint skipped with its reason"
assert_json "$T/main.json" "$R['metrics']['wasted_steps']['value'] == 20" "20 wasted steps (11-14, 31-32, 31-44)"
assert_json "$T/main.json" "[f['kind'] for f in $L['failure_list']] == ['crash', 'hang', 'crash']" "failure kinds crash, hang, crash"
assert_json "$T/main.json" "[f['rank'] for f in $L['failure_list']] == [1, 2, 3]" "failure ranks 1, 2, 3"
assert_json "$T/main.json" "abs(sum($L['split_s'].values()) - $L['wall_s']) <= 0.01 * $L['wall_s']" "badput parts sum to the wall time within 1%"
assert_json "$T/main.json" "abs(sum(d['summary']['badput_s'].values()) + $L['split_s']['productive'] - $R['metrics']['wall_s']['value']) <= 0.01 * $R['metrics']['wall_s']['value']" "summary.badput_s + productive = wall"
assert_json "$T/main.json" "0 < $R['metrics']['goodput_pct']['value'] < 100 and 0 < $R['metrics']['ettr']['value'] <= 1" "goodput and ETTR in range"
assert_json "$T/main.json" "$R['metrics']['ckpt_write_gbps']['value'] > 0 and $R['metrics']['mttf_s']['value'] > 0 and $R['metrics']['mttf_s']['better'] == 'higher'" "checkpoint bandwidth and MTTF measured (failures: higher is better)"
assert_json "$T/main.json" "len(d['events']) > 60 and d['events'][0]['type'] == 'job_start' and d['events'][-1]['type'] == 'job_end'" "report carries the timeline"
pgrep -f "$T/run" >/dev/null && fail "ranks left running after the supervisor returned" || ok "no ranks left running"
echo "scenario took ${elapsed}s"

# --- Each fault kind on its own (2 ranks, 20 steps, checkpoint every 5) ------------------------------------
kind_run() {  # NAME FAULTS [RANKS]
  local name=$1 faults=$2 ranks=${3:-2}
  run_capture "$name" fb resilience --ranks "$ranks" "${COMMON[@]}" --steps 20 --checkpoint-every 5 --faults "$faults" \
    --run-dir "$T/$name" -o "$T/$name.json"
  [ "$RC" -eq 0 ] || { cat "$T/$name.out" "$T/$name.err" >&2; fail "$name: exit $RC"; return; }
  assert_json "$T/$name.json" "d['results'][0]['metrics']['steps_completed']['value'] == 20" "$name: completes"
}
failure_is() {  # NAME KIND RANK
  assert_json "$T/$1.json" "[(f['kind'], f['rank']) for f in d['results'][0]['extra']['ledger']['failure_list']][:1] == [('$2', $3)]" "$1: detected as $2 on rank $3"
}
kind_run crash "crash@step=7,rank=1";  failure_is crash crash 1
kind_run hang "hang@step=7,rank=1";    failure_is hang hang 1
# The step watchdog reads every rank's communication call state (<run dir>/calls/): rank 1 never entered the
# step's first call, the barrier rank 0 waits in.
H="[e for e in d['events'] if e['type'] == 'failure_detected' and e['kind'] == 'hang'][0]"
assert_json "$T/hang.json" "__import__('re').fullmatch(r'rank 1 \(host .+, GPU 1\) never entered barrier #\d+ \(0 B\)', $H['calls'][0]) and $H['calls'][0] in $H['how'] and __import__('re').fullmatch(r'rank 0 .* entered barrier #\d+ \(0 B\) and never left \(waited .+\)', $H['calls'][1])" \
  "hang: the watchdog names the call rank 1 never entered and the rank waiting in it"
# One rank: the watchdog has no peer's heartbeat to compare with; the hang is rank 0's (it read -1, "an
# unknown rank").
kind_run hang1 "hang@step=7" 1;        failure_is hang1 hang 0
kind_run sdc "sdc@step=7,rank=1" 3;    failure_is sdc sdc 1  # a vote needs a strict majority: 3 replicas
# Two replicas cannot name the bad one, but differ: detected all the same (rank -1) and rolled back.
kind_run sdc2 "sdc@step=7,rank=1" 2;   failure_is sdc2 sdc -1
assert_json "$T/sdc2.json" "d['results'][0]['extra']['ledger']['checkpoints']['restored_steps'][-1] == 5" "sdc with 2 replicas: rolled back to step 5"
# A standalone train whose check stopped it (sdc voted, a NaN even in a warm-up step) failed: exit 1 with the
# reason, not a short success (or SKIPPED) with exit 0.
run_capture train_sdc fb_mpirun 2 train --backend host --steps 10 --run-dir "$T/train_sdc" --checkpoint-every 5 \
  --faults "sdc@step=3,rank=1" -o "$T/train_sdc.json"
[ "$RC" -eq 1 ] && assert_json "$T/train_sdc.json" "d['results'][0]['status'] == 'failed' and 'silent data corruption detected at step 5' in d['results'][0]['error']" "train: sdc rollback fails the run" \
  || fail "train_sdc: exit $RC: $(tail -3 "$T/train_sdc.out")"
run_capture train_nan fb train --backend host --steps 10 --run-dir "$T/train_nan" --checkpoint-every 3 --faults nan@step=2 -o "$T/train_nan.json"
[ "$RC" -eq 1 ] && assert_json "$T/train_nan.json" "d['results'][0]['status'] == 'failed'" "train: a NaN in a warm-up step fails, not SKIPPED" \
  || fail "train_nan: exit $RC: $(tail -3 "$T/train_nan.out")"
# A failure never recovered has no repair time: no mttr_s (it read 0 s, the best value), "n/a" printed.
run_capture unrepaired fb resilience --ranks 1 --launcher none --backend host --steps 12 --checkpoint-every 4 \
  --faults crash@step=6 --max-restarts 0 --run-dir "$T/unrepaired" -o "$T/unrepaired.json"
assert_json "$T/unrepaired.json" "'mttr_s' not in d['results'][0]['metrics'] and d['results'][0]['extra']['ledger']['mttr_s'] is None and d['results'][0]['metrics']['failures']['value'] == 1" "unrepaired failure: no mttr_s, ledger's null"
grep -q "MTTR n/a (no failure recovered)" "$T/unrepaired.out" && ok "unrepaired failure: MTTR n/a printed" || fail "unrepaired: $(grep MTTR "$T/unrepaired.out")"
expect_error sdc_dp1 2 "--faults injects sdc, which nothing detects with --dp 1" \
  fb resilience --ranks 2 --tp 2 --faults "sdc@step=3,rank=1" --run-dir "$T/bad" -o "$T/bad.json"
kind_run nan "nan@step=7,rank=1";      failure_is nan nan 1  # the rank whose own loss was NaN before the all-reduce
assert_json "$T/sdc.json" "d['results'][0]['extra']['ledger']['checkpoints']['restored_steps'][-1] == 5" "sdc: rolled back to step 5"
kind_run straggler "straggler@step=3,rank=1,factor=6"
assert_json "$T/straggler.json" "any(e['type'] == 'straggler_detected' and e['rank'] == 1 for e in d['events'])" "straggler: detected on rank 1"
assert_json "$T/straggler.json" "d['results'][0]['metrics']['failures']['value'] == 0" "straggler: not a failure"
# A straggler for the rest of the job outlives a relaunch: the slot is slow, not the process (it was cured).
kind_run straggler_relaunch "straggler@step=3,rank=1,factor=6;crash@step=12,rank=0"
assert_json "$T/straggler_relaunch.json" "(lambda ev: any(e['type'] == 'straggler_detected' and e['rank'] == 1 for e in ev[[e['type'] for e in ev].index('relaunch'):]))(d['events'])" "straggler: still detected after the relaunch"
kind_run writefail "ckpt-write-fail@step=10,rank=1;crash@step=12,rank=0"
assert_json "$T/writefail.json" "any(e['type'] == 'failure_detected' and e['kind'] == 'ckpt-write-fail' and e['rank'] == 1 and e['fatal'] is False for e in d['events'])" "ckpt-write-fail: detected on rank 1"
assert_json "$T/writefail.json" "d['results'][0]['extra']['ledger']['checkpoints']['restored_steps'] == [0, 5]" "ckpt-write-fail: the previous checkpoint (5) stayed newest"
assert_json "$T/writefail.json" "d['results'][0]['extra']['ledger']['checkpoints']['save_failures'] == 1" "ckpt-write-fail: one save failure"
# An async save's write fails in the writer thread, after its hand-off ended ok: still a save failure.
run_capture awf fb resilience --launcher none --ranks 1 --model tiny-dense --backend host --steps 12 --checkpoint-every 5 --async-checkpoint \
  --faults ckpt-write-fail@step=5 --run-dir "$T/awf" -o "$T/awf.json"
assert_json "$T/awf.json" "[d['results'][0]['extra']['ledger']['checkpoints'][k] for k in ('saves', 'save_failures', 'commits')] == [2, 1, 1]" "async ckpt-write-fail: 2 saves, 1 failed, 1 committed"
grep -q "checkpoints: 2 saved, 1 committed, 1 failed (not committed)" "$T/awf.out" && ok "async ckpt-write-fail: the console says it failed" \
  || fail "awf console: $(grep checkpoints: "$T/awf.out")"
# A save that did not commit leaves nothing behind: rank 0's shard, written, goes with the step's directory
# (its space stayed taken until a later commit pruned it; here none comes).
run_capture wfgone fb resilience --ranks 2 "${COMMON[@]}" --steps 7 --checkpoint-every 5 \
  --faults "ckpt-write-fail@step=5,rank=1" --run-dir "$T/wfgone" -o "$T/wfgone.json"
[ "$RC" -eq 0 ] && [ ! -e "$T/wfgone/checkpoints/step-00000005" ] && [ -d "$T/wfgone/checkpoints" ] \
  && ok "ckpt-write-fail: the failed save's shard and directory are removed" \
  || fail "wfgone: exit $RC: $(ls -R "$T/wfgone/checkpoints" 2>&1 | head -5)"
kind_run corrupt "ckpt-corrupt@step=10,rank=1;crash@step=12,rank=0"
assert_json "$T/corrupt.json" "d['results'][0]['extra']['ledger']['checkpoints']['restored_steps'] == [0, 5]" "ckpt-corrupt: corrupt step 10 skipped"
assert_json "$T/corrupt.json" "any('rank-00001.shard checksum mismatch' in s['reason'] for s in d['results'][0]['extra']['ledger']['checkpoints']['skipped'])" "ckpt-corrupt: reason names the shard"

# --- Bad input: one line, exit 2, no report ----------------------------------------------------------------
# A supervised job starts from step 0; it neither resumes nor deletes another run's checkpoints.
expect_error resume 2 "resilience --resume: a supervised job starts from step 0" \
  fb resilience --ranks 2 --faults "crash@step=3" --resume --run-dir "$T/bad" -o "$T/bad.json"
fb resilience --help | grep -q -- "--resume" && fail "resilience --help offers --resume, which it refuses" \
  || ok "resilience --help does not offer --resume"
mkdir -p "$T/kept/checkpoints/step-00000005" && touch "$T/kept/checkpoints/step-00000005/manifest.json"
expect_error kept 2 "--run-dir $T/kept already holds checkpoints \\($T/kept/checkpoints/step-00000005\\)" \
  fb resilience --ranks 2 --faults "crash@step=3" --run-dir "$T/kept" -o "$T/bad.json"
[ -d "$T/kept/checkpoints/step-00000005" ] && ok "kept: the checkpoint is still there" || fail "kept: checkpoint deleted"
mkdir -p "$T/kept2/drain/checkpoints/step-00000005"  # a --policy compare run's
touch "$T/kept2/drain/checkpoints/step-00000005/manifest.json"
expect_error kept2 2 "--run-dir $T/kept2 already holds checkpoints \\($T/kept2/drain/checkpoints/step-00000005\\)" \
  fb resilience --ranks 2 --spares 1 --faults "crash@step=3" --policy compare --run-dir "$T/kept2" -o "$T/bad.json"
# A save cut short before its commit (a shard file, no manifest) is no checkpoint: a fresh train starts there
# (it was refused as holding checkpoints, and --resume then found none to resume).
mkdir -p "$T/cut/checkpoints/step-00000020" && touch "$T/cut/checkpoints/step-00000020/.rank-00000.shard.tmp"
run_capture cut fb train --backend host --model tiny-dense --layers 1 --steps 2 --run-dir "$T/cut" -o "$T/cut.json"
[ "$RC" -eq 0 ] && ok "an uncommitted step directory does not block a fresh start" || fail "cut: exit $RC: $(cat "$T/cut.err")"
expect_error spares_no_policy 2 "^factorybench: error: --spares acts with --policy drain \(or compare\) or --preflight" \
  fb resilience --ranks 2 --spares 1 --faults "crash@step=3" --run-dir "$T/sp" -o "$T/bad.json"
expect_error drain_after_no_policy 2 "^factorybench: error: --drain-after acts only with --policy drain or compare$" \
  fb resilience --ranks 2 --drain-after 3 --faults "crash@step=3" --run-dir "$T/da" -o "$T/bad.json"
expect_error preflight_timeout_alone 2 "^factorybench: error: --preflight-timeout needs --preflight$" \
  fb resilience --ranks 2 --preflight-timeout 10s --faults "crash@step=3" --run-dir "$T/pt" -o "$T/bad.json"
expect_error state_bytes_no_ckpt 2 "^factorybench: error: --state-bytes acts on checkpoints: add --checkpoint-every N" \
  fb resilience --ranks 2 --state-bytes 1M --faults "crash@step=3" --run-dir "$T/sb" -o "$T/bad.json"
expect_error drain_no_spares 2 "--policy drain needs --spares N: a drained rank moves to a spare slot, and with none nothing is ever drained" \
  fb resilience --ranks 2 --faults "crash@step=3" --policy drain --run-dir "$T/bad" -o "$T/bad.json"
expect_error badfault 2 "invalid --faults 'crsh@step=3': unknown fault kind 'crsh'" \
  fb resilience --ranks 2 --faults "crsh@step=3" --run-dir "$T/bad" -o "$T/bad.json"
# A checkpoint fault in a run that saves no checkpoint would act on nothing: refused, explicit or in a mix.
expect_error writefail_no_ckpt 2 "^factorybench: error: --faults injects ckpt-write-fail, which fails a checkpoint save, and this run saves none: add --checkpoint-every N" \
  fb resilience --ranks 2 --faults "ckpt-write-fail@step=3" --run-dir "$T/wf" -o "$T/bad.json"
expect_error corrupt_no_ckpt 2 "^factorybench: error: --faults injects ckpt-corrupt, which corrupts the newest checkpoint, and this run saves none" \
  fb train --backend host --model tiny-dense --steps 3 --faults "random:mtbf=1m,mix=crash:0.5/ckpt-corrupt:0.5" --run-dir "$T/cc" -o "$T/bad.json"
[ ! -e "$T/wf" ] && [ ! -e "$T/cc" ] && ok "checkpoint faults refused before the run dir is made" || fail "a refused run left its run dir"
[ ! -e "$T/bad.json" ] && ok "no report on bad input" || fail "a report was written on bad input"
# The baseline: --faults none runs the same supervised job with no fault; train takes it too.
run_capture baseline fb resilience --ranks 2 "${COMMON[@]}" --steps 6 --checkpoint-every 2 --faults none \
  --run-dir "$T/baseline" -o "$T/baseline.json"
[ "$RC" -eq 0 ] && ok "baseline: exit 0" || fail "baseline: exit $RC: $(stderr_summary "$T/baseline.err")"
assert_json "$T/baseline.json" "[d['results'][0]['metrics'][k]['value'] for k in ('steps_completed', 'failures', 'restarts', 'wasted_steps')] == [6, 0, 0, 0] and d['results'][0]['status'] == 'ok'" "baseline: 6 steps, no failure, restart or wasted step"
# With no failure the MTTF is the uptime, which a faster job shortens: no direction to judge. Nor has the
# productive time of a job of fixed --steps.
assert_json "$T/baseline.json" "[d['results'][0]['metrics'][k]['better'] for k in ('mttf_s', 'productive_s', 'productive_time_s', 'goodput_pct')] == ['none', 'none', 'none', 'higher'] and d['results'][0]['extra']['ledger']['mttf_censored'] is True" "baseline: a censored MTTF and the productive seconds carry no direction"
run_capture baseline_train fb train --backend host --model tiny-dense --layers 1 --steps 3 --warmup-steps 0 --faults none \
  --run-dir "$T/baseline_train" -o "$T/baseline_train.json"
[ "$RC" -eq 0 ] && ok "train --faults none: exit 0" || fail "train --faults none: exit $RC: $(stderr_summary "$T/baseline_train.err")"
expect_error needsdir 2 "--resume needs --run-dir DIR" fb train --model tiny-dense --steps 3 --resume --backend host
finish
