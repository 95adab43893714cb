#!/usr/bin/env bash
# factorybench resilience --preflight (issue 9): `factorybench health` through the launcher before every
# (re)launch, recorded in the event log and accounted as init time; a rank that fails it is drained to a spare
# and the new placement is checked again. The test hook FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=1 makes the rank
# on slot 1 fail (health's read-only checkpoint directory hook, FACTORYBENCH_TEST_READONLY_CKPT_RANK, for
# whichever rank holds that slot), so the bad "node" stays bad and its replacement passes.
. "$(dirname "$0")/../lib.sh"
set -e

COMMON=(--launcher mpirun --launcher-args "--oversubscribe" --model tiny-dense --backend host --max-restarts 4
        --hang-timeout 4s --heartbeat-timeout 60s --preflight
        --preflight-args "--gemm-size 128 --gemm-floor 0.01 --min-free-memory 0.05 --checkpoint-size 1M --allreduce-size 64K")
ev() { echo "[e for e in d['events'] if e['type'] == '$1']"; }
R='d["results"][0]'
L="$R[\"extra\"][\"ledger\"]"

# --- A bad slot, one spare: drained before the first launch; a crash later brings a second check ---------------
run_capture drain env FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=1 "$FACTORYBENCH" resilience --ranks 2 "${COMMON[@]}" \
  --spares 1 --steps 16 --checkpoint-every 5 --faults "crash@step=8,rank=0;crash@step=12,rank=1" --run-dir "$T/drain" -o "$T/drain.json"
cat "$T/drain.out"
[ "$RC" -eq 0 ] || { cat "$T/drain.err" >&2; die "preflight with a spare: exit $RC"; }
validate "$T/drain.json"
P=$(ev preflight)
assert_json "$T/drain.json" "[(e['attempt'], e['round'], e['verdict'].replace('warn', 'pass')) for e in $P] == [(1, 1, 'fail'), (1, 2, 'pass'), (2, 1, 'pass')]" "checks: attempt 1 fails, passes after the drain; attempt 2 passes"
assert_json "$T/drain.json" "$P[0]['failed'][0]['rank'] == 1 and $P[0]['failed'][0]['slot'] == 1 and 'checkpoint_dir' in $P[0]['failed'][0]['reason'] and 'not writable' in $P[0]['failed'][0]['reason'] and $P[0]['action'] == 'drain'" "the failing rank, its slot and the reason are recorded"
assert_json "$T/drain.json" "[(e['rank'], e['from_slot'], e['to_slot'], e['cause']) for e in $(ev drain)] == [(1, 1, 2, 'preflight')]" "rank 1 drained from slot 1 to spare slot 2"
assert_json "$T/drain.json" "[e['slots'] for e in $(ev attempt_start)] == [[0, 2], [0, 2]]" "both attempts run on the new placement"
assert_json "$T/drain.json" "all(e['t_start'] <= e['t'] and e['report'].startswith('preflight-') for e in $P)" "each check has its interval and report"
assert_json "$T/drain.json" "$R['metrics']['steps_completed']['value'] == 16 and $R['metrics']['failures']['value'] == 1" "the job completes; the crash is its one failure"
assert_json "$T/drain.json" "$L['preflight']['checks'] == 3 and $L['preflight']['failed'] == 1 and abs($L['preflight']['seconds'] - sum(e['t'] - e['t_start'] for e in $P)) < 1e-6" "ledger counts the checks and their time"
assert_json "$T/drain.json" "$L['split_s']['init'] >= $L['preflight']['seconds'] > 0 and $R['metrics']['preflight_s']['value'] > 0" "check time is init time"
assert_json "$T/drain.json" "abs(sum($L['split_s'].values()) - $L['wall_s']) <= 0.01 * $L['wall_s']" "parts still sum to the wall time"
[ -s "$T/drain/preflight-1.json" ] && [ -s "$T/drain/preflight-1-2.json" ] && [ -s "$T/drain/preflight-2.json" ] \
  && ok "the health reports are kept in the run dir" || fail "health reports: $(ls "$T/drain")"
grep -qE '^pre-flight: 3 health check\(s\), 1 failed' "$T/drain.out" && ok "printed" || fail "no pre-flight line"
# Faults follow the slot: slot 1's crash never fires once the slot is drained, and the warning says so.
assert_json "$T/drain.json" "$R['extra']['faults_not_fired'] == ['crash@step=12,rank=1']" "the drained slot's fault is listed as not fired"
grep -q "warning: --faults: crash@step=12,rank=1 never fired: slot 1 was drained before it came due" "$T/drain.err" \
  && ok "the warning names the drain" || fail "not-fired warning: $(grep never "$T/drain.err")"
grep -qE '^  drained rank 1: slot 1 -> 2 \(pre-flight health check failed: checkpoint_dir' "$T/drain.out" \
  && ok "drain printed with the reason" || fail "no drain line"

# --- No spare: recorded, launched anyway -----------------------------------------------------------------------
run_capture nospare env FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=1 "$FACTORYBENCH" resilience --ranks 2 "${COMMON[@]}" \
  --steps 6 --faults "crash@step=99" --run-dir "$T/nospare" -o "$T/nospare.json"
