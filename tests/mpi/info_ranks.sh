#!/usr/bin/env bash
# `mpirun -np 3 factorybench info`: one report covering all three ranks, written by rank 0 only.
. "$(dirname "$0")/../lib.sh"
cd "$T"

run_capture info3 fb_mpirun 3 info --json --backend host --output "$T/info.json"
[ "$RC" -eq 0 ] || die "mpirun -np 3 info exited $RC: $(cat "$T/info3.err")"
validate "$T/info.json"
assert_json "$T/info.json" "d['run']['world_size'] == 3" "world_size 3"
assert_json "$T/info.json" "[r['rank'] for r in d['system']['ranks']] == [0, 1, 2]" "three rank entries"
assert_json "$T/info.json" "len(d['run']['hosts']) == 1" "one host"
# Rank 0's peaks as metrics, every rank's beside them (one node: one measurement, shared).
assert_json "$T/info.json" "(lambda r: sorted(r['per_rank']) == ['peak_bf16_tflops', 'peak_fp32_tflops', 'peak_fp64_tflops'] and all(len(v) == 3 and v[0] == r['metrics'][k]['value'] and v[1] == v[0] and v[2] == v[0] for k, v in r['per_rank'].items()))(d['results'][0])" "peaks per rank"
# Only rank 0 prints the report: the JSON on stdout appears once.
[ "$(grep -c '"schema"' "$T/info3.out")" -eq 1 ] && ok "rank 0 prints once" || fail "report printed $(grep -c '"schema"' "$T/info3.out") times"

# Ranks declared as 2 hosts (FACTORYBENCH_FAKE_HOSTS): every rank entry names its declared host and GPU, as
# run.hosts and the console do.
run_capture fake timeout 60 mpirun --oversubscribe -np 4 -x FACTORYBENCH_FAKE_HOSTS=2 "$FACTORYBENCH" info \
  --backend host --output "$T/fake.json"
assert_json "$T/fake.json" "[(r['host'][-6:], r['local_rank']) for r in d['system']['ranks']] == [('-fake0', 0), ('-fake0', 1), ('-fake1', 0), ('-fake1', 1)] and sorted({r['host'] for r in d['system']['ranks']}) == sorted(d['run']['hosts'])" "fake hosts: rank entries name the declared hosts"
grep -qE "^rank 3 \(.*-fake1, local 1\)" "$T/fake.out" && ok "fake hosts: console names the declared host" || fail "fake hosts console: $(cat "$T/fake.out")"

# Ranks started with different arguments stop with a clear error instead of deadlocking.
run_capture mismatch timeout 60 mpirun --oversubscribe -np 1 "$FACTORYBENCH" info --backend host : -np 1 "$FACTORYBENCH" info --backend host --json
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -q "different arguments" "$T/mismatch.err" \
  && ok "argument mismatch detected (exit $RC)" || fail "argument mismatch: exit $RC, $(cat "$T/mismatch.err")"

# A job-wide FACTORYBENCH_INJECT (an sbatch script's) with a hang: info makes no numbered call and acts on no
# injected fault, so it says nothing of a hang that never came (health and locate do: tests/mpi/locate_hang.sh).
run_capture inject timeout 60 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=hang@rank=1,call=5 "$FACTORYBENCH" info --backend host
[ "$RC" -eq 0 ] && ! grep -q "FACTORYBENCH_INJECT" "$T/inject.err" \
  && ok "info under an injected hang: exit 0, no word of the hang" || fail "inject: exit $RC: $(stderr_summary "$T/inject.err")"
finish
