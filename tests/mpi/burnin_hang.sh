#!/usr/bin/env bash
# `factorybench burnin` on 2 host ranks declared as 2 hosts, with a rank that stops under the load
# (FACTORYBENCH_INJECT=hang@rank=1,call=4: rank 1 never enters its fourth numbered call, the gather of check 3,
# as a wedged GPU would never finish its GEMM). The watchdog names exactly that rank and the check its peer
# waits in, writes the report with the checks gathered before it (0, 1 and 2 on every rank) and the job ends
# (exit 1), instead of waiting for the scheduler's time limit. Then what the injection cannot act on is
# refused (exit 2, nothing written). The 5 s limit: a peer waits at a check for one 128³ GEMM at most (and
# spins in MPI's wait meanwhile: two ranks, not more, so as not to load the tests beside it).
. "$(dirname "$0")/../lib.sh"
cd "$T"
mkdir -p "$T/states"

run_capture hang timeout 300 mpirun --oversubscribe -np 2 -x FACTORYBENCH_FAKE_HOSTS=2 -x FACTORYBENCH_INJECT=hang@rank=1,call=4 \
  "$FACTORYBENCH" burnin --backend host --duration 120s --check-interval 1s --size 128 --hang-timeout 5s \
  --run-dir "$T/states" --output "$T/hang.json"
cat "$T/hang.out"
[ "$RC" -eq 1 ] && ok "hang: the job ends (exit 1)" || fail "hang: exit $RC, expected 1: $(stderr_summary "$T/hang.err")"
grep -qE "^hang: rank 1 \(host .*-fake1, GPU 0\) never entered burnin_check #4 \(24 B\)$" "$T/hang.out" \
  && grep -qE "^burnin: FAIL \(hang; rank states in $T/states/fb-hang-" "$T/hang.out" \
  && ok "hang: rank 1 named as never entering check 3's gather" || fail "hang: $(cat "$T/hang.out")"
[ "$(grep -c "never entered" "$T/hang.out")" -eq 1 ] && ok "hang: one rank named" || fail "hang: $(grep -c "never entered" "$T/hang.out") ranks named"
validate "$T/hang.json"
assert_json "$T/hang.json" "[(r['name'][:12], r['status']) for r in d['results']] == [('burnin/node/', 'ok'), ('burnin/node/', 'ok'), ('hang', 'failed')] and 'rank 1 (host ' in d['results'][-1]['error']" \
  "hang: both nodes' checks so far, then the failed hang result"
assert_json "$T/hang.json" "d['summary']['burnin']['verdict'] == 'fail' and d['summary']['burnin']['reason'] == 'hang: ' + d['results'][-1]['error'] and d['summary']['burnin']['checks'] == 2 and d['summary']['burnin']['checks_planned'] == 120" \
  "hang: verdict fail, the hang the reason, checks 0 to 2 kept of 120"
assert_json "$T/hang.json" "all(len(x['checksums']) == 3 for r in d['results'][:2] for x in r['extra']['ranks'])" "hang: three checksums per rank"
assert_json "$T/hang.json" "[r['extra']['verdict'] for r in d['results'][:2]] == ['not_finished', 'not_finished']" "hang: the nodes' results say not finished, as the console does, not pass"
grep -qE "^node .*-fake1: NOT FINISHED \(no mismatch in 2 of 120 checks after the reference, 1 rank\(s\)" "$T/hang.out" \
  && ok "hang: the console leaves the nodes not finished" || fail "hang: console"

# In a suite the hang ends the job the same way, and the suite's report keeps the step's checks so far (marked
# with the step) before the hang, the rest not run.
cat >"$T/suite.json" <<'JSON'
{"steps": [{"name": "load", "command": "burnin", "args": "--duration 120s --check-interval 1s --size 64 --hang-timeout 5s"},
           {"name": "after", "command": "info"}]}
JSON
run_capture suite timeout 300 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=hang@rank=1,call=3 "$FACTORYBENCH" \
  --backend host suite "$T/suite.json" --output "$T/suite-report.json"
[ "$RC" -eq 1 ] || fail "suite: exit $RC, expected 1"
grep -qE "^hang: rank 1 \(host .*, GPU 1\) never entered burnin_check #3 \(24 B\)$" "$T/suite.out" \
  && ok "suite: rank 1 named" || fail "suite: $(cat "$T/suite.out")"
assert_json "$T/suite-report.json" "[(r['benchmark'], r['name'][:12], r['status'], r['extra']['suite_step']) for r in d['results']] == [('burnin', 'burnin/node/', 'ok', 'load'), ('burnin', 'hang', 'failed', 'load'), ('suite', 'after', 'skipped', 'after')] and all(len(x['checksums']) == 2 for x in d['results'][0]['extra']['ranks']) and d['summary']['suite']['verdict'] == 'fail'" \
  "suite: the step's checks 0 and 1 kept, the hang, the rest not run"

# Without a hang nothing is left behind: the state files go, and so does the --run-dir the run made, with the
# parents it made for it (written with a trailing slash).
run_capture nohang timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" burnin --backend host --duration 2s \
  --size 64 --hang-timeout 30s --run-dir "$T/made/a/b/" --output "$T/nohang.json"
[ "$RC" -eq 0 ] && [ ! -e "$T/made" ] && ok "no hang: exit 0, the run dir and its parents made for it removed" \
  || fail "nohang: exit $RC, left $(find "$T/made" 2>/dev/null | head -5)"

# What a burn-in cannot act on, or an injection it would never reach: one line, exit 2, no report.
run2() { timeout 120 mpirun --oversubscribe -np 2 "$@"; }
refused() {  # NAME PATTERN INJECT ARGS...: refused before anything runs
  local name=$1 pattern=$2 inject=$3
  shift 3
  run_capture "$name" run2 -x "FACTORYBENCH_INJECT=$inject" "$FACTORYBENCH" burnin --backend host --size 64 \
    --output "$T/$name.json" "$@"
  [ "$RC" -eq 2 ] && grep -qE "$pattern" "$T/$name.out" "$T/$name.err" && [ ! -e "$T/$name.json" ] \
    && ok "$name: refused, no report" || fail "$name: exit $RC: $(cat "$T/$name.out" "$T/$name.err" | grep -v '^\[' | head -5)"
}
refused past_calls "FACTORYBENCH_INJECT 'hang@rank=1,call=5': hang at call 5, but this burn-in makes 4 call\(s\)" \
  "hang@rank=1,call=5" --duration 3s --check-interval 1s
refused slow_rank "burnin sends nothing through the communicator: slow-link and slow-rank cannot act on it \(hang can\)" \
  "slow-rank@rank=1,delay=10ms" --duration 3s
refused watchdog_off "a hang with --hang-timeout 0 \(the watchdog off\) would wait until the job is killed" \
  "hang@rank=1,call=2" --duration 3s --hang-timeout 0
finish
