#!/usr/bin/env bash
# `factorybench burnin` on 4 host ranks declared as 2 hosts: every rank multiplies the same seeded matrices, so
# the checksums agree and every node passes; with FACTORYBENCH_INJECT=sdc@rank=2,check=2 one bit of rank 2's
# result flips at check 2, and burnin names exactly that rank's node, the rank and the check, nothing else.
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
assert_json "$T/clean.json" "d['summary']['burnin']['verdict'] == 'pass'" "summary passes"
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

expect_error bad_duration 2 "invalid --duration '0s': must be positive" fb burnin --backend host --duration 0s --output "$T/bad.json"
expect_error bad_interval 2 "invalid --check-interval '5s': must be in \(0, --duration\]" \
  fb burnin --backend host --duration 2s --check-interval 5s --output "$T/bad.json"
[ ! -e "$T/bad.json" ] && ok "no report written on bad input" || fail "a report was written on bad input"
finish
