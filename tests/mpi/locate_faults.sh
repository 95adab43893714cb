#!/usr/bin/env bash
# `factorybench locate` on 8 host ranks declared as 4 hosts (FACTORYBENCH_FAKE_HOSTS=4: ranks 2h, 2h+1 on
# host h). With a slow link (ranks 0-5) and a slow rank (3) injected (FACTORYBENCH_INJECT), on three seeds,
# locate names exactly that link and that rank (p2p, scope rank) and that rank's host (bisection), nothing
# else; without injection it names nothing. ctest runs this alone (RUN_SERIAL): a test beside it could look like
# a slow link. The hang watchdog's cases are in locate_hang.sh, the transport records and bad input in
# locate_transport.sh: they judge no speed, and run beside other tests.
# No timing is asserted: the injected delays (30 ms per message on the link, 100 ms per call on the rank) make
# the faulty links 1000-2000x slower and the slow rank's bisection group 250-1000x below the others, and
# --outlier-threshold 0.99 flags only what is 100x below the median. Healthy pairs were seen 40x below it in
# a clean-clone sanitizer run (8 ASan ranks on 2 cores); with 30 ms on the rank its bisection group was only
# 75-90x below there, too close to any threshold that clears such noise.
# FB_SEEDS="1 2 3" (the default) lists the seeds of the repeated fault runs (the sanitizer step runs one).
. "$(dirname "$0")/../lib.sh"
cd "$T"
COMMON=(locate --backend host --scope rank -b 256K --allreduce-size 256K --iters 4 --outlier-threshold 0.99)
run8() { timeout 300 mpirun --oversubscribe -np 8 -x FACTORYBENCH_FAKE_HOSTS=4 "$@"; }

for seed in ${FB_SEEDS:-1 2 3}; do
  run_capture "inject$seed" run8 -x "FACTORYBENCH_INJECT=slow-link@ranks=0-5,delay=30ms;slow-rank@rank=3,delay=100ms" \
    "$FACTORYBENCH" "${COMMON[@]}" --seed "$seed" --output "$T/inject$seed.json"
  cat "$T/inject$seed.out"
  [ "$RC" -eq 1 ] && ok "seed $seed: exit 1" || fail "seed $seed: exit $RC: $(cat "$T/inject$seed.err")"
  validate "$T/inject$seed.json"
  R="$T/inject$seed.json"
  assert_json "$R" "[e['rank'] for e in d['summary']['locate']['p2p']['slow_endpoints']] == [3]" "seed $seed: the slow rank and only it"
  assert_json "$R" "[(l['a']['rank'], l['b']['rank']) for l in d['summary']['locate']['p2p']['slow_links']] == [(0, 5)]" "seed $seed: the slow link and only it"
  assert_json "$R" "[e['host'][-6:] for e in d['summary']['locate']['p2p']['slow_endpoints']] == ['-fake1'] and d['summary']['locate']['p2p']['slow_endpoints'][0]['local_rank'] == 1" "seed $seed: the slow rank's host and GPU"
  assert_json "$R" "[h[-6:] for h in d['summary']['locate']['bisection']['slow_nodes']] == ['-fake1']" "seed $seed: bisection names the slow rank's host only"
  assert_json "$R" "len(d['summary']['locate']['bisection']['rounds']) == 3 and [len(r) for r in d['summary']['locate']['bisection']['rounds']] == [1, 2, 4]" "seed $seed: log2(4) + 1 bisection rounds"
  assert_json "$R" "[r['status'] for r in d['results'] if r['name'] == 'p2p/rank/262144'] == ['failed']" "seed $seed: the p2p result fails"
  assert_json "$R" "len([r for r in d['results'] if r['name'] == 'p2p/rank/262144'][0]['extra']['matrix']['bw_gbps']) == 8" "seed $seed: 8x8 matrix in the report"
  grep -q "^slow endpoint: .*-fake1 (rank 3, GPU 1)" "$T/inject$seed.out" && ok "seed $seed: console names rank 3" || fail "seed $seed: console"
  # The flagged links (rank 3's 7 and the slow one; on a loaded host a few more, cleared by this pass: 19 were
  # seen) measured again alone, twice, at 100 ms a call on rank 3: over 10 s, with progress.
  grep -qE "^locate p2p confirmation: [0-9]+% \(pass [12]/2, flagged link [0-9]+/([89]|[1-9][0-9]+) measured again alone\)" "$T/inject$seed.err" \
    && ok "seed $seed: confirmation progress" || fail "seed $seed: no confirmation progress: $(grep '^locate' "$T/inject$seed.err")"
done

# Node scope: endpoints are ranks 0, 2, 4, 6; a slow link between ranks 2 and 4 is the link between hosts 1 and 2.
run_capture node run8 -x "FACTORYBENCH_INJECT=slow-link@ranks=2-4,delay=30ms" "$FACTORYBENCH" locate --backend host \
  --scope node -b 64K,256K --tests p2p --iters 4 --outlier-threshold 0.99 --output "$T/node.json"
