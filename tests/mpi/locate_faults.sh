#!/usr/bin/env bash
# `factorybench locate` on 8 host ranks declared as 4 hosts (FACTORYBENCH_FAKE_HOSTS=4: ranks 2h, 2h+1 on
# host h). With a slow link (ranks 0-5) and a slow rank (3) injected (FACTORYBENCH_INJECT), on three seeds,
# locate names exactly that link and that rank (p2p, scope rank) and that rank's host (bisection), nothing
# else; a rank that never enters call #3 is named by the hang watchdog; without injection it names nothing.
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
done

# A rank that never enters call #3 (the third all-reduce of the bisection's first round): the watchdog
# (--hang-timeout 2s) names it through the state files in --run-dir, and nothing else as "never entered".
for seed in ${FB_SEEDS:-1 2 3}; do
  mkdir -p "$T/run$seed"
  run_capture "hang$seed" run8 -x "FACTORYBENCH_INJECT=hang@rank=5,call=3" "$FACTORYBENCH" locate --backend host \
    --tests bisection --allreduce-size 256K --iters 4 --seed "$seed" --hang-timeout 2s --run-dir "$T/run$seed" \
    --output "$T/hang$seed.json"
  cat "$T/hang$seed.out"
  [ "$RC" -ne 0 ] && ok "hang seed $seed: non-zero exit ($RC)" || fail "hang seed $seed: exit 0"
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
grep -qE "^hang: rank 2 \(host .*-fake1, GPU 0\) never entered send #3 \(256 KiB\)$" "$T/hangp2p.out" \
  && grep -qE "^hang: rank 4 .* entered recv #3 \(256 KiB\) and never left" "$T/hangp2p.out" \
  && ok "p2p hang: rank 2 never entered the send rank 4's recv #3 waits for" || fail "p2p hang: $(cat "$T/hangp2p.out")"

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

# Transport record from NCCL INFO lines (format as in NVIDIA/nccl #952): a fallback to sockets fails
# --expect-transport p2p,ib and passes p2p,socket; on host without a log, Open MPI's selected PML and BTLs.
cat >"$T/nccl.log" <<'LOG'
c1:919:1150 [0] NCCL INFO Using network Socket
c1:919:1150 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC/read
c1:926:1151 [1] NCCL INFO Channel 03/0 : 1[1] -> 2[0] [send] via NET/Socket/3
LOG
run_capture tr_fail "$FACTORYBENCH" locate --backend host --nccl-log "$T/nccl.log" --expect-transport p2p,ib --tests transport --output "$T/tr1.json"
[ "$RC" -eq 1 ] && grep -q "^transport: NCCL used socket but --expect-transport allows only p2p,ib" "$T/tr_fail.out" \
  && ok "socket fallback fails --expect-transport p2p,ib" || fail "tr_fail: exit $RC: $(cat "$T/tr_fail.out" "$T/tr_fail.err")"
assert_json "$T/tr1.json" "d['summary']['locate']['transport']['kinds'] == ['p2p', 'socket'] and d['summary']['locate']['transport']['network'] == 'Socket'" "transport record in the report"
run_capture tr_ok "$FACTORYBENCH" locate --backend host --nccl-log "$T/nccl.log" --expect-transport p2p,socket --output "$T/tr2.json" --tests transport
[ "$RC" -eq 0 ] && ok "--expect-transport p2p,socket passes" || fail "tr_ok: exit $RC: $(cat "$T/tr_ok.out")"
run_capture tr_mpi "$FACTORYBENCH" locate --backend host --tests transport --output "$T/tr3.json"
[ "$RC" -eq 0 ] && ok "host transport record, one rank" || fail "tr_mpi: exit $RC"
assert_json "$T/tr3.json" "d['summary']['locate']['transport']['engine'] == 'mpi' and 'pml_requested' in d['summary']['locate']['transport'] and d['summary']['locate']['transport']['kinds'] == []" "Open MPI PML/BTL recorded; one rank has no peer"
assert_json "$T/tr3.json" "[r['status'] for r in d['results'] if r['name'] == 'transport'] == ['skipped']" "one rank: the transport test is skipped, not passed"
grep -q "^transport: SKIP (a world of one rank has no peer: no transport to record)$" "$T/tr_mpi.out" && grep -q "^locate: SKIP (nothing measured)$" "$T/tr_mpi.out" \
  && ok "one rank: transport and locate say SKIP" || fail "tr_mpi: $(cat "$T/tr_mpi.out")"
# Open MPI's selection, read from the component objects it kept loaded: 3 ranks of one host use shared
# memory (vader); with --mca btl self,tcp they use sockets, which --expect-transport shm turns into a failure.
run_capture tr_shm timeout 120 mpirun --oversubscribe -np 3 "$FACTORYBENCH" locate --backend host --tests transport \
  --expect-transport shm --output "$T/tr4.json"
