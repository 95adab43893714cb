#!/usr/bin/env bash
# factorybench gemm on the host backend as a user runs it: every host dtype checked against the fp64
# reference, the report's contract metrics, a batched shape, the sweep summary and a model's layer GEMMs.
. "$(dirname "$0")/../lib.sh"
cd "$T"

run_capture dtypes bash -c 'for d in fp32 fp64 bf16; do
    "$FACTORYBENCH" gemm --backend host --dtype $d --m 256 --n 192 --k 128 --iters 3 --warmup 1 -o "'"$T"'/$d.json" || exit $?
  done'
[ "$RC" -eq 0 ] && ok "fp32, fp64, bf16 runs exit 0" || fail "dtype runs exit $RC: $(cat "$T/dtypes.err")"
for d in fp32 fp64 bf16; do
  validate "$T/$d.json"
  assert_json "$T/$d.json" "d['results'][0]['name'] == '$d/256x192x128' and d['results'][0]['status'] == 'ok'" "$d: name and status"
  assert_json "$T/$d.json" "all(m in d['results'][0]['metrics'] for m in ('tflops', 'time_us', 'mfu'))" "$d: tflops, time_us, mfu"
  assert_json "$T/$d.json" "d['results'][0]['metrics']['tflops']['stats']['n'] == 3 and d['results'][0]['metrics']['tflops']['value'] > 0" "$d: 3 timed samples"
  assert_json "$T/$d.json" "0 < d['results'][0]['metrics']['mfu']['value'] and d['results'][0]['metrics']['mfu']['unit'] == 'fraction'" "$d: mfu is a positive fraction"
  assert_json "$T/$d.json" "d['results'][0]['params']['check'] is True and d['results'][0]['extra']['check']['worst_error_ratio'] <= 1" "$d: checked against fp64"
  assert_json "$T/$d.json" "d['summary']['peak_source'].startswith('measured') and len(d['results'][0]['per_rank']['tflops']) == 1" "$d: peak source and per_rank"
done
assert_json "$T/bf16.json" "d['results'][0]['params']['emulated'] == ('emulated' in d['results'][0]['params']['engine'])" "bf16: emulated flag matches the engine name"
grep -q "fp32/256x192x128" "$T/dtypes.out" && ok "table printed" || fail "no table: $(cat "$T/dtypes.out")"
# One rank alone holds every core; lib.sh's OPENBLAS_NUM_THREADS=1 lets OpenBLAS use one: the peak (MFU's
# denominator) counts the cores and says the limit, and says nothing of it without the variable.
if [ "$(nproc)" -ge 2 ]; then
  assert_json "$T/fp32.json" "d['summary']['peak_source'].endswith('cores per rank; OpenBLAS runs 1 thread(s) (OPENBLAS_NUM_THREADS)')" \
    "the peak says OPENBLAS_NUM_THREADS limits OpenBLAS below the cores"
  run_capture threads env -u OPENBLAS_NUM_THREADS "$FACTORYBENCH" gemm --backend host --m 64 --n 64 --k 64 --iters 2 -o "$T/threads.json"
  assert_json "$T/threads.json" "'OPENBLAS_NUM_THREADS' not in d['summary']['peak_source']" "no limit said without OPENBLAS_NUM_THREADS"
fi

run_capture batched fb --seed 7 gemm --backend host --m 64 --n 32 --k 48 --batch 4 --ta T --iters 2 -o "$T/batched.json"
[ "$RC" -eq 0 ] && ok "batched run" || fail "batched exit $RC: $(cat "$T/batched.err")"
assert_json "$T/batched.json" "d['results'][0]['name'] == 'fp32/64x32x48/batch4/TN' and d['results'][0]['params']['flops'] == 2*64*32*48*4" "batched: name and FLOPs"
# The seed of the random data is in the report, given or not, so a run can be repeated from it.
assert_json "$T/fp32.json" "d['run']['seed'] == 42" "run.seed: the default"
assert_json "$T/batched.json" "d['run']['seed'] == 7" "run.seed: --seed 7"

