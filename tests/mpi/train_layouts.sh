#!/usr/bin/env bash
# factorybench train on 4 real ranks (host backend, MPI engine): tiny-dense with --tp 2 --dp 2 and tiny-moe with
# --dp 4 --ep 2 (two expert-parallel groups of 2 inside data parallel 4), 3 steps each. Every rank finishes the
# same steps, the MoE dispatch sends as many token rows as the peers receive, --overlap (non-blocking DP
# reduction) runs the same steps without deadlock, and every report validates.
# Pipeline parallelism (1F1B), sequence parallelism and MLA: tiny-dense --dp 2 --pp 2 and --tp 2 --pp 2
# finish on every rank with a pipeline bubble recorded; --sequence-parallel --tp 2 --dp 2 moves the
# bytes the plan says; tiny-mla runs with --dp 2 and with --tp 2 --pp 2 --sequence-parallel. Weights are
# seeded by their place in the model, so a pipelined or sequence-parallel run must reproduce the loss and
# gradient norm of the same model without it, and every --tp that of one rank. Impossible layouts stop every
# rank with the reason.
. "$(dirname "$0")/../lib.sh"
cd "$T"

COMMON=(train --backend host --steps 3 --warmup-steps 1)

check_run() {  # NAME FILE WORLD
  local name=$1 f=$2 world=$3
  validate "$f"
  assert_json "$f" "d['run']['world_size'] == $world and len(d['results']) == 1 and d['results'][0]['status'] == 'ok'" "$name: one ok result"
  assert_json "$f" "d['results'][0]['per_rank']['steps_completed'] == [3.0] * $world" "$name: every rank finished 3 steps"
  assert_json "$f" "d['results'][0]['per_rank']['last_step'] == [3.0] * $world" "$name: every rank's last step is 3"
  local m="d['results'][0]['metrics']"
  assert_json "$f" "all(k in $m for k in ['step_time_s','tokens_per_s','tokens_per_s_per_gpu','model_tflops_per_gpu','mfu','hfu','flops_per_token','flops_per_step','params_total','params_active','memory_bytes_per_rank'])" "$name: contract metrics present"
  assert_json "$f" "$m['step_time_s']['value'] > 0 and 0 < $m['mfu']['value'] <= 1 and $m['hfu']['value'] >= $m['mfu']['value']" "$name: step time and MFU sane"
  assert_json "$f" "abs($m['tokens_per_s']['value'] - $m['tokens_per_s_per_gpu']['value'] * $world) < 1e-6 * $m['tokens_per_s']['value']" "$name: tokens/s = per GPU x world"
  # Two measured steps: the rates are those of the median step time, not a median of per-step rates.
  assert_json "$f" "abs($m['model_tflops_per_gpu']['value'] - $m['flops_per_step']['value'] / $m['step_time_s']['value'] / $world / 1e12) <= 1e-12 * $m['model_tflops_per_gpu']['value'] and $m['model_tflops_per_gpu']['stats']['median'] == $m['model_tflops_per_gpu']['value']" "$name: TFLOP/s per GPU = flops per step / step time / world"
  assert_json "$f" "abs($m['flops_per_step']['value'] - $m['flops_per_token']['value'] * d['results'][0]['params']['seq'] * d['results'][0]['params']['micro_batch'] * d['results'][0]['params']['grad_accum'] * d['results'][0]['params']['dp']) < 1" "$name: flops per step = per token x tokens (seq x micro-batch x grad-accum x dp)"
  assert_json "$f" "all(v >= 0 for v in d['results'][0]['extra']['breakdown'].values()) and d['results'][0]['extra']['breakdown']['gemm'] > 0" "$name: breakdown recorded"
  assert_json "$f" "$m['loss']['value'] == $m['loss']['value'] and $m['loss']['value'] > 0" "$name: finite loss"
}