[ "$RC" -eq 0 ] || { cat "$T/nospare.out" "$T/nospare.err" >&2; die "preflight without a spare: exit $RC"; }
assert_json "$T/nospare.json" "[(e['verdict'], e['action']) for e in $(ev preflight)] == [('fail', 'none: not enough spares, launching anyway')] and $(ev drain) == []" "no spare: the failure is recorded, nothing drained"
assert_json "$T/nospare.json" "$R['metrics']['steps_completed']['value'] == 6 and $L['preflight']['failed'] == 1" "no spare: the job still runs"

# --- The check itself hangs (the rank on slot 1 never enters the all-reduce): health's own watchdog ends it, and
# the event says it hung and names the rank (it said "no health report ... params.rank: missing"). Its state
# files stay in the run dir, not the cwd.
HANG_COMMON=("${COMMON[@]}")
HANG_COMMON[${#HANG_COMMON[@]}-1]="${HANG_COMMON[${#HANG_COMMON[@]}-1]} --hang-timeout 3s"
run_capture hung env FACTORYBENCH_TEST_PREFLIGHT_HANG_SLOT=1 "$FACTORYBENCH" resilience --ranks 2 "${HANG_COMMON[@]}" \
  --steps 4 --faults none --run-dir "$T/hung" -o "$T/hung.json"
[ "$RC" -eq 0 ] || { cat "$T/hung.out" "$T/hung.err" >&2; die "preflight hang: exit $RC"; }
assert_json "$T/hung.json" "[e['verdict'] for e in $(ev preflight)] == ['error'] and $(ev preflight)[0]['error'].startswith('the health check hung: ') and 'rank 1' in $(ev preflight)[0]['error']" "a hung check: the event says so and names rank 1"
assert_json "$T/hung.json" "$R['metrics']['steps_completed']['value'] == 4" "a hung check: the job still runs"
ls -d "$T/hung"/fb-hang-* >/dev/null 2>&1 && ok "the watchdog's files are in the run dir" || fail "no fb-hang-* in the run dir: $(ls "$T/hung")"

# --- The check killed (SIGKILL of its ranks: the OOM killer, a node's reboot), here while it is stuck in the hung
# all-reduce (its watchdog set far off): its report so far ends "unfinished", and the event says the check did
# not finish, not that its report is malformed; the job is launched anyway.
KILL_COMMON=("${COMMON[@]}")
KILL_COMMON[${#KILL_COMMON[@]}-1]="${KILL_COMMON[${#KILL_COMMON[@]}-1]} --hang-timeout 120s"
FACTORYBENCH_TEST_PREFLIGHT_HANG_SLOT=1 "$FACTORYBENCH" resilience --ranks 2 "${KILL_COMMON[@]}" --steps 4 --faults none \
  --run-dir "$T/killed" -o "$T/killed.json" >"$T/killed.out" 2>"$T/killed.err" &
sup=$!
launcher=""
for _ in $(seq 1 240); do  # the check's report so far is there, and its launcher
  launcher=$(pgrep -f -- "^mpirun .*$T/killed/preflight-1.json" | head -1 || true)
  [ -n "$launcher" ] && [ -s "$T/killed/preflight-1.json" ] && [ -n "$(pgrep -P "$launcher" || true)" ] && break
  sleep 0.25
done
[ -n "$launcher" ] || { kill -9 "$sup"; die "killed: the pre-flight never started: $(cat "$T/killed.err")"; }
pkill -KILL -P "$launcher"
set +e; wait "$sup"; rc=$?; set -e
[ "$rc" -eq 0 ] || { cat "$T/killed.out" "$T/killed.err" >&2; die "a killed check: exit $rc"; }
assert_json "$T/killed.json" "[e['verdict'] for e in $(ev preflight)] == ['error'] and $(ev preflight)[0]['error'].startswith('the health check did not finish: the job ended before the run did (killed or crashed)')" "a killed check: the event says it did not finish"
assert_json "$T/killed.json" "$R['metrics']['steps_completed']['value'] == 4" "a killed check: the job still runs"

# A typo in --preflight-args: health refuses it before every attempt, so the job stops unlaunched with the
# reason (as a training job that rejects its options does), instead of running with no pre-flight at all.
run_capture typo "$FACTORYBENCH" resilience --ranks 2 --launcher mpirun --launcher-args "--oversubscribe" \
  --model tiny-dense --backend host --preflight --preflight-args "--gemm-floor 5" --steps 4 --faults none \
  --run-dir "$T/typo" -o "$T/typo.json"
[ "$RC" -eq 1 ] && grep -q "FAILED: .*the pre-flight health check rejected its options: invalid --gemm-floor 5: must be a fraction in \[0, 1\]" "$T/typo.out" \
  && ok "a bad --preflight-args value: exit 1 with health's reason" || fail "typo: exit $RC: $(tail -3 "$T/typo.out" "$T/typo.err")"
assert_json "$T/typo.json" "[(e['action'], e['report']) for e in $(ev preflight)] == [('stop', None)] and $L['attempts'] == 0 and 'rejected its options: invalid --gemm-floor 5' in $R['extra']['stop_reason']" "a bad --preflight-args value: no attempt launched, the event says stop"
[ ! -e "$T/typo/attempt-1.log" ] && ok "a bad --preflight-args value: nothing launched" || fail "an attempt ran after a rejected pre-flight"

expect_error noflag 2 "--preflight-args needs --preflight" \
  fb resilience --ranks 2 --backend host --preflight-args "--gemm-size 64" --faults "crash@step=3" --run-dir "$T/bad"
finish
