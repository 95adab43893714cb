#!/usr/bin/env bash
# `factorybench locate` names a hung rank: on 8 host ranks declared as 4 hosts (FACTORYBENCH_FAKE_HOSTS=4: ranks
# 2h, 2h+1 on host h), a rank that never enters a call (FACTORYBENCH_INJECT=hang@rank=R,call=N) is named by the
# hang watchdog (--hang-timeout 2s) through its state files in --run-dir, on three seeds, and nothing else is
# named as never entering. No speed is judged: this test runs beside others (locate_faults.sh runs alone).
# FB_SEEDS="1 2 3" (the default) lists the seeds (the sanitizer step runs one).
. "$(dirname "$0")/../lib.sh"
cd "$T"
run8() { timeout 300 mpirun --oversubscribe -np 8 -x FACTORYBENCH_FAKE_HOSTS=4 "$@"; }

# A rank that never enters call #3 (the third all-reduce of the bisection's first round): the watchdog
# (--hang-timeout 2s) names it through the state files in --run-dir, and nothing else as "never entered".
for seed in ${FB_SEEDS:-1 2 3}; do
  mkdir -p "$T/run$seed"
  run_capture "hang$seed" run8 -x "FACTORYBENCH_INJECT=hang@rank=5,call=3" "$FACTORYBENCH" locate --backend host \
    --tests bisection --allreduce-size 256K --iters 4 --seed "$seed" --hang-timeout 2s --run-dir "$T/run$seed" \
    --output "$T/hang$seed.json"
  cat "$T/hang$seed.out"
  [ "$RC" -eq 1 ] && ok "hang seed $seed: exit 1" || fail "hang seed $seed: exit $RC, expected 1"
  grep -qE "^hang: rank 5 \(host .*-fake2, GPU 1\) never entered allreduce #3 \(256 KiB\)$" "$T/hang$seed.out" \
    && ok "hang seed $seed: rank 5 never entered allreduce #3" || fail "hang seed $seed: $(cat "$T/hang$seed.out")"
  [ "$(grep -c "never entered" "$T/hang$seed.out")" -eq 1 ] && ok "hang seed $seed: only rank 5 named as never entering" \
    || fail "hang seed $seed: more than one rank named"
  validate "$T/hang$seed.json"
  assert_json "$T/hang$seed.json" "[r['status'] for r in d['results'] if r['name'] == 'hang'] == ['failed'] and 'rank 5 (host' in [r['error'] for r in d['results'] if r['name'] == 'hang'][0]" "hang seed $seed: the report's hang result names rank 5"
  ls "$T/run$seed"/fb-hang-*/rank-5.state >/dev/null 2>&1 && ok "hang seed $seed: state files in --run-dir" || fail "hang seed $seed: no state files"
done

# A hang in the node-scope p2p test (endpoints 0, 2, 4, 6): rank 2 never enters call #3, the send of its first
# pair, that rank 4's recv #3 waits for; the ranks the test leaves out wait in a barrier, not the call rank 2 owes.
mkdir -p "$T/runp2p"
run_capture hangp2p run8 -x "FACTORYBENCH_INJECT=hang@rank=2,call=3" "$FACTORYBENCH" locate --backend host \
  --scope node --tests p2p -b 256K --iters 4 --hang-timeout 2s --run-dir "$T/runp2p" --output "$T/hangp2p.json"
cat "$T/hangp2p.out"
[ "$RC" -eq 1 ] && ok "p2p hang: exit 1" || fail "p2p hang: exit $RC, expected 1"
grep -qE "^hang: rank 2 \(host .*-fake1, GPU 0\) never entered send #3 \(256 KiB\)$" "$T/hangp2p.out" \
  && grep -qE "^hang: rank 4 .* entered recv #3 \(256 KiB\) and never left" "$T/hangp2p.out" \
  && ok "p2p hang: rank 2 never entered the send rank 4's recv #3 waits for" || fail "p2p hang: $(cat "$T/hangp2p.out")"
# A hang in the bisection after the p2p matrix finished: the report keeps the matrix (it held the hang alone).
# No confirmation pass, so the p2p test's calls are as many every run (a direction a loaded host stalls 100x
# may still be flagged: the p2p verdict is not judged here) and call #100 is the bisection's (rank 2's p2p test
# makes fewer).
run_capture hangbis timeout 300 mpirun --oversubscribe -np 4 -x FACTORYBENCH_FAKE_HOSTS=2 -x "FACTORYBENCH_INJECT=hang@rank=2,call=100" \
  "$FACTORYBENCH" locate --backend host --scope rank --iters 3 --confirm-passes 0 --outlier-threshold 0.99 -b 16K \
  --allreduce-size 16K --hang-timeout 2s --run-dir "$T/runbis" --output "$T/hangbis.json"
[ "$RC" -eq 1 ] && ok "bisection hang: exit 1" || fail "bisection hang: exit $RC, expected 1"
grep -qE "^hang: rank 2 \(host .*-fake1, GPU 0\) never entered allreduce #100 \(16 KiB\)$" "$T/hangbis.out" \
  && ok "bisection hang: rank 2 named" || fail "bisection hang: $(cat "$T/hangbis.out")"
assert_json "$T/hangbis.json" "[r['name'] for r in d['results']] == ['p2p/rank/16384', 'hang'] and d['results'][1]['status'] == 'failed' and 'p2p' in d['summary']['locate']" "bisection hang: the p2p result and summary are kept before the hang"
# Rank 0 the one that never enters: rank 1 diagnoses the hang, and rank 0 (whose watchdog thread still runs)
# writes the report; rank 1 writes none of its own (two writers renamed onto one -o, the last one winning).
mkdir -p "$T/run0"
run_capture hang0 timeout 120 mpirun --oversubscribe -np 2 -x "FACTORYBENCH_INJECT=hang@rank=0,call=36" \
  "$FACTORYBENCH" locate --backend host --scope rank --iters 3 --confirm-passes 0 -b 16K --allreduce-size 16K \
  --hang-timeout 2s --run-dir "$T/run0" --output "$T/run0/hang0.json"
[ "$RC" -eq 1 ] && grep -qE "^hang: rank 0 \(host .*, GPU 0\) never entered allreduce #36 \(16 KiB\)$" "$T/hang0.out" \
  && ok "hang of rank 0: named by rank 1, exit 1" || fail "hang0: exit $RC: $(cat "$T/hang0.out")"
assert_json "$T/run0/hang0.json" "d['results'][-1]['name'] == 'hang' and 'rank 0' in d['results'][-1]['error'] and d['summary']['telemetry']['note'].startswith(\"rank 0's readings alone\") and len(d['system']['ranks']) == 2" \
  "hang of rank 0: the report is rank 0's (both ranks' system), not rank 1's"
# A hang past locate's last call: nothing hangs, and rank 1 says its entry was never reached.
run_capture unreached timeout 120 mpirun --oversubscribe -np 2 -x "FACTORYBENCH_INJECT=hang@rank=1,call=100000" \
  "$FACTORYBENCH" locate --backend host --iters 3 -b 16K --allreduce-size 16K --hang-timeout 5s
[ "$RC" -eq 0 ] && grep -qE "^\[rank 1\] warning: FACTORYBENCH_INJECT 'hang@rank=1,call=100000': no hang was injected: rank 1 made [0-9]+ numbered call\(s\), never call 100000$" "$T/unreached.err" \
  && ok "a hang past the last call: locate ends and rank 1 says none was injected" \
  || fail "unreached: exit $RC: $(stderr_summary "$T/unreached.err")"
finish