run_capture dense fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 -o "$T/dense.json"
[ "$RC" -eq 0 ] && ok "tiny-dense tp2 dp2 exit 0" || fail "tiny-dense exit $RC: $(stderr_summary "$T/dense.err")"
check_run dense "$T/dense.json" 4
assert_json "$T/dense.json" "d['results'][0]['extra']['collective_bytes_per_step']['tp_allreduce/attn_out'] == 2 * 128 * 128 * 4" "dense: TP all-reduce bytes (2 layers x 128 tokens x 128 hidden x fp32)"
assert_json "$T/dense.json" "d['results'][0]['extra']['collective_bytes_per_step']['dp_allreduce/grads'] > 0" "dense: DP gradient all-reduce bytes"
[ "$(grep -c '^step time:' "$T/dense.out")" -eq 1 ] && ok "dense: rank 0 prints once" || fail "dense: output $(cat "$T/dense.out")"

run_capture moe fb_mpirun 4 "${COMMON[@]}" --model tiny-moe --dp 4 --ep 2 --routing-skew 0.5 -o "$T/moe.json"
[ "$RC" -eq 0 ] && ok "tiny-moe dp4 ep2 exit 0" || fail "tiny-moe exit $RC: $(stderr_summary "$T/moe.err")"
check_run moe "$T/moe.json" 4
# 2 MoE layers x 128 tokens x top-2 x 4 ranks x 3 steps routed, all of it received by some expert.
assert_json "$T/moe.json" "d['results'][0]['extra']['moe_dispatch']['rows_sent'] == d['results'][0]['extra']['moe_dispatch']['rows_received'] == 2 * 128 * 2 * 4 * 3" "moe: tokens sent in dispatch = tokens received"
assert_json "$T/moe.json" "d['results'][0]['metrics']['moe_load_imbalance']['value'] > 1" "moe: skewed routing shows imbalance"
assert_json "$T/moe.json" "d['results'][0]['extra']['collective_bytes_per_step']['ep_alltoallv/dispatch'] > 0 and d['results'][0]['extra']['collective_bytes_per_step']['edp_allreduce/expert_grads'] > 0" "moe: EP all-to-all and expert-DP bytes"
# Each planned all-to-all is one direction: the run counts its backward calls under the names the note gives.
assert_json "$T/moe.json" "(lambda c, p: c['ep_alltoallv/dispatch'] + c['ep_alltoallv/combine_grad'] == p['ep_alltoallv/dispatch']['calls_per_step'] and c['ep_alltoallv/combine'] + c['ep_alltoallv/dispatch_grad'] == p['ep_alltoallv/combine']['calls_per_step'] and 'combine_grad backward' in p['ep_alltoallv/dispatch']['note'] and 'dispatch_grad backward' in p['ep_alltoallv/combine']['note'])(d['results'][0]['extra']['collective_calls_per_step'], {x['name']: x for x in d['results'][0]['extra']['collectives_plan']})" "moe: dispatch + combine_grad and combine + dispatch_grad calls = the plan's two directions"

run_capture overlap fb_mpirun 4 "${COMMON[@]}" --model tiny-moe --dp 4 --ep 2 --overlap -o "$T/overlap.json"
[ "$RC" -eq 0 ] && ok "--overlap exit 0" || fail "--overlap exit $RC: $(stderr_summary "$T/overlap.err")"
check_run overlap "$T/overlap.json" 4
assert_json "$T/overlap.json" "d['results'][0]['params']['overlap'] is True" "overlap: recorded"

run_capture overlap_dense fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 --overlap --grad-accum 2 --dtype bf16 -o "$T/overlap_dense.json"
[ "$RC" -eq 0 ] && ok "dense --overlap bf16 grad-accum 2 exit 0" || fail "dense overlap exit $RC: $(stderr_summary "$T/overlap_dense.err")"
check_run overlap_dense "$T/overlap_dense.json" 4

same_model() {  # NAME FILE REFERENCE: identical loss and gradient norm (the same model, the same data)
  assert_json "$2" "abs(d['results'][0]['metrics']['loss']['value'] - json.load(open('$3'))['results'][0]['metrics']['loss']['value']) <= 1e-9 * d['results'][0]['metrics']['loss']['value']" "$1: same loss as $(basename "$3" .json)"
  assert_json "$2" "abs(d['results'][0]['metrics']['grad_norm']['value'] - json.load(open('$3'))['results'][0]['metrics']['grad_norm']['value']) <= 1e-6 * d['results'][0]['metrics']['grad_norm']['value']" "$1: same gradient norm as $(basename "$3" .json)"
}
bubble() {  # NAME FILE
  assert_json "$2" "d['results'][0]['extra']['breakdown']['pipeline_bubble'] > 0" "$1: pipeline_bubble > 0 in the breakdown"
  assert_json "$2" "d['results'][0]['params']['pp'] == 2 and d['results'][0]['extra']['pipeline']['schedule'] == '1F1B'" "$1: pipeline recorded"
}

