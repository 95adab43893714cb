#!/usr/bin/env bash
# factorybench attention on the host backend (the fp64 reference engine): a valid report whose FLOPs are
# Megatron's, both directions timed, sampled rows checked; --model takes the step's per-rank heads; bad
# input gets one line and exit 2 before anything runs.
. "$(dirname "$0")/../lib.sh"
cd "$T"

run_capture run fb attention --backend host --seq 64,96 --heads 4 --kv-heads 2 --head-dim 16 -n 3 -w 1 -o "$T/run.json"
[ "$RC" -eq 0 ] && ok "exit 0" || fail "exit $RC: $(cat "$T/run.err")"
validate "$T/run.json"
assert_json "$T/run.json" "[r['name'] for r in d['results']] == ['fp32/b1/s64/h4-kv2/d16', 'fp32/b1/s96/h4-kv2/d16']" "one result per --seq"
# Megatron: 2 · 2 · s² · (heads · d) / 2 forward (causal), twice that backward: s 64 → 524288 + 1048576.
assert_json "$T/run.json" "d['results'][0]['params']['flops_forward'] == 524288 and d['results'][0]['params']['flops_backward'] == 1048576" "Megatron FLOPs"
assert_json "$T/run.json" "all(r['metrics'][m]['value'] > 0 for r in d['results'] for m in ('tflops', 'forward_tflops', 'backward_tflops', 'forward_time_us', 'backward_time_us'))" "both directions timed"
assert_json "$T/run.json" "all(r['metrics']['tflops']['stats']['n'] == 3 for r in d['results'])" "3 timed iterations each"
assert_json "$T/run.json" "all(r['status'] == 'ok' and r['params']['engine'] == 'reference' and r['extra']['check']['rows'] == 16 and r['extra']['check']['worst_error_ratio'] < 1 for r in d['results'])" "reference engine, 16 rows checked"
assert_json "$T/run.json" "abs(d['results'][0]['metrics']['tflops']['value'] * d['results'][0]['metrics']['time_us']['value'] * 1e6 - 1572864) < 1572864 * 1e-9" "fwd+bwd TFLOP/s x time = the FLOP count"
grep -q "^# engine: reference" "$T/run.out" && grep -q "^fp32/b1/s96/h4-kv2/d16 .* ok$" "$T/run.out" && ok "console table" ||
  fail "console: $(cat "$T/run.out")"

run_capture model fb attention --backend host --model tiny-mla -n 2 -w 0 -o "$T/model.json"
[ "$RC" -eq 0 ] || fail "--model tiny-mla: exit $RC: $(cat "$T/model.err")"
assert_json "$T/model.json" "(lambda p: p['model'] == 'tiny-mla' and p['head_dim'] == 48 and p['value_dim'] == 32 and p['heads'] == p['kv_heads'] == 4 and p['seq'] == 128)(d['results'][0]['params'])" "--model tiny-mla: MLA's 32 + 16 q/k and 32 v head dims"
run_capture tp fb attention --backend host --model tiny-dense --tp 2 --seq 32 --no-causal -n 1 -w 0 -o "$T/tp.json"
assert_json "$T/tp.json" "(lambda r: r['params']['heads'] == 2 and r['params']['kv_heads'] == 1 and not r['params']['causal'] and r['name'].endswith('/full'))(d['results'][0])" "--tp 2 halves the heads; --no-causal"
grep -q "^# engine: .*(full, not causal: whole)$" "$T/tp.out" && ok "--no-causal: the header says the FLOPs are not halved" \
  || fail "--no-causal header: $(head -1 "$T/tp.out")"
grep -q "^# engine: .*(causal halved)$" "$T/run.out" && ok "causal: the header says the FLOPs are halved" \
  || fail "causal header: $(head -1 "$T/run.out")"

# The H200 reference holds PyTorch SDPA's attention under this command's names: a run compares by name.
REF="$FB_SOURCE_DIR/configs/references/h200-8gpu.json"
validate "$REF"
"$PY" - "$REF" "$T/mine_h200.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = next(r for r in d["results"] if r["benchmark"] == "attention" and r["name"] == "bf16/b1/s8192/h32-kv8/d128")
r["metrics"]["tflops"]["value"] = 412.29
d["results"] = [r]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
run_capture vs_ref fb compare "$REF" "$T/mine_h200.json" --format md
grep -qF "| attention/bf16/b1/s8192/h32-kv8/d128 | tflops | 458.1 | 412.3 | -10.0% | 0.900 | **WORSE** |" "$T/vs_ref.out" &&
  ok "compare against the H200 attention anchor by name" || fail "reference comparison: $(cat "$T/vs_ref.out")"

