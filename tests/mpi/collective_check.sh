#!/usr/bin/env bash
# factorybench collective on the host (MPI engine) with 2, 3 and 4 ranks: every op with --check, in place and
# out of place, fp32 and int32; recorded busbw/algbw equals the nccl-tests factor; reduce ops; bf16/fp16 through
# the user-defined MPI ops; MoE alltoallv routing identical on all ranks; --split groups; the --min-busbw gate;
# the console imported (import nccl-tests) as the report its run wrote.
. "$(dirname "$0")/../lib.sh"
cd "$T"

COMMON=(collective --backend host --check -n 3 -w 1)

# Independent expectations, written out here rather than read from the tool.
FACTORS='{"allreduce": lambda n: 2*(n-1)/n, "allgather": lambda n: (n-1)/n, "reducescatter": lambda n: (n-1)/n,
 "alltoall": lambda n: (n-1)/n, "alltoallv": lambda n: (n-1)/n, "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0,
 "sendrecv": lambda n: 1.0}'
OPS="['allreduce','allgather','reducescatter','alltoall','alltoallv','broadcast','reduce','sendrecv']"

for n in 2 3 4; do
  for dt in fp32 int32; do
    f="$T/all_${n}_${dt}.json"
    run_capture "all_${n}_${dt}" fb_mpirun "$n" "${COMMON[@]}" --op all --inplace -d "$dt" -b 8 -e 64K -f 4 -o "$f"
    [ "$RC" -eq 0 ] || { fail "np $n $dt --op all exited $RC: $(stderr_summary "$T/all_${n}_${dt}.err")"; continue; }
    validate "$f"
    rows="[r for r in d['results'] if 'bytes' in r['params']]"
    assert_json "$f" "all(r['status'] == 'ok' and r['metrics']['wrong']['value'] == 0 for r in $rows)" \
      "np $n $dt: every op passes --check"
    assert_json "$f" "all({(r['params']['op'], r['params']['inplace']) for r in $rows} >= {(o, p) for o in $OPS for p in (False, True)} for _ in [0])" \
      "np $n $dt: every op in place and out of place"
    assert_json "$f" "all(r['params']['ranks'] == $n and r['params']['dtype'] == '$dt' for r in $rows)" "np $n $dt: params"
    assert_json "$f" "all(r['name'] == '{}/$dt/{}{}'.format(r['params']['op'], r['params']['bytes'], '/inplace' if r['params']['inplace'] else '') for r in $rows)" \
      "np $n $dt: names OP/DTYPE/SIZE"
    assert_json "$f" "(lambda F: all(abs(r['metrics']['busbw_gbps']['value'] - r['metrics']['algbw_gbps']['value'] * F[r['params']['op']]($n)) <= 1e-9 * max(1.0, r['metrics']['algbw_gbps']['value']) for r in $rows))($FACTORS)" \
      "np $n $dt: busbw/algbw = nccl-tests factor"
    assert_json "$f" "all(r['metrics']['time_us']['value'] > 0 and r['metrics']['time_us']['stats']['n'] == 3 and len(r['per_rank']['time_us']) == $n for r in $rows)" \
      "np $n $dt: time_us with stats and per-rank values"
    # S semantics: allgather/reducescatter/alltoall sizes are whole, 16-byte-aligned per-rank chunks × ranks.
    assert_json "$f" "all(r['params']['bytes'] == r['params']['count'] * $n * 4 and (r['params']['count'] * 4) % 16 == 0 for r in $rows if r['params']['op'] in ('allgather','reducescatter','alltoall'))" \
      "np $n $dt: per-rank chunk rounding"
    assert_json "$f" "d['summary']['avg_busbw_gbps'] > 0 and [r for r in d['results'] if r['name'] == 'avg_busbw']" "np $n $dt: average busbw"
    # The average is nccl-tests' (the rows' mean busbw); its spread is the per-iteration average's: its mean is
    # the rows' mean of per-iteration means, and its extremes lie within the rows' mean extremes.
    avg="next(r for r in d['results'] if r['name'] == 'avg_busbw')['metrics']['busbw_gbps']"
    mean="(lambda v: sum(v) / len(v))"
    close="(lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b)))"
    assert_json "$f" "$close($avg['value'], $mean([r['metrics']['busbw_gbps']['value'] for r in $rows])) and $avg['stats']['n'] == 3 and $close($avg['stats']['mean'], $mean([r['metrics']['busbw_gbps']['stats']['mean'] for r in $rows])) and $avg['stats']['min'] >= $mean([r['metrics']['busbw_gbps']['stats']['min'] for r in $rows]) * (1 - 1e-9) and $avg['stats']['max'] <= $mean([r['metrics']['busbw_gbps']['stats']['max'] for r in $rows]) * (1 + 1e-9) and $avg['stats']['stddev'] > 0" \
      "np $n $dt: average busbw: the rows' mean, with the per-iteration average's spread"
  done