# Pipeline parallelism: 2 stages of 1 layer, 4 micro-batches, against the same model without stages.
run_capture dp2 fb_mpirun 2 "${COMMON[@]}" --model tiny-dense --dp 2 --grad-accum 4 -o "$T/dp2.json"
[ "$RC" -eq 0 ] && ok "tiny-dense dp2 exit 0" || fail "tiny-dense dp2 exit $RC: $(stderr_summary "$T/dp2.err")"
run_capture pp_dp fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 1 --dp 2 --pp 2 --grad-accum 4 -o "$T/pp_dp.json"
[ "$RC" -eq 0 ] && ok "tiny-dense tp1 dp2 pp2 exit 0" || fail "pp dp exit $RC: $(stderr_summary "$T/pp_dp.err")"
check_run pp_dp "$T/pp_dp.json" 4
bubble pp_dp "$T/pp_dp.json"
same_model pp_dp "$T/pp_dp.json" "$T/dp2.json"
# Rank 0 (stage 0) sends 4 micro-batches of activations (128 tokens x 128 hidden x fp32) and receives 4 gradients.
assert_json "$T/pp_dp.json" "d['results'][0]['extra']['collective_bytes_per_step']['pp_p2p/activations'] == d['results'][0]['extra']['collective_bytes_per_step']['pp_p2p/grads'] == 4 * 128 * 128 * 4" "pp_dp: point-to-point bytes per step"

run_capture tp2 fb_mpirun 2 "${COMMON[@]}" --model tiny-dense --tp 2 --grad-accum 4 -o "$T/tp2.json"
[ "$RC" -eq 0 ] && ok "tiny-dense tp2 exit 0" || fail "tiny-dense tp2 exit $RC: $(stderr_summary "$T/tp2.err")"
run_capture pp_tp fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --pp 2 --grad-accum 4 -o "$T/pp_tp.json"
[ "$RC" -eq 0 ] && ok "tiny-dense tp2 pp2 exit 0" || fail "pp tp exit $RC: $(stderr_summary "$T/pp_tp.err")"
check_run pp_tp "$T/pp_tp.json" 4
bubble pp_tp "$T/pp_tp.json"
same_model pp_tp "$T/pp_tp.json" "$T/tp2.json"

# Fewer micro-batches than stages still runs (a larger bubble).
run_capture pp_ga1 fb_mpirun 2 "${COMMON[@]}" --model tiny-dense --pp 2 -o "$T/pp_ga1.json"
[ "$RC" -eq 0 ] && ok "tiny-dense pp2 grad-accum 1 exit 0" || fail "pp ga1 exit $RC: $(stderr_summary "$T/pp_ga1.err")"
check_run pp_ga1 "$T/pp_ga1.json" 2

