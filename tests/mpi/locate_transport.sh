#!/usr/bin/env bash
# `factorybench locate --tests transport`: the transport record read from NCCL INFO lines (--nccl-log) or, on the
# host backend, from the components Open MPI selected, checked against --expect-transport; and the bad input
# locate refuses (one line, exit 2, no report). No speed is judged: this test runs beside others.
. "$(dirname "$0")/../lib.sh"
cd "$T"

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
grep -q "^transport: SKIP (a world of one rank has no peer: no transport to record)$" "$T/tr_mpi.out" && grep -q "^locate: SKIP (nothing judged)$" "$T/tr_mpi.out" \
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