done
grep -q "Avg bus bandwidth" "$T/all_3_fp32.out" && grep -q "out-of-place" "$T/all_3_fp32.out" \
  && grep -q "#wrong" "$T/all_3_fp32.out" && ok "nccl-tests style table" || fail "table: $(head -20 "$T/all_3_fp32.out")"
[ "$(grep -c "Avg bus bandwidth" "$T/all_3_fp32.out")" -eq 1 ] && ok "rank 0 prints once" || fail "printed more than once"

# Reduce ops (odd rank counts included) and the 16-bit formats through the user-defined MPI ops.
for n in 3 4; do
  for spec in "fp32 avg" "fp32 max" "int32 min" "int32 avg" "bf16 sum" "bf16 avg" "bf16 max" "fp16 sum" "fp16 min"; do
    set -- $spec
    f="$T/red_${n}_$1_$2.json"
    run_capture "red_${n}_$1_$2" fb_mpirun "$n" "${COMMON[@]}" --op allreduce --inplace -d "$1" --redop "$2" -b 16 -e 16K -f 8 -o "$f"
    [ "$RC" -eq 0 ] || { fail "np $n allreduce $1 $2 exited $RC: $(stderr_summary "$T/red_${n}_$1_$2.err")"; continue; }
    assert_json "$f" "all(r['status'] == 'ok' and r['metrics']['wrong']['value'] == 0 and r['params']['redop'] == '$2' for r in d['results'] if 'bytes' in r['params'])" \
      "np $n allreduce $1 $2 --check"
  done
  f="$T/rs_${n}.json"
  run_capture "rs_${n}" fb_mpirun "$n" "${COMMON[@]}" --op reducescatter --redop avg -d bf16 --inplace -b 64 -e 8K -f 8 -o "$f"
  [ "$RC" -eq 0 ] && ok "np $n reducescatter bf16 avg" || fail "np $n reducescatter bf16 avg: $(stderr_summary "$T/rs_${n}.err")"
  f="$T/reduce_${n}.json"
  run_capture "reduce_${n}" fb_mpirun "$n" "${COMMON[@]}" --op reduce --root $((n - 1)) --redop max -d fp16 -b 64 -e 8K -f 8 -o "$f"
  [ "$RC" -eq 0 ] && assert_json "$f" "all(r['params']['root'] == $((n - 1)) for r in d['results'] if 'bytes' in r['params'])" "np $n reduce root $((n - 1))" \
    || fail "np $n reduce fp16 root: $(stderr_summary "$T/reduce_${n}.err")"
done

# --average 0..3 (nccl-tests -a): the mean time of each mode is bounded by min ≤ mean ≤ max of the per-rank means.
for a in 0 1 2 3; do
  run_capture "avg$a" fb_mpirun 3 "${COMMON[@]}" --op allreduce -b 4K -e 4K -a "$a" -o "$T/avg$a.json"
  [ "$RC" -eq 0 ] && assert_json "$T/avg$a.json" "d['results'][0]['params']['average'] == $a" "-a $a" || fail "-a $a: $(cat "$T/avg$a.err")"