# Sequence parallelism: reduce-scatter + all-gather instead of all-reduce, the same model as dense (tp2 dp2).
run_capture sp fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 --sequence-parallel -o "$T/sp.json"
[ "$RC" -eq 0 ] && ok "tiny-dense --sequence-parallel tp2 dp2 exit 0" || fail "sp exit $RC: $(stderr_summary "$T/sp.err")"
check_run sp "$T/sp.json" 4
same_model sp "$T/sp.json" "$T/dense.json"
B="d['results'][0]['extra']['collective_bytes_per_step']"
assert_json "$T/sp.json" "$B['tp_allgather/attn_in'] == 2 * 64 * 128 * 4 and $B['tp_reduce_scatter/attn_out'] == 2 * 128 * 128 * 4" "sp: all-gather of 64 of 128 rows, reduce-scatter of all 128 (2 layers, fp32)"
assert_json "$T/sp.json" "not any(k.startswith('tp_allreduce/') and k != 'tp_allreduce/replicated_grads' for k in $B)" "sp: no TP all-reduce of activations left"
# Each TP rank normalises its own rows: the norm gains' gradients (2 per layer and the final norm, 128 wide,
# fp32) are summed over TP once per step; the embedding's partial rows are reduce-scattered, its gradient
# all-gathered back.
assert_json "$T/sp.json" "$B['tp_allreduce/replicated_grads'] == (2 * 2 + 1) * 128 * 4" "sp: norm gain gradients all-reduced over TP"
assert_json "$T/sp.json" "$B['tp_reduce_scatter/embedding'] == 128 * 128 * 4 and $B['tp_allgather/embedding_grad'] == 64 * 128 * 4" "sp: embedding reduce-scatter and gradient all-gather"
for op in tp_allgather tp_reduce_scatter; do
  assert_json "$T/sp.json" "sum(v for k, v in $B.items() if k.startswith('$op/')) == sum(c['bytes_per_call'] * c['calls_per_step'] for c in d['results'][0]['extra']['collectives_plan'] if c['name'].startswith('$op/'))" "sp: $op bytes executed = planned"
done
# The residual stream keeps only this rank's rows (Megatron-LM): each layer's input and mid-layer residual
# and the stage output, 5 buffers of 64 instead of 128 rows x 128 hidden x fp32, with their 1/rms rows
# (2 per layer and the final norm, fp32). Allocated and estimated alike.
MEM="d['results'][0]['metrics']['memory_allocated_bytes_per_rank']['value']"
assert_json "$T/sp.json" "json.load(open('$T/dense.json'))['results'][0]['metrics']['memory_allocated_bytes_per_rank']['value'] - $MEM == 5 * 64 * 128 * 4 + 5 * 64 * 4" "sp: residual stream allocated for 64 of 128 rows"
EST="d['results'][0]['extra']['memory_estimate_bytes']['activations']"
assert_json "$T/sp.json" "json.load(open('$T/dense.json'))['results'][0]['extra']['memory_estimate_bytes']['activations'] - $EST == 5 * 64 * 128 * 4 + 4 * 64 * 4" "sp: the estimate's activations drop by the same rows"
assert_json "$T/dense.json" "sum(v for k, v in $B.items() if k.startswith('tp_allreduce/')) == sum(c['bytes_per_call'] * c['calls_per_step'] for c in d['results'][0]['extra']['collectives_plan'] if c['name'].startswith('tp_allreduce/'))" "dense: TP all-reduce bytes executed = planned"
# The plan has one entry per kind of call; its note names the sites the run counts separately, and their calls
# add up to the entry's.
CALLS="d['results'][0]['extra']['collective_calls_per_step']"
PLAN="{c['name']: c for c in d['results'][0]['extra']['collectives_plan']}"
assert_json "$T/dense.json" "(lambda p, sites: all(s.split('/')[1] in p['tp_allreduce/layer_out']['note'] for s in sites) and sum($CALLS[s] for s in sites) == p['tp_allreduce/layer_out']['calls_per_step'])($PLAN, [k for k in $CALLS if k.startswith('tp_allreduce/') and k != 'tp_allreduce/embedding'])" "dense: the sites of the TP all-reduces are named in the plan's note, their calls sum to it"
assert_json "$T/sp.json" "(lambda p, g, r: all(s.split('/')[1] in p['tp_allgather/layer_in']['note'] for s in g) and sum($CALLS[s] for s in g) == p['tp_allgather/layer_in']['calls_per_step'] and all(s.split('/')[1] in p['tp_reduce_scatter/layer_out']['note'] for s in r) and sum($CALLS[s] for s in r) == p['tp_reduce_scatter/layer_out']['calls_per_step'])($PLAN, [k for k in $CALLS if k.startswith('tp_allgather/') and k != 'tp_allgather/embedding_grad'], [k for k in $CALLS if k.startswith('tp_reduce_scatter/') and k != 'tp_reduce_scatter/embedding'])" "sp: the sites of the all-gathers and reduce-scatters are named in the plan's notes, their calls sum to them"