[ "$RC" -eq 0 ] && grep -qE "^transport: MPI .*; selected pml ob1; btl .*vader.* \(all 3 rank\(s\)\); transports shm$" "$T/tr_shm.out" \
  && ok "3 ranks on one host: Open MPI selected vader, --expect-transport shm passes" \
  || fail "tr_shm: exit $RC: $(cat "$T/tr_shm.out" "$T/tr_shm.err")"
assert_json "$T/tr4.json" "(lambda t: t['kinds'] == ['shm'] and t['selected'][0]['ranks'] == [0, 1, 2] and 'ob1' in t['selected'][0]['components']['pml'])(d['summary']['locate']['transport'])" "selection and kinds in the report"
run_capture tr_tcp timeout 120 mpirun --oversubscribe --mca btl self,tcp -np 3 "$FACTORYBENCH" locate --backend host \
  --tests transport --expect-transport shm --output "$T/tr5.json"
[ "$RC" -eq 1 ] && grep -q "^transport: Open MPI uses socket but --expect-transport allows only shm (.*btl self,tcp (all 3 rank(s)); transports socket)$" "$T/tr_tcp.out" \
  && ok "--mca btl self,tcp: sockets fail --expect-transport shm" || fail "tr_tcp: exit $RC: $(cat "$T/tr_tcp.out" "$T/tr_tcp.err")"
assert_json "$T/tr5.json" "d['summary']['locate']['transport']['btl_requested'] == 'self,tcp' and d['summary']['locate']['transport']['selected'][0]['components']['btl'] == ['self', 'tcp']" "requested and selected BTLs recorded"

# One rank per node (4 ranks as 4 hosts), rank 1 slowed by 150 ms per all-reduce: a node alone has no
# all-reduce, so the rounds narrow it to the pair {fake0, fake1}; the cross-check (fake0 with fake2, fake1
# with fake3) clears fake0 and names fake1 alone. And progress on stderr (rank 0) once a phase has run a few
# seconds: the delay makes the bisection (3 rounds x 3 passes x 5 calls) last over 6 s on any machine.
# The slow pair is about 5000x below the healthy one; --outlier-threshold 0.99 (100x), as above, because the
# default 0.5 flagged the healthy cross pair fake0+fake2 at 3x below {fake2, fake3} in a sanitizer run.
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

# Bad input: one line, exit 2, no report.
printf 'not an NCCL log\n' >"$T/garbage.log"
expect_error nccl_log_garbage 2 "invalid --nccl-log '$T/garbage.log': no NCCL transport line in it \(expected NCCL_DEBUG=INFO output" \
  fb locate --backend host --tests transport --nccl-log "$T/garbage.log" --output "$T/bad.json"
expect_error nccl_log_unread 2 "^factorybench: error: --nccl-log is read by the transport test: add --tests transport or --expect-transport$" \
  fb locate --backend host --tests bisection --nccl-log "$T/nccl.log" --output "$T/bad.json"
expect_error bad_transport 2 "invalid --expect-transport 'nvlink': unknown kind 'nvlink'" \
  fb locate --backend host --expect-transport nvlink --output "$T/bad.json"
expect_error bad_floors 2 "unknown floors 'nope' \(available: gb200-nvl72, gb300-nvl72, h100-8gpu, h200-8gpu, network-400g\)" \
  fb locate --backend host --floors nope --output "$T/bad.json"
expect_error bad_threshold 2 "invalid --outlier-threshold 1.5: must be a fraction in \(0, 1\)" \
  fb locate --backend host --outlier-threshold 1.5 --output "$T/bad.json"
expect_error bad_tests 2 "invalid --tests 'p2p,ring'" fb locate --backend host --tests p2p,ring --output "$T/bad.json"
expect_error bad_bytes 2 "invalid -b/--bytes '0'" fb locate --backend host -b 0 --output "$T/bad.json"
expect_error bad_inject 2 "invalid FACTORYBENCH_INJECT entry 'slow-link@ranks=1': missing delay=|ranks must be A-B" \
  env FACTORYBENCH_INJECT=slow-link@ranks=1 "$FACTORYBENCH" locate --backend host --output "$T/bad.json"
# A slow link acts on the matrix's messages: with the bisection alone it could not act, and the run passed.
run_capture link_no_p2p timeout 120 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=slow-link@ranks=0-1,delay=5ms \
  "$FACTORYBENCH" locate --backend host --tests bisection --output "$T/bad.json"
[ "$RC" -eq 2 ] && grep -q "locate sends no point-to-point message, so slow-link cannot act on it" "$T/link_no_p2p.err" \
  && ok "slow-link without p2p: refused" || fail "link_no_p2p: exit $RC: $(head -3 "$T/link_no_p2p.err")"
expect_error bad_hosts 2 "invalid FACTORYBENCH_FAKE_HOSTS '3': expected a number of hosts that divides the world size 1" \
  env FACTORYBENCH_FAKE_HOSTS=3 "$FACTORYBENCH" locate --backend host --output "$T/bad.json"
[ ! -e "$T/bad.json" ] && ok "no report written on bad input" || fail "a report was written on bad input"
finish