expect_error engine_gemm 2 "--engine gemm: the blocked-GEMM attention runs inside the training step" fb attention --backend host --engine gemm
expect_error engine_cudnn 2 "--engine cudnn: cuDNN attention needs the cuda backend" fb attention --backend host --engine cudnn
expect_error heads_kv 2 "heads \(6\) must be a multiple of kv_heads \(4\)" fb attention --backend host --heads 6 --kv-heads 4
FACTORYBENCH_INJECT=hang@rank=0,call=1 expect_error inject 2 "FACTORYBENCH_INJECT 'hang@rank=0,call=1': attention sends nothing through the communicator" \
  fb attention --backend host --seq 64
expect_error heads_zero 2 "invalid --heads 0: must be positive" fb attention --backend host --heads 0
expect_error seq_zero 2 "invalid --seq '0': must be positive" fb attention --backend host --seq 0
expect_error model_tp 2 "heads 32 is not divisible by --tp 3" fb attention --backend host --model llama3-8b --tp 3
expect_error model_heads 2 "--model takes the heads and head dims from the model" fb attention --backend host --model llama3-8b --heads 4
# fp8: the reference engine rounds as cuDNN's fp8 kernels do, through the same calibrated scaling block.
run_capture fp8 fb attention --backend host --dtype fp8_e4m3 --seq 48 --heads 4 --kv-heads 2 --head-dim 16 -n 2 -w 1 -o "$T/fp8.json"
[ "$RC" -eq 0 ] || fail "--dtype fp8_e4m3: exit $RC: $(cat "$T/fp8.err")"
assert_json "$T/fp8.json" "(lambda r: r['name'] == 'fp8_e4m3/b1/s48/h4-kv2/d16' and r['status'] == 'ok' and r['params']['set_bytes'] > 0 and r['extra']['check']['tolerance'] == 0.15 and r['extra']['check']['worst_error_ratio'] < 1)(d['results'][0])" "fp8: checked at its tolerance"
assert_json "$T/fp8.json" "(lambda f: f['s']['scale'] == 256 and f['s']['amax'] == 1 and f['q']['scale'] == 1 and all(f[t]['amax'] > 0 for t in ('o', 'dp', 'dq', 'dk', 'dv')))(d['results'][0]['extra']['fp8_scaling'])" "fp8: the calibrated scales and their amax in the report"
expect_error fp8_e5m2 2 "the reference engine cannot run it: the reference attention takes fp32, bf16, fp16 or fp8_e4m3, not fp8_e5m2" fb attention --backend host --dtype fp8_e5m2
expect_error absurd 2 "need .* but the host backend has .* free" fb attention --backend host --seq 1 --batch 2000000 --heads 3 --head-dim 1024 -o "$T/absurd.json"
# Hours of O(s^2) reference work are refused at once (an audit's --seq 1M ran silently until killed).
expect_error hours 2 "attention on the host backend: .* score-element x head-dim products .* at most 6.4e\+11" fb attention --backend host --seq 10M --heads 128 -o "$T/absurd.json"
# The head dims count: --seq 8K at --head-dim 1024 is hours on host (it was accepted when only s^2 counted).
expect_error hours_head_dim 2 "^factorybench: error: attention on the host backend: 1.06e\+13 score-element x head-dim products" \
  fb attention --backend host --seq 8K --head-dim 1024 -o "$T/absurd.json"
[ ! -e "$T/absurd.json" ] && ok "no report for bad input" || fail "a report was written for bad input"
# Repeated sequence lengths are measured once (two results of one name: a report compare refuses).
run_capture dup fb attention --backend host --seq 64,32:64:32 -n 2 -w 1 -o "$T/dup.json"
assert_json "$T/dup.json" "[r['params']['seq'] for r in d['results']] == [64, 32]" "repeated --seq: each length once"
finish