# MLA (DeepSeek-style latent attention, with MoE): data parallel, and tensor + pipeline + sequence parallel.
run_capture mla fb_mpirun 2 "${COMMON[@]}" --model tiny-mla --dp 2 -o "$T/mla.json"
[ "$RC" -eq 0 ] && ok "tiny-mla dp2 exit 0" || fail "tiny-mla exit $RC: $(stderr_summary "$T/mla.err")"
check_run mla "$T/mla.json" 2
assert_json "$T/mla.json" "d['results'][0]['params']['attention'] == 'mla'" "mla: recorded"
run_capture mla_tp fb_mpirun 2 "${COMMON[@]}" --model tiny-mla --tp 2 --grad-accum 2 -o "$T/mla_tp.json"
[ "$RC" -eq 0 ] && ok "tiny-mla tp2 exit 0" || fail "tiny-mla tp2 exit $RC: $(stderr_summary "$T/mla_tp.err")"
check_run mla_tp "$T/mla_tp.json" 2
assert_json "$T/mla_tp.json" "$B['tp_allreduce/mla_latent_grad'] == 2 * 2 * 128 * (64 + 32 + 16) * 4" "mla_tp: latent gradient all-reduce (2 micro-batches x 2 layers x 128 tokens x 112 x fp32)"
run_capture mla_pp fb_mpirun 4 "${COMMON[@]}" --model tiny-mla --tp 2 --pp 2 --grad-accum 2 --sequence-parallel -o "$T/mla_pp.json"
[ "$RC" -eq 0 ] && ok "tiny-mla tp2 pp2 --sequence-parallel exit 0" || fail "tiny-mla pp exit $RC: $(stderr_summary "$T/mla_pp.err")"
check_run mla_pp "$T/mla_pp.json" 4
bubble mla_pp "$T/mla_pp.json"
same_model mla_pp "$T/mla_pp.json" "$T/mla_tp.json"

# The fused-attention path of the step (one engine call per direction, Q/K/V read in place from the QKV
# rows) with the fp64 host reference as its engine: the same model as the blocked GEMMs, to rounding.
close_model() {  # NAME FILE REFERENCE: loss and gradient norm within 1e-5
  assert_json "$2" "abs(d['results'][0]['metrics']['loss']['value'] / json.load(open('$3'))['results'][0]['metrics']['loss']['value'] - 1) < 1e-5" "$1: loss within 1e-5 of $(basename "$3" .json)"
  assert_json "$2" "abs(d['results'][0]['metrics']['grad_norm']['value'] / json.load(open('$3'))['results'][0]['metrics']['grad_norm']['value'] - 1) < 1e-5" "$1: gradient norm within 1e-5 of $(basename "$3" .json)"
}
# Experts are seeded by their global index: spreading them over --ep 2 trains the same model as keeping all
# of them on every rank (to the rounding of the all-to-all's other summation order).
run_capture moe_ep1 fb_mpirun 4 "${COMMON[@]}" --model tiny-moe --dp 4 --routing-skew 0.5 -o "$T/moe_ep1.json"
[ "$RC" -eq 0 ] && ok "tiny-moe dp4 ep1 exit 0" || fail "tiny-moe ep1 exit $RC: $(stderr_summary "$T/moe_ep1.err")"
close_model moe_ep2 "$T/moe.json" "$T/moe_ep1.json"

run_capture sp_ref fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 --sequence-parallel --attention-engine reference -o "$T/sp_ref.json"
[ "$RC" -eq 0 ] && ok "tiny-dense sp --attention-engine reference exit 0" || fail "sp_ref exit $RC: $(stderr_summary "$T/sp_ref.err")"
assert_json "$T/sp_ref.json" "d['results'][0]['params']['attention_engine'] == 'reference' and json.load(open('$T/sp.json'))['results'][0]['params']['attention_engine'] == 'gemm'" "sp_ref: engines recorded"
close_model sp_ref "$T/sp_ref.json" "$T/sp.json"
run_capture mla_ref fb_mpirun 2 "${COMMON[@]}" --model tiny-mla --tp 2 --grad-accum 2 --attention-engine reference -o "$T/mla_ref.json"
[ "$RC" -eq 0 ] && ok "tiny-mla tp2 --attention-engine reference exit 0" || fail "mla_ref exit $RC: $(stderr_summary "$T/mla_ref.err")"
close_model mla_ref "$T/mla_ref.json" "$T/mla_tp.json"

