#!/usr/bin/env bash
# `factorybench burnin` on 4 host ranks declared as 2 hosts: every rank multiplies the same seeded matrices, so
# the checksums agree and every node passes; with FACTORYBENCH_INJECT=sdc@rank=2,check=2 one bit of rank 2's
# result flips at check 2, and burnin names exactly that rank's node, the rank and the check, nothing else; said
# when found, and kept by a burn-in stopped by SIGTERM.
# FB_SEEDS="1 2 3" (the default) lists the seeds of the repeated fault runs (the sanitizer step runs one).
. "$(dirname "$0")/../lib.sh"
cd "$T"
COMMON=(burnin --backend host --duration 3s --check-interval 1s --size 128)
run4() { timeout 300 mpirun --oversubscribe -np 4 -x FACTORYBENCH_FAKE_HOSTS=2 "$@"; }

run_capture clean run4 "$FACTORYBENCH" "${COMMON[@]}" --output "$T/clean.json"
cat "$T/clean.out"
[ "$RC" -eq 0 ] && ok "no fault: exit 0" || fail "no fault: exit $RC: $(cat "$T/clean.out" "$T/clean.err")"
validate "$T/clean.json"
assert_json "$T/clean.json" "len(d['results']) == 2 and all(r['status'] == 'ok' for r in d['results'])" "one passing result per node"
assert_json "$T/clean.json" "len({c for r in d['results'] for x in r['extra']['ranks'] for c in x['checksums']}) == 1" "one checksum across repeats and ranks"
assert_json "$T/clean.json" "all(len(x['checksums']) == 4 and x['gemms'] >= 4 for r in d['results'] for x in r['extra']['ranks'])" "reference + 3 checks per rank"
assert_json "$T/clean.json" "d['summary']['burnin']['verdict'] == 'pass' and d['summary']['burnin']['checks'] == d['summary']['burnin']['checks_planned'] == 3" "summary passes, 3 of 3 checks"
# The duration asked for, and the time measured to the last check (due at 3 s, run once it is due).
assert_json "$T/clean.json" "d['summary']['burnin']['duration_s'] == 3 and 3 <= d['summary']['burnin']['elapsed_s'] < 60" "summary: duration_s asked for, elapsed_s measured"

for seed in ${FB_SEEDS:-1 2 3}; do
  run_capture "sdc$seed" run4 -x "FACTORYBENCH_INJECT=sdc@rank=2,check=2" "$FACTORYBENCH" "${COMMON[@]}" --seed "$seed" \
    --output "$T/sdc$seed.json"
  cat "$T/sdc$seed.out"
  [ "$RC" -eq 1 ] && ok "sdc seed $seed: exit 1" || fail "sdc seed $seed: exit $RC: $(cat "$T/sdc$seed.err")"
  validate "$T/sdc$seed.json"
  assert_json "$T/sdc$seed.json" "[r['params']['host'][-6:] for r in d['results'] if r['status'] == 'failed'] == ['-fake1']" "sdc seed $seed: only host 1 fails"
  assert_json "$T/sdc$seed.json" "[(p['rank'], p['check']) for r in d['results'] for p in r['extra']['problems']] == [(2, 2)]" "sdc seed $seed: rank 2 at check 2, nothing else"
  grep -qE "^node .*-fake1: FAIL rank 2 \(.*-fake1, GPU 0\): checksum .* at check 2 differs from its own first result" "$T/sdc$seed.out" \
    && ok "sdc seed $seed: console names rank 2" || fail "sdc seed $seed: console"
done

# Said when found, and kept when stopped: a 60 s burn-in with the same fault names rank 2 on stderr once its
# check 2 is gathered, long before the end; a SIGTERM then (as a time limit sends; mpirun passes it on) keeps
# what was checked: host 1 failed for rank 2 at check 2, host 0 not finished, the checks done of 60.
mpirun --oversubscribe -np 4 -x FACTORYBENCH_FAKE_HOSTS=2 -x "FACTORYBENCH_INJECT=sdc@rank=2,check=2" "$FACTORYBENCH" \
  burnin --backend host --duration 60s --check-interval 1s --size 128 --output "$T/stop.json" >"$T/stop.out" 2>"$T/stop.err" &
launcher=$!
for _ in $(seq 1200); do
  grep -q "silent data corruption" "$T/stop.err" && break
  sleep 0.05
done
grep -qE "^(\[rank 0\] )?warning: burnin: silent data corruption: rank 2 \(.*-fake1, GPU 0\): checksum [0-9a-f]+ at check 2 differs from its own first result [0-9a-f]+ \(at [0-9.]+ s\)$" "$T/stop.err" \
  && ok "stopped: the mismatch is said on stderr when found" || fail "stopped: no mismatch line: $(cat "$T/stop.err")"
kill -TERM "$launcher"
wait "$launcher" || true
validate "$T/stop.json"
assert_json "$T/stop.json" "[(r['params']['host'][-6:], r['status']) for r in d['results'] if r['benchmark'] == 'burnin' and r['name'] != 'interrupted'] == [('-fake0', 'ok'), ('-fake1', 'failed')] and [(p['rank'], p['check']) for r in d['results'] for p in r.get('extra', {}).get('problems', [])] == [(2, 2)]" "stopped: host 1 failed for rank 2 at check 2, host 0 kept"
assert_json "$T/stop.json" "d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['params']['signal'] == 'SIGTERM' and d['summary']['burnin']['verdict'] == 'fail' and 2 <= d['summary']['burnin']['checks'] < 60 and d['summary']['burnin']['checks_planned'] == 60" "stopped: interrupted by SIGTERM after 2 or more of 60 checks"
grep -qE "^node .*-fake0: NOT FINISHED \(no mismatch in [0-9]+ of 60 checks after the reference, 2 rank\(s\)" "$T/stop.out" \
  && grep -qE "^node .*-fake1: FAIL rank 2 " "$T/stop.out" \
  && ok "stopped: the console fails host 1 and leaves host 0 not finished" || fail "stopped: console: $(cat "$T/stop.out")"

expect_error bad_duration 2 "invalid --duration '0s': must be positive" fb burnin --backend host --duration 0s --output "$T/bad.json"
expect_error bad_interval 2 "invalid --check-interval '5s': must be in \(0, --duration\]" \
  fb burnin --backend host --duration 2s --check-interval 5s --output "$T/bad.json"
[ ! -e "$T/bad.json" ] && ok "no report written on bad input" || fail "a report was written on bad input"
finish