done
# As nccl-tests combines them: each rank's mean time, then rank 0's, the mean, the min or the max of those.
for a in 0 1 2 3; do
  pick=$(echo "lambda m: m[0]|lambda m: sum(m) / len(m)|min|max" | cut -d'|' -f$((a + 1)))
  assert_json "$T/avg$a.json" "abs(d['results'][0]['metrics']['time_us']['value'] - ($pick)(d['results'][0]['per_rank']['time_us'])) < 1e-6 * d['results'][0]['metrics']['time_us']['value']" \
    "-a $a: time_us is nccl-tests' combination of the per-rank means"
done

# MoE dispatch/combine: seeded routing, identical on all ranks, deduplicated per destination rank.
for n in 2 4; do
  f="$T/moe_$n.json"
  run_capture "moe_$n" fb_mpirun "$n" "${COMMON[@]}" --op alltoallv -d bf16 --moe-tokens 64 --hidden 32 --experts 8 --top-k 3 --skew 0.8 -o "$f"
  [ "$RC" -eq 0 ] || { fail "np $n MoE alltoallv exited $RC: $(stderr_summary "$T/moe_$n.err")"; continue; }
  validate "$f"
  moe="[r for r in d['results'] if 'phase' in r['params']]"
  assert_json "$f" "sorted(r['params']['phase'] for r in $moe) == ['combine', 'dispatch']" "np $n: dispatch and combine results"
  assert_json "$f" "all(len(set(r['per_rank']['routing_checksum'])) == 1 and len(r['per_rank']['routing_checksum']) == $n for r in $moe)" \
    "np $n: routing identical on all ranks"
  assert_json "$f" "all(all(64 <= sum(row) <= 64 * min(3, $n) and max(row) <= 64 for row in r['extra']['tokens_sent']) for r in $moe if r['params']['phase'] == 'dispatch')" \
    "np $n: every token sent once per destination rank"
  assert_json "$f" "(lambda a, b: a == [list(c) for c in zip(*b)])(*[r['extra']['tokens_sent'] for r in sorted($moe, key=lambda r: r['params']['phase'])])" \
    "np $n: combine is the transposed dispatch"
  assert_json "$f" "all(1.0 / $n - 1e-12 <= r['metrics']['busiest_share']['value'] <= 1 and r['metrics']['wrong']['value'] == 0 for r in $moe)" \
    "np $n: busiest share in [1/n, 1], --check passes"
  assert_json "$f" "all(r['params']['bytes'] == max(max(sum(row), sum(col)) for row, col in zip(r['extra']['tokens_sent'], zip(*r['extra']['tokens_sent']))) * 32 * 2 for r in $moe)" \
    "np $n: S = busiest rank's bytes"
done
# Same seed → same matrix in separate runs; another seed → another matrix.
run_capture moe_again fb_mpirun 2 "${COMMON[@]}" --op alltoallv -d bf16 --moe-tokens 64 --hidden 32 --experts 8 --top-k 3 --skew 0.8 -o "$T/moe_again.json"
run_capture moe_seed fb_mpirun 2 "${COMMON[@]}" --op alltoallv -d bf16 --moe-tokens 64 --hidden 32 --experts 8 --top-k 3 --skew 0.8 --seed 7 -o "$T/moe_seed.json"
"$PY" - "$T/moe_2.json" "$T/moe_again.json" "$T/moe_seed.json" <<'PYEOF' && ok "routing reproducible per seed" || fail "routing reproducibility"
import json, sys
m = [next(r['extra']['tokens_sent'] for r in json.load(open(p))['results'] if r['params'].get('phase') == 'dispatch') for p in sys.argv[1:]]
sys.exit(0 if m[0] == m[1] and m[0] != m[2] else 1)
PYEOF