# Tensor parallelism: every weight is seeded by its place in the whole (unsplit) tensor, so each --tp trains
# the same model as one rank holding all of it; fp32 agrees to the rounding of the TP sums' other order
# (measured: loss within 1e-7, gradient norm within 1e-6 after one update). Covered: the column-parallel
# fused QKV and SwiGLU [gate | up], the row-parallel outputs, the vocabulary-parallel embedding and output
# layer, tiny-moe's shared expert and routed tokens, tiny-mla's per-head up projections, and --tp 4 with
# tiny-dense's 2 kv heads each held by 2 ranks (the kv heads' gradients summed over them; without that sum
# the loss moved by 0.4% and the gradient norm by 8%).
TPC=(train --backend host --dtype fp32 --steps 2 --warmup-steps 1 --seed 7)
same_as_tp1() {  # NAME FILE REFERENCE
  assert_json "$2" "abs(d['results'][0]['metrics']['loss']['value'] / json.load(open('$3'))['results'][0]['metrics']['loss']['value'] - 1) < 1e-6" "$1: loss within 1e-6 of $(basename "$3" .json)"
  assert_json "$2" "abs(d['results'][0]['metrics']['grad_norm']['value'] / json.load(open('$3'))['results'][0]['metrics']['grad_norm']['value'] - 1) < 1e-5" "$1: gradient norm within 1e-5 of $(basename "$3" .json)"
}
tp_case() {  # NAME RANKS REFERENCE ARGS...
  local name=$1 n=$2 ref=$3; shift 3
  run_capture "$name" fb_mpirun "$n" "${TPC[@]}" "$@" -o "$T/$name.json"
  [ "$RC" -eq 0 ] && ok "$name exit 0" || { fail "$name exit $RC: $(stderr_summary "$T/$name.err")"; return; }
  same_as_tp1 "$name" "$T/$name.json" "$T/$ref.json"
}
for model in tiny-dense tiny-moe tiny-mla; do
  run_capture "${model}_tp1" fb "${TPC[@]}" --model $model -o "$T/${model}_tp1.json"
  [ "$RC" -eq 0 ] && ok "$model tp1 exit 0" || fail "$model tp1 exit $RC: $(stderr_summary "$T/${model}_tp1.err")"
done
tp_case dense_tp2_same 2 tiny-dense_tp1 --model tiny-dense --tp 2
tp_case dense_tp4_same 4 tiny-dense_tp1 --model tiny-dense --tp 4
tp_case moe_tp2_same 2 tiny-moe_tp1 --model tiny-moe --tp 2
tp_case moe_tp4_ep2_same 4 tiny-moe_tp1 --model tiny-moe --tp 4 --ep 2
tp_case mla_tp4_sp_same 4 tiny-mla_tp1 --model tiny-mla --tp 4 --sequence-parallel
# Gradient accumulation: every micro-batch reads the same tokens, so the averaged gradient of 2 (or, through
# 2 pipeline stages, 4) micro-batches is the gradient of one, bit for bit in fp32, and so are the reported
# loss and gradient norm (the norm of the gradient the update applies, not of the micro-batches' sum).
for ga in 2 4; do
  run_capture "dense_ga$ga" fb_mpirun $((ga / 2)) "${TPC[@]}" --model tiny-dense --pp $((ga / 2)) --grad-accum $ga -o "$T/dense_ga$ga.json"
  [ "$RC" -eq 0 ] || fail "dense_ga$ga exit $RC: $(stderr_summary "$T/dense_ga$ga.err")"
  assert_json "$T/dense_ga$ga.json" "[d['results'][0]['metrics'][k]['value'] for k in ('loss', 'grad_norm')] == [json.load(open('$T/tiny-dense_tp1.json'))['results'][0]['metrics'][k]['value'] for k in ('loss', 'grad_norm')]" "grad-accum $ga (pp $((ga / 2))): the loss and gradient norm of one micro-batch, bit for bit"