run_capture sweep fb gemm --backend host --sweep --m 64:128:64 --n 64 --k 32,64 --iters 2 --warmup 0 -o "$T/sweep.json"
[ "$RC" -eq 0 ] && ok "sweep run" || fail "sweep exit $RC: $(cat "$T/sweep.err")"
validate "$T/sweep.json"
assert_json "$T/sweep.json" "len(d['results']) == 5 and d['summary']['sweep']['shapes'] == 4" "sweep: 2x1x2 shapes and the fp32/mamf result"
assert_json "$T/sweep.json" "d['summary']['sweep']['best']['tflops'] == max(r['metrics']['tflops']['value'] for r in d['results'][:4])" "sweep: best is the maximum"
assert_json "$T/sweep.json" "(lambda m, shapes: m['name'] == 'fp32/mamf' and m['metrics']['tflops']['value'] == max(r['metrics']['tflops']['value'] for r in shapes) and abs(m['metrics']['mean_tflops']['value'] - sum(r['metrics']['tflops']['value'] for r in shapes) / 4) < 1e-9 and m['params']['best_shape'] == d['summary']['sweep']['best']['name'])(d['results'][4], d['results'][:4])" "fp32/mamf result: best and mean of the sweep"
grep -q "# sweep: best" "$T/sweep.out" && ok "sweep line printed" || fail "sweep line missing"

run_capture model fb gemm --backend host --model tiny-dense --tp 2 --seq 64 --iters 2 --warmup 0 -o "$T/model.json"
[ "$RC" -eq 0 ] && ok "model run" || fail "model exit $RC: $(cat "$T/model.err")"
validate "$T/model.json"
assert_json "$T/model.json" "'tiny-dense/tp2/mlp_down/fwd' in [r['name'] for r in d['results']]" "model: results named for their layer role"
assert_json "$T/model.json" "all(r['params']['pass'] in ('fwd', 'dgrad', 'wgrad') for r in d['results'])" "model: fwd, dgrad, wgrad"

run_capture nocheck fb gemm --backend host --m 64 --n 64 --k 64 --iters 2 --no-check -o "$T/nocheck.json"
assert_json "$T/nocheck.json" "d['results'][0]['params']['check'] is False and 'check' not in d['results'][0].get('extra', {})" "--no-check skips the reference"
# A size given twice, or in a list and a range, is one case measured once: two results of one name made a
# report compare refuses ("results are told apart by benchmark + name, which must be unique").
run_capture dup fb gemm --backend host --m 64,32:64:32,64 --n 64 --k 64 --iters 2 -o "$T/dup.json"
assert_json "$T/dup.json" "[r['name'] for r in d['results']] == ['fp32/64x64x64', 'fp32/32x64x64']" "repeated sizes: each measured once, in the order first given"
run_capture dup_compare fb compare "$T/dup.json" "$T/dup.json"
[ "$RC" -eq 0 ] && ok "the report compares with itself" || fail "compare: exit $RC: $(cat "$T/dup_compare.err")"
# --autotune has nothing to choose on host (one OpenBLAS path): said once, the run goes on; unsaid when not given.
run_capture autotune fb gemm --backend host --m 64 --n 64 --k 64 --iters 2 --autotune 4 -o "$T/autotune.json"
[ "$RC" -eq 0 ] && ok "--autotune on host runs" || fail "--autotune on host: exit $RC: $(cat "$T/autotune.err")"
[ "$(grep -c -- '--autotune 4: the host backend.*ignored' "$T/autotune.err")" = 1 ] && ok "--autotune on host: one warning" || fail "--autotune on host: no warning: $(cat "$T/autotune.err")"
assert_json "$T/autotune.json" "'autotune' not in d['results'][0]['params']" "--autotune on host: not recorded as a parameter"
! grep -q -- "--autotune" "$T/nocheck.err" && ok "no --autotune warning when not given" || fail "unasked --autotune warning: $(cat "$T/nocheck.err")"
finish