# --split 2 on 4 ranks: two groups, each reported separately with its own average.
f="$T/split.json"
run_capture split fb_mpirun 4 "${COMMON[@]}" --op allreduce --split 2 -b 1K -e 4K -o "$f"
if [ "$RC" -eq 0 ]; then
  assert_json "$f" "sorted({r['params']['group'] for r in d['results'] if 'bytes' in r['params']}) == [0, 1]" "--split 2: two groups"
  assert_json "$f" "all(r['params']['ranks'] == 2 and r['name'].endswith('/group%d' % r['params']['group']) for r in d['results'] if 'bytes' in r['params'])" \
    "--split 2: 2-rank groups, names carry the group"
  assert_json "$f" "sorted(r['name'] for r in d['results'] if r['name'].startswith('avg_busbw')) == ['avg_busbw/group0', 'avg_busbw/group1']" \
    "--split 2: one average per group"
  # One table per group (nccl-tests prints one per run): a header each, the sizes 1K, 2K, 4K under it in order.
  [ "$(grep -c '^# allreduce: 2 rank(s), fp32 (group' "$T/split.out")" -eq 2 ] \
    && [ "$(awk '/^# allreduce/ {g=$0} /^ +[0-9]+ / {print g " " $1}' "$T/split.out" | tr '\n' '|')" = \
      "# allreduce: 2 rank(s), fp32 (group 0: ranks 0-1) 1024|# allreduce: 2 rank(s), fp32 (group 0: ranks 0-1) 2048|# allreduce: 2 rank(s), fp32 (group 0: ranks 0-1) 4096|# allreduce: 2 rank(s), fp32 (group 1: ranks 2-3) 1024|# allreduce: 2 rank(s), fp32 (group 1: ranks 2-3) 2048|# allreduce: 2 rank(s), fp32 (group 1: ranks 2-3) 4096|" ] \
    && ok "--split 2: one table per group on stdout" || fail "--split 2 stdout: $(cat "$T/split.out")"
else
  fail "--split 2 exited $RC: $(cat "$T/split.err")"
fi
# (The message itself is checked in e2e/collective_bad_input.sh: under mpirun, rank 0's line can be lost when
# mpirun tears the job down after another rank's exit 2.)
run_capture split_bad fb_mpirun 3 "${COMMON[@]}" --split 2 -o "$T/split_bad.json"
[ "$RC" -eq 2 ] && [ ! -e "$T/split_bad.json" ] && ! grep -q "internal error" "$T/split_bad.err" \
  && ok "--split 2 on 3 ranks: exit 2, no report" || fail "--split 2 on 3 ranks: exit $RC, $(cat "$T/split_bad.err")"

# --min-busbw: an unreachable gate fails the run (exit 1) but still writes the report.
run_capture gate fb_mpirun 2 "${COMMON[@]}" --op allreduce -b 1K -e 1K --min-busbw 100000 -o "$T/gate.json"
[ "$RC" -eq 1 ] && assert_json "$T/gate.json" "[r['status'] for r in d['results'] if r['name'] == 'avg_busbw'] == ['failed']" "--min-busbw gate fails" \
  || fail "--min-busbw gate: exit $RC"
# -q prints errors only, and a failed gate is one: the exit 1 still says why, on one line.
run_capture gate_quiet fb_mpirun 2 "${COMMON[@]}" --op allreduce -b 1K -e 1K --min-busbw 100000 -q
[ "$RC" -eq 1 ] && [ ! -s "$T/gate_quiet.out" ] && grep -q "error: collective avg_busbw failed: average busbw .* is below --min-busbw 100000" "$T/gate_quiet.err" \
  && ok "-q: a failed gate still says why" || fail "-q gate: exit $RC, stderr '$(cat "$T/gate_quiet.err")'"
# FACTORYBENCH_INJECT is checked against the job: a rank outside it, or a slow link with no sendrecv to act on,
# is refused (it used to run and test nothing).
run_capture inject_rank mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=slow-rank@rank=9,delay=1ms "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 1K
[ "$RC" -eq 2 ] && grep -q "slow-rank names rank 9, but the job has ranks 0..1" "$T/inject_rank.err" \
  && ok "injection outside the job refused" || fail "inject_rank: exit $RC $(cat "$T/inject_rank.err")"
run_capture inject_link mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=slow-link@ranks=0-1,delay=1ms "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 1K
[ "$RC" -eq 2 ] && grep -q "sends no point-to-point message, so slow-link cannot act on it" "$T/inject_link.err" \
  && ok "slow link without sendrecv refused" || fail "inject_link: exit $RC $(cat "$T/inject_link.err")"