done
# The kv heads' gradient sum: 2 layers x K and V of one head (2 x 32 columns of 128 rows) x fp32, over the 2
# ranks holding the head, as planned; none where TP divides the kv heads.
assert_json "$T/dense_tp4_same.json" "$B['tp_allreduce/kv_head_grads'] == 2 * 2 * 32 * 128 * 4 and [(c['group_size'], c['bytes_per_call'] * c['calls_per_step']) for c in d['results'][0]['extra']['collectives_plan'] if c['name'] == 'tp_allreduce/kv_head_grads'] == [(2, 2 * 2 * 32 * 128 * 4)]" "dense_tp4: kv head gradients summed over the 2 ranks holding each, as planned"
assert_json "$T/dense_tp2_same.json" "'tp_allreduce/kv_head_grads' not in $B and not any(c['name'] == 'tp_allreduce/kv_head_grads' for c in d['results'][0]['extra']['collectives_plan'])" "dense_tp2: no kv head gradient sum (tp divides kv_heads)"

# Impossible layouts stop every rank with the reason (no hang, no report).
run_capture pp_layers timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" "${COMMON[@]}" --model tiny-moe --pp 2 -o "$T/pp_layers.json"
[ "$RC" -eq 2 ] && grep -q "\-\-pp 2 does not divide tiny-moe's layers (3)" "$T/pp_layers.err" && [ ! -e "$T/pp_layers.json" ] \
  && ok "pp not dividing the layers: exit 2 with the reason" || fail "pp_layers: exit $RC: $(cat "$T/pp_layers.err")"
run_capture sp_seq timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" "${COMMON[@]}" --model tiny-dense --tp 2 --sequence-parallel --seq 127 -o "$T/sp_seq.json"
[ "$RC" -eq 2 ] && grep -q "\-\-sequence-parallel: --seq x --micro-batch = 127 tokens is not divisible by --tp 2" "$T/sp_seq.err" && [ ! -e "$T/sp_seq.json" ] \
  && ok "sequence parallel with indivisible tokens: exit 2 with the reason" || fail "sp_seq: exit $RC: $(cat "$T/sp_seq.err")"

# A model file only rank 0's host has (a path on a disk that is not shared): every rank stops with the
# reason, rank 0 naming rank 1, instead of rank 0 waiting forever in the first collective.
mkdir -p "$T/host0" "$T/host1"
cp "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/host0/m.json"
run_capture one_host timeout 120 mpirun --oversubscribe -np 1 -wdir "$T/host0" "$FACTORYBENCH" "${COMMON[@]}" --model ./m.json : \
  -np 1 -wdir "$T/host1" "$FACTORYBENCH" "${COMMON[@]}" --model ./m.json
[ "$RC" -eq 2 ] && grep -q "model file not found: ./m.json (on rank 1; each rank reads its own files)" "$T/one_host.err" \
  && ok "a model file on one host only: exit 2, rank 1 named" || fail "one_host: exit $RC: $(head -3 "$T/one_host.err")"

# Ranks that read different model files (a config directory that differs between hosts) stop with the reason
# on every layout, instead of training a mixture (tp, pp) or failing inside an all-reduce (dp).
cp -r "$FB_SOURCE_DIR/configs" "$T/cfg"
sed -i 's/"ffn": 256/"ffn": 512/' "$T/cfg/models/tiny-dense.json"
grep -q '"ffn": 512' "$T/cfg/models/tiny-dense.json" || die "could not edit the copied tiny-dense.json"
for layout in "--tp 2" "--dp 2" "--pp 2"; do
  run_capture mixed timeout 120 mpirun --oversubscribe -np 1 -x FACTORYBENCH_CONFIG_DIR="$FB_SOURCE_DIR/configs" \
    "$FACTORYBENCH" "${COMMON[@]}" --model tiny-dense $layout -o "$T/mixed.json" : \
    -np 1 -x FACTORYBENCH_CONFIG_DIR="$T/cfg" "$FACTORYBENCH" "${COMMON[@]}" --model tiny-dense $layout -o "$T/mixed.json"
  [ "$RC" -eq 2 ] && grep -q "the ranks loaded different model files (--model tiny-dense)" "$T/mixed.err" && [ ! -e "$T/mixed.json" ] \
    && ok "different model files, $layout: exit 2 with the reason" || fail "mixed $layout: exit $RC: $(stderr_summary "$T/mixed.err")"
done

finish