cat "$T/node.out"
[ "$RC" -eq 1 ] && ok "node scope: exit 1" || fail "node scope: exit $RC: $(cat "$T/node.err")"
assert_json "$T/node.json" "[(l['a']['rank'], l['b']['rank']) for l in d['summary']['locate']['p2p']['slow_links']] == [(2, 4)] and d['summary']['locate']['p2p']['slow_endpoints'] == []" "node scope: the link between hosts 1 and 2 only"
assert_json "$T/node.json" "sorted(r['params']['bytes'] for r in d['results']) == [65536, 262144] and 'bisection' not in d['summary']['locate']" "a size sweep, p2p only"

# Nothing injected: nothing named.
run_capture clean run8 "$FACTORYBENCH" "${COMMON[@]}" --output "$T/clean.json"
cat "$T/clean.out"
[ -z "$(ls -d "$T"/fb-hang-* 2>/dev/null)" ] && ok "no fault: the watchdog's state files are removed" || fail "state files left behind"
[ "$RC" -eq 0 ] && ok "no fault: exit 0" || fail "no fault: exit $RC: $(cat "$T/clean.out" "$T/clean.err")"
assert_json "$T/clean.json" "all(r['status'] == 'ok' for r in d['results'])" "no fault: every result ok"
grep -q "^locate: PASS" "$T/clean.out" && ok "no fault: PASS line" || fail "no fault: no PASS line"

# Published floors: a host's shared-memory all-reduce is far below the 431 GB/s of an 8x H200 node, so the
# absolute test names the node even though no group is an outlier; the floors and their sources are recorded.
run_capture floors timeout 300 mpirun --oversubscribe -np 2 "$FACTORYBENCH" locate --backend host --tests bisection \
  --allreduce-size 256K --iters 2 --floors h200-8gpu,network-400g --output "$T/floors.json"
[ "$RC" -eq 1 ] && ok "--floors h200-8gpu on a host: exit 1" || fail "floors: exit $RC: $(cat "$T/floors.err")"
assert_json "$T/floors.json" "[f['name'] for f in d['summary']['locate']['floors']] == ['h200-8gpu', 'network-400g'] and '431' in d['summary']['locate']['floors'][0]['source']" "floors and sources recorded"
assert_json "$T/floors.json" "[r['params']['node_floor_gbps'] for r in d['results']] == [431] and len(d['summary']['locate']['bisection']['slow_nodes']) == 1" "the node is held to 431 GB/s and named"

# One rank per node (4 ranks as 4 hosts), rank 1 slowed by 150 ms per all-reduce: a node alone has no
# all-reduce, so the rounds narrow it to the pair {fake0, fake1}; the cross-check (fake0 with fake2, fake1
# with fake3) clears fake0 and names fake1 alone. And progress on stderr (rank 0) once a phase has run a few
# seconds: the delay makes the bisection (3 rounds x 3 passes x 5 calls) last over 6 s on any machine.
# The slow pair is about 5000x below the healthy one; --outlier-threshold 0.99 (100x), as above, because the
# default 0.5 flagged the healthy cross pair fake0+fake2 at 3x below {fake2, fake3} in a sanitizer run. (This
# test measures: it runs alone in ctest; under other load the healthy pairs were seen 160x below.)
run_capture progress timeout 300 mpirun --oversubscribe -np 4 -x FACTORYBENCH_FAKE_HOSTS=4 \
  -x FACTORYBENCH_INJECT=slow-rank@rank=1,delay=150ms "$FACTORYBENCH" locate --backend host --tests bisection \
  --allreduce-size 64K --iters 4 --outlier-threshold 0.99 --output "$T/progress.json"
grep -qE "^locate bisection: [0-9]+% \(pass [1-3]/3, round [1-3]/3\), .* elapsed, about .* left$" "$T/progress.err" \
  && ok "bisection progress: $(grep -c '^locate bisection' "$T/progress.err") line(s)" \
  || fail "no bisection progress line (exit $RC): $(head -5 "$T/progress.err")"
cat "$T/progress.out"
[ "$RC" -eq 1 ] && ok "one rank per node: exit 1" || fail "one rank per node: exit $RC"
P="$T/progress.json"
assert_json "$P" "[h[-6:] for h in d['summary']['locate']['bisection']['slow_nodes']] == ['-fake1']" "one rank per node: the cross-check names fake1 alone"
assert_json "$P" "[([h[-6:] for h in c['hosts']], c['below_floor'], c['ranks']) for c in d['summary']['locate']['bisection']['cross_pairs']] == [(['-fake0', '-fake2'], False, 2), (['-fake1', '-fake3'], True, 2)]" "one rank per node: cross pairs fake0+fake2 pass, fake1+fake3 low"
grep -q "^bisection cross-check (named node, node not named): \[.*-fake0,.*-fake2\] .* GB/s  \[.*-fake1,.*-fake3\] .* GB/s LOW$" "$T/progress.out" \
  && ok "one rank per node: console shows the cross-check" || fail "console cross-check line: $(cat "$T/progress.out")"

finish