# One wrong element on rank 1 at its second --check (the 2K case): that result fails naming the rank, the
# others pass, and the run exits 1 with the report written.
run_capture inject_wrong mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=wrong@rank=1,check=2 "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 4K -f 2 -o "$T/inject_wrong.json"
[ "$RC" -eq 1 ] && assert_json "$T/inject_wrong.json" \
  "[(r['name'], r['status'], r.get('error')) for r in d['results'] if 'bytes' in r['params']] == [('allreduce/fp32/1024', 'ok', None), ('allreduce/fp32/2048', 'failed', '1 wrong element(s) in --check (rank 1: 1)'), ('allreduce/fp32/4096', 'ok', None)]" \
  "wrong@rank=1,check=2: only the 2K case fails, naming rank 1" || fail "inject_wrong: exit $RC $(stderr_summary "$T/inject_wrong.err")"
mkdir -p "$T/late_rd"
run_capture inject_wrong_late mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=wrong@rank=1,check=9 "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 4K -f 2 --run-dir "$T/late_rd"
[ "$RC" -eq 2 ] && grep -q "wrong at check 9, but this run makes 3 check(s)" "$T/inject_wrong_late.err" \
  && ok "wrong@ past the run's checks refused" || fail "inject_wrong_late: exit $RC $(cat "$T/inject_wrong_late.err")"
# The variable set for rank 0 alone (an MPMD launch): every rank stops, exit 2 (rank 1 waited in the first
# collective for ever).
run_capture inject_one_rank timeout 120 mpirun --oversubscribe -np 1 -x FACTORYBENCH_INJECT=bogus@rank=0 "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 1K : -np 1 "$FACTORYBENCH" "${COMMON[@]}" --op allreduce -b 1K -e 1K
[ "$RC" -eq 2 ] && grep -q "unknown kind 'bogus'" "$T/inject_one_rank.err" && ok "an injection on one rank alone stops every rank" \
  || fail "inject_one_rank: exit $RC $(cat "$T/inject_one_rank.err")"
# State directories an interrupted job left (Open MPI's SIGKILL after Ctrl-C beats the ranks' cleanup) are swept
# once no rank has written them for 10 minutes; a diagnosed hang's, a live one's and one holding anything else
# stay, and so does an empty one just made (another rank's, before its first state file: sweeping it raced
# that rank's own mkdir, which then failed, in a loaded CI run).
mkdir -p "$T/sweep"/fb-hang-{old,old-empty,hung,fresh,new-empty,user}
touch "$T/sweep/fb-hang-old/rank-0.state" "$T/sweep/fb-hang-old/hang.peer-writer" "$T/sweep/fb-hang-hung/rank-0.state" \
  "$T/sweep/fb-hang-hung/hang.reported" "$T/sweep/fb-hang-fresh/rank-1.state" "$T/sweep/fb-hang-user/notes.txt"
