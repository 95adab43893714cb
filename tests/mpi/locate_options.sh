#!/usr/bin/env bash
# factorybench locate where nothing can be measured, and options of tests that do not run. One rank has no
# pair and no all-reduce, and two ranks of one host are one endpoint at --scope node: each result is skipped
# with the reason, the console says SKIP rather than PASS, and a floor given for it is not reported as met.
# An option of a test not in --tests is refused, as --nccl-log is (it would be recorded and never used).
. "$(dirname "$0")/../lib.sh"
cd "$T"

run_capture one fb locate --backend host --min-p2p-bw 1000 --allreduce-floor 1000 -o "$T/one.json"
[ "$RC" -eq 0 ] && grep -q "^locate: SKIP (nothing judged)$" "$T/one.out" && ! grep -q "PASS" "$T/one.out" \
  && ok "one rank: SKIP, not PASS" || fail "one rank: exit $RC: $(cat "$T/one.out" "$T/one.err")"
validate "$T/one.json"
assert_json "$T/one.json" "[(r['name'].split('/')[0], r['status']) for r in d['results']] == [('p2p', 'skipped'), ('bisection', 'skipped')]" "one rank: both results skipped"
assert_json "$T/one.json" "'--scope node takes one rank per host' in d['results'][0]['error'] and 'needs two or more' in d['results'][1]['error']" "one rank: the reasons"
# The summary says skipped, not "all ok".
fb report "$T/one.json" --format summary >"$T/one_summary.txt"
head -1 "$T/one_summary.txt" | grep -q ": 1 step, 1 skipped$" && ok "one rank: summary says skipped" || fail "one rank summary: $(cat "$T/one_summary.txt")"

run_capture node timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" locate --backend host --tests p2p -b 64K \
  --min-p2p-bw 1000 -o "$T/node.json"
[ "$RC" -eq 0 ] && grep -q "^p2p: SKIP (1 endpoint: no pair to measure; --scope node takes one rank per host: add hosts, or use --scope rank)$" "$T/node.out" \
  && ok "2 ranks, one host, --scope node: p2p skipped with the way out" || fail "node: exit $RC: $(cat "$T/node.out" "$T/node.err")"
# Two endpoints: one link, measured, but with no floor nothing to judge it against (the outlier test needs
# three), so SKIP, not PASS (a link at 0.003 GB/s used to pass); with --min-p2p-bw it is judged.
run_capture rank timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" locate --backend host --tests p2p -b 64K \
  --scope rank -o "$T/rank.json"
[ "$RC" -eq 0 ] && grep -q "^p2p: SKIP (2 endpoints and no floor: their one link has nothing to be judged against" "$T/rank.out" \
  && grep -q "^locate: SKIP (nothing judged)$" "$T/rank.out" && ok "--scope rank, 2 ranks, no floor: measured, SKIP" \
  || fail "rank: exit $RC: $(cat "$T/rank.out" "$T/rank.err")"
assert_json "$T/rank.json" "d['results'][0]['status'] == 'skipped' and d['results'][0]['metrics']['p2p_bw_gbps']['value'] > 0" "--scope rank: measured, skipped"
run_capture rank_floor timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" locate --backend host --tests p2p -b 64K \
  --scope rank --min-p2p-bw 0.001 -o "$T/rank_floor.json"
[ "$RC" -eq 0 ] && grep -q "^locate: PASS$" "$T/rank_floor.out" && ok "--scope rank, 2 ranks, --min-p2p-bw: judged, PASS" \
  || fail "rank_floor: exit $RC: $(cat "$T/rank_floor.out" "$T/rank_floor.err")"
assert_json "$T/rank_floor.json" "d['results'][0]['status'] == 'ok'" "--scope rank with a floor: ok"

refused() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  expect_error "$name" 2 "$pattern" fb locate --backend host "$@" -o "$T/$name.json"
  [ ! -e "$T/$name.json" ] || fail "$name: a report was written"
}
refused bytes_bisection "^factorybench: error: -b/--bytes acts on the p2p test: it does nothing with --tests bisection$" --tests bisection -b 1K
refused scope_bisection "^factorybench: error: --scope acts on the p2p test" --tests bisection --scope rank
refused min_bw_bisection "^factorybench: error: --min-p2p-bw acts on the p2p test" --tests bisection --min-p2p-bw 10
refused size_p2p "^factorybench: error: --allreduce-size acts on the bisection test: it does nothing with --tests p2p$" --tests p2p --allreduce-size 64K
refused floor_p2p "^factorybench: error: --allreduce-floor acts on the bisection test" --tests p2p --allreduce-floor 10
refused iters_transport "^factorybench: error: --iters acts on the p2p or bisection tests: it does nothing with --tests transport$" --tests transport --iters 7
refused floors_rank "^factorybench: error: --floors acts on the bisection test and on p2p between nodes \(--scope node\): it does nothing with --tests p2p --scope rank$" \
  --tests p2p --scope rank --floors network-400g
# A list with an empty item is refused, a trailing comma as a leading one (it was dropped and the run passed).
refused tests_trailing "^factorybench: error: invalid --tests 'p2p,': an empty item$" --tests p2p,
refused bytes_trailing "^factorybench: error: invalid -b/--bytes '1K,': an empty item$" -b 1K,
refused floors_trailing "^factorybench: error: invalid --floors 'network-400g,': an empty item$" --floors network-400g,
# A hang limit under a second takes an ordinary collective for a hang (10 ms failed a healthy job).
refused hang_short "^factorybench: error: invalid --hang-timeout '10ms': 0 \(off\) or at least 1s; a shorter limit takes an ordinary collective for a hang$" \
  --hang-timeout 10ms --run-dir "$T"
expect_error health_hang_short 2 "^factorybench: error: invalid --hang-timeout '100ms': 0 \(off\) or at least 1s" \
  fb health --backend host --hang-timeout 100ms --run-dir "$T" -o "$T/hs.json"

# Injected faults the run could not act on are refused (a fault drill passed for a fault never injected).
inject_refused() {
  local name=$1 np=$2 inject=$3 pattern=$4; shift 4
  run_capture "$name" timeout 120 mpirun --oversubscribe -np "$np" -x FACTORYBENCH_FAKE_HOSTS=2 -x "FACTORYBENCH_INJECT=$inject" \
    "$FACTORYBENCH" locate --backend host "$@" -o "$T/$name.json"
  [ "$RC" -eq 2 ] && grep -qE "$pattern" "$T/$name.err" && [ ! -e "$T/$name.json" ] && ok "$name refused" \
    || fail "$name: exit $RC: $(cat "$T/$name.err")"
}
inject_refused inject_transport 2 "hang@rank=1,call=1" \
  "locate sends nothing through the communicator: slow-link, slow-rank and hang cannot act on it" --tests transport
inject_refused inject_not_endpoint 4 "slow-link@ranks=1-3,delay=1ms" \
  "slow-link between ranks 1 and 3: at --scope node only each host's first rank sends, so it would delay nothing" --tests p2p
inject_refused inject_unwatched 2 "hang@rank=1,call=1" \
  "a hang with --hang-timeout 0 \(the watchdog off\) would wait until the job is killed" --hang-timeout 0
finish