touch -d "20 minutes ago" "$T/sweep"/fb-hang-old/* "$T/sweep"/fb-hang-hung/* "$T/sweep"/fb-hang-user/*
touch -d "20 minutes ago" "$T/sweep"/fb-hang-{old,old-empty,hung,fresh,user}
run_capture sweep fb "${COMMON[@]}" --op allreduce -b 1K -e 1K --run-dir "$T/sweep"
[ "$RC" -eq 0 ] && [ "$(ls "$T/sweep" | tr '\n' ' ')" = "fb-hang-fresh fb-hang-hung fb-hang-new-empty fb-hang-user " ] \
  && ok "stale fb-hang directories swept, the others kept" || fail "sweep: exit $RC, left $(ls "$T/sweep")"
# Refused after the hang watchdog started: its state files go with the run (they were left behind).
[ -z "$(ls -A "$T/late_rd")" ] && ok "a refused run leaves no fb-hang state files" || fail "left behind: $(ls -A "$T/late_rd")"
run_capture inject_wrong_nocheck mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=wrong@rank=1 "$FACTORYBENCH" \
  collective --backend host --no-check -n 3 -w 1 --op allreduce -b 1K -e 1K
[ "$RC" -eq 2 ] && grep -q "runs no collective --check for wrong to act on" "$T/inject_wrong_nocheck.err" \
  && ok "wrong@ with --no-check refused" || fail "inject_wrong_nocheck: exit $RC $(cat "$T/inject_wrong_nocheck.err")"
run_capture inject_sdc mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=sdc@rank=1 "$FACTORYBENCH" \
  "${COMMON[@]}" --op allreduce -b 1K -e 1K -o "$T/inject_sdc.json"
[ "$RC" -eq 2 ] && [ ! -e "$T/inject_sdc.json" ] && grep -q "collective has no burn-in check for sdc to act on" "$T/inject_sdc.err" \
  && ok "sdc@ refused (burn-in's)" || fail "inject_sdc: exit $RC $(cat "$T/inject_sdc.err")"
# A rank that never enters its 12th collective (the second size's first): the hang watchdog names it (and
# rank 0, stuck inside the call), writes the report so far (the first size's result, which it dropped) with a
# failed "hang" result and ends the job (exit 1), instead of waiting. The hang result and the summary carry the
# telemetry up to the hang, the writing rank's alone (it had none).
mkdir -p "$T/hang_rd"
run_capture inject_hang timeout 120 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=hang@rank=1,call=12 \
  "$FACTORYBENCH" --telemetry full "${COMMON[@]}" --op allreduce -b 1K -e 64K --hang-timeout 2s --run-dir "$T/hang_rd" \
  -o "$T/inject_hang.json"
[ "$RC" -eq 1 ] && grep -qE "^hang: rank 1 \(host .*\) never entered allreduce #12 \(2 KiB\)$" "$T/inject_hang.out" \
  && ok "hang@rank=1,call=12: the watchdog names rank 1 and the job ends (exit 1)" \
  || fail "inject_hang: exit $RC: $(cat "$T/inject_hang.out" "$T/inject_hang.err" | head -5)"
[ -e "$T/inject_hang.json" ] && assert_json "$T/inject_hang.json" \
  "[r['status'] for r in d['results'] if r['name'] == 'hang'] == ['failed'] and 'rank 1 (host' in [r['error'] for r in d['results'] if r['name'] == 'hang'][0]" \
  "the hang's report carries a failed hang result naming rank 1" || fail "inject_hang: no report"
[ -e "$T/inject_hang.json" ] && assert_json "$T/inject_hang.json" \
  "[(r['name'], r['status']) for r in d['results']] == [('allreduce/fp32/1024', 'ok'), ('hang', 'failed')]" \
  "the hang's report keeps the size measured before it"
[ -e "$T/inject_hang.json" ] && assert_json "$T/inject_hang.json" \
  "'telemetry' in d['results'][1]['extra'] and len(d['summary']['telemetry']['ranks']) == 1 and 'the job hung' in d['summary']['telemetry']['note'] and len(d['summary']['telemetry']['ranks'][0]['series']['t_s']) > 0" \
  "the hang's report carries the writing rank's telemetry, said to be that rank's alone"
# The console printed the size as it was measured, and closes its table before the diagnosis.
grep -qE "^ +1024 +256 +fp32 +sum" "$T/inject_hang.out" \
  && [ "$(grep -A2 "^# Wrong elements : 0 OK$" "$T/inject_hang.out" | tail -1 | cut -c1-6)" = "hang: " ] \
  && ok "the hang's console: the size measured, then the footer, then the diagnosis" || fail "inject_hang console: $(cat "$T/inject_hang.out")"
# With --inplace the hang comes in the 1 KiB size's in-place half: its out-of-place figures, kept in the report,
# are printed too (they waited for their twin), with dashes for the in-place columns.
run_capture inject_hang_inplace timeout 120 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=hang@rank=1,call=12 \
  "$FACTORYBENCH" "${COMMON[@]}" --op allreduce -b 1K -e 64K --inplace --hang-timeout 2s --run-dir "$T/hang_rd" \
  -o "$T/inject_hang_inplace.json"
[ "$RC" -eq 1 ] && grep -qE "^ +1024 +256 +fp32 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +- +- +- +-$" "$T/inject_hang_inplace.out" \
  && grep -q "^# Wrong elements : 0 OK$" "$T/inject_hang_inplace.out" \
  && ok "a hang in an in-place half: the out-of-place half printed, and the footer" \
  || fail "inject_hang_inplace: exit $RC: $(cat "$T/inject_hang_inplace.out")"
assert_json "$T/inject_hang_inplace.json" "[(r['name'], r['status']) for r in d['results']] == [('allreduce/fp32/1024', 'ok'), ('hang', 'failed')]" \
  "a hang in an in-place half: the report keeps the out-of-place half"
expect_error hang_rd_without_watchdog 2 "^factorybench: error: --run-dir holds the hang watchdog's state files: it does nothing with --hang-timeout 0$" \
  fb "${COMMON[@]}" --op allreduce -b 1K -e 1K --hang-timeout 0 --run-dir "$T/hang_rd"
run_capture gate_ok fb_mpirun 2 "${COMMON[@]}" --op allreduce -b 1K -e 1K --min-busbw 0 -o "$T/gate_ok.json"
[ "$RC" -eq 0 ] && ok "--min-busbw 0 passes" || fail "--min-busbw 0: exit $RC"

# The console imports as the report its run wrote (import nccl-tests reads factorybench's own table): every
# op in and out of place on 3 ranks under `mpirun --tag-output`, the same results and statuses, each figure
# within half its last printed digit (same_as_report), and compare pairs every result and metric with no
# verdict worse. Its tolerance is opened to 100%: on a loaded machine a busbw of 0.053 GB/s prints as 0.05,
# 6% off, a rounding that same_as_report bounds exactly.
# same_as_report REPORT IMPORTED: the imported results are the report's, figures within the console's digits.
same_as_report() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
want, got = (json.load(open(p))["results"] for p in sys.argv[1:])
got = {r["name"]: r for r in got}
assert sorted(got) == sorted(r["name"] for r in want), (sorted(got), [r["name"] for r in want])
for r in want:
    g = got[r["name"]]
    assert g["status"] == r["status"], (r["name"], g["status"], r["status"])
    for k, m in r["metrics"].items():
        half = 0 if k == "wrong" else 0.0005 if r["name"].startswith("avg_busbw") or k == "busiest_share" else 0.005
        assert abs(g["metrics"][k]["value"] - m["value"]) <= half + 1e-12, (r["name"], k, g["metrics"][k], m)
PYEOF
}
run_capture console mpirun --oversubscribe --tag-output -np 3 "$FACTORYBENCH" "${COMMON[@]}" --op all --inplace -b 1M -e 4M \
  -f 2 -o "$T/console.json"
[ "$RC" -eq 0 ] || fail "console run: exit $RC $(stderr_summary "$T/console.err")"
run_capture console_import fb import nccl-tests "$T/console.out" -o "$T/console_import.json"
[ "$RC" -eq 0 ] && validate "$T/console_import.json" && same_as_report "$T/console.json" "$T/console_import.json" \
  && ok "its console imports as its report: 8 ops x 3 sizes x 2 placements and the average" \
  || fail "console import: exit $RC $(cat "$T/console_import.err")"
run_capture console_compare fb compare "$T/console.json" "$T/console_import.json" --fail-on-missing --tolerance 100%
[ "$RC" -eq 0 ] && ok "compare: report vs its imported console, exit 0" \
  || fail "console compare: exit $RC $(grep -v SAME "$T/console_compare.out")"
# The run with a wrong element (above): the same failed result, exit 1.
run_capture wrong_import fb import nccl-tests "$T/inject_wrong.out" -o "$T/wrong_import.json"
[ "$RC" -eq 1 ] && same_as_report "$T/inject_wrong.json" "$T/wrong_import.json" \
  && ok "a console with a wrong element imports as its report: allreduce/fp32/2048 failed, exit 1" \
  || fail "wrong console import: exit $RC $(cat "$T/wrong_import.err")"
finish
