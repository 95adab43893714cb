#!/usr/bin/env bash
# train --distributed-optimizer (ZeRO-1) on real ranks, host backend: each data-parallel rank keeps 1/dp of the
# fp32 master weights and Adam moments, the gradients are reduce-scattered and the updated weights
# all-gathered. It must train the same model as the replicated optimizer: the same loss and gradient norm
# (within 1e-12 in groups of 2, where the loss matches bit for bit and the gradient norm to rounding in its
# last digits, its sum of squares being added up in other pieces; to fp32 rounding in groups of 4), with less
# optimizer memory, the collectives the plan names, a checkpoint that resumes to the uninterrupted run, and
# an SDC fault plan refused (a replica vote cannot see a flip in a sharded master weight).
. "$(dirname "$0")/../lib.sh"
cd "$T"

COMMON=(train --backend host --steps 3 --warmup-steps 1)
M="d['results'][0]['metrics']"
B="d['results'][0]['extra']['collective_bytes_per_step']"

pair() {  # NAME RANKS ARGS...: the run with and without --distributed-optimizer ($T/NAME.json, $T/NAME_zero.json)
  local name=$1 n=$2; shift 2
  run_capture "$name" fb_mpirun "$n" "${COMMON[@]}" "$@" -o "$T/$name.json"
  [ "$RC" -eq 0 ] || fail "$name exit $RC: $(stderr_summary "$T/$name.err")"
  run_capture "${name}_zero" fb_mpirun "$n" "${COMMON[@]}" "$@" --distributed-optimizer -o "$T/${name}_zero.json"
  [ "$RC" -eq 0 ] && ok "$name --distributed-optimizer exit 0" || fail "${name}_zero exit $RC: $(stderr_summary "$T/${name}_zero.err")"
  validate "$T/${name}_zero.json"
  assert_json "$T/${name}_zero.json" "d['results'][0]['params']['distributed_optimizer'] is True and d['results'][0]['per_rank']['last_step'] == [3.0] * $n" "$name: recorded, every rank finished"
}
# FILE LABEL: every data-parallel gradient collective ran as the plan lists it, bucket by bucket: per name,
# the calls and bytes executed are the plan's (one call per --bucket-layers bucket, the output layer's and the
# embedding's; each padded to the shards when sharded). The counts and the plan are both the last pipeline
# stage's.
as_planned() {
  local P="d['results'][0]['extra']['collectives_plan']" C="d['results'][0]['extra']['collective_calls_per_step']"
  assert_json "$1" "(lambda names: len(names) > 0 and names == {n for n in $B if n.split('_')[0] in ('dp', 'edp')} and all($C[n] == sum(c['calls_per_step'] for c in $P if c['name'] == n) and $B[n] == sum(c['bytes_per_call'] * c['calls_per_step'] for c in $P if c['name'] == n) for n in names))({c['name'] for c in $P if c['group'] in ('dp', 'edp')})" "$2: DP gradient calls and bytes executed = planned, per bucket"
}
same() {  # NAME TOLERANCE: loss and gradient norm of NAME_zero within a relative TOLERANCE of NAME
  local ref="json.load(open('$T/$1.json'))['results'][0]['metrics']"
  assert_json "$T/$1_zero.json" "abs($M['loss']['value'] / $ref['loss']['value'] - 1) <= $2" "$1: same loss (within $2)"
  assert_json "$T/$1_zero.json" "abs($M['grad_norm']['value'] / $ref['grad_norm']['value'] - 1) <= $2" "$1: same gradient norm (within $2)"
}

# Dense, DP 2: tiny-dense's 426,624 parameters; a rank now holds 12 bytes of optimizer state for half of them.
pair dense 2 --model tiny-dense --dp 2
same dense 1e-12
assert_json "$T/dense_zero.json" "json.load(open('$T/dense.json'))['results'][0]['metrics']['memory_allocated_bytes_per_rank']['value'] - $M['memory_allocated_bytes_per_rank']['value'] == 12 * 426624 // 2" "dense: 12 B x 426,624 / 2 less allocated per rank"
assert_json "$T/dense_zero.json" "'dp_allreduce/grads' not in $B and $B['dp_reduce_scatter/grads'] == json.load(open('$T/dense.json'))['results'][0]['extra']['collective_bytes_per_step']['dp_allreduce/grads'] and $B['dp_allgather/params'] == $B['dp_reduce_scatter/grads'] / 2" "dense: gradients reduce-scattered, weights all-gathered (each rank sends half)"
assert_json "$T/dense_zero.json" "list(dict.fromkeys(c['name'] for c in d['results'][0]['extra']['collectives_plan'] if c['group'] == 'dp')) == ['dp_reduce_scatter/grads', 'dp_allgather/params']" "dense: the plan names the same collectives"
assert_json "$T/dense_zero.json" "$M['memory_bytes_per_rank']['value'] < json.load(open('$T/dense.json'))['results'][0]['metrics']['memory_bytes_per_rank']['value']" "dense: the estimate shrinks too"
as_planned "$T/dense.json" dense
as_planned "$T/dense_zero.json" "dense --distributed-optimizer"
# tiny-dense's 2 layers in one bucket each, the output layer's and the embedding's: 4 calls per step.
assert_json "$T/dense_zero.json" "d['results'][0]['extra']['collective_calls_per_step']['dp_reduce_scatter/grads'] == 4 and d['results'][0]['extra']['collective_calls_per_step']['dp_allgather/params'] == 4" "dense: a reduce-scatter and an all-gather per bucket"

# MoE, DP 4 with EP 2 and --overlap: dense state over 4 ranks, expert state over expert-DP 2, non-blocking
# reduce-scatters. Sums over 4 ranks may round differently from an all-reduce's.
pair moe 4 --model tiny-moe --dp 4 --ep 2 --overlap
same moe 1e-6
assert_json "$T/moe_zero.json" "all(k in $B for k in ['dp_reduce_scatter/grads', 'dp_allgather/params', 'edp_reduce_scatter/expert_grads', 'edp_allgather/expert_params']) and not any(k.endswith('allreduce/grads') or k.endswith('allreduce/expert_grads') for k in $B)" "moe: dense and expert state both sharded"
# Padding: every bucket rounds up to a multiple of 4 x 64 elements (dense) or 2 x 64 (experts), 4 bytes each.
assert_json "$T/moe_zero.json" "0 <= $B['dp_reduce_scatter/grads'] - json.load(open('$T/moe.json'))['results'][0]['extra']['collective_bytes_per_step']['dp_allreduce/grads'] < 5 * 256 * 4" "moe: dense buckets padded by less than 4 x 64 elements each"

as_planned "$T/moe.json" moe
as_planned "$T/moe_zero.json" "moe --distributed-optimizer"

# Buckets of 2 layers over tiny-moe's 3 (one dense, two MoE): a bucket of layers 0-1 and one of layer 2 (and
# the output layer's and the embedding's), an expert bucket for each (the first holds layer 1's experts, the same size as layer 2's).
pair buckets 2 --model tiny-moe --dp 2 --bucket-layers 2
same buckets 1e-12
as_planned "$T/buckets.json" "--bucket-layers 2"
as_planned "$T/buckets_zero.json" "--bucket-layers 2 --distributed-optimizer"
assert_json "$T/buckets.json" "[(c['name'], c['calls_per_step'], c['note']) for c in d['results'][0]['extra']['collectives_plan']] == [('dp_allreduce/grads', 1, 'output layer and final norm'), ('dp_allreduce/grads', 1, '1 MoE layer'), ('dp_allreduce/grads', 1, '2 layers, 1 MoE'), ('dp_allreduce/grads', 1, 'input embedding'), ('edp_allreduce/expert_grads', 2, 'experts of 1 layer')]" "--bucket-layers 2: the plan lists each kind of bucket, in the order backward reaches them (the two expert buckets alike)"

# Pipeline stages, bf16, two layers per bucket, 4 micro-batches: DP groups of 2 (loss bit for bit, norm to 1e-12).
pair pp 4 --model tiny-dense --dp 2 --pp 2 --grad-accum 4 --dtype bf16 --bucket-layers 2
same pp 1e-12
# The counts are the last stage's, as the plan's lists: its layer's bucket and the output layer's.
as_planned "$T/pp.json" "pp"
as_planned "$T/pp_zero.json" "pp --distributed-optimizer"
assert_json "$T/pp.json" "[(c['calls_per_step'], c['note']) for c in d['results'][0]['extra']['collectives_plan'] if c['group'] == 'dp'] == [(1, 'output layer and final norm'), (1, '1 layer')]" "pp: the last stage's two buckets planned"

# MLA with TP 2 and sequence parallelism: the dense state over DP 2, the experts' over expert-DP 4.
pair mla 4 --model tiny-mla --tp 2 --dp 2 --sequence-parallel
same mla 1e-6
as_planned "$T/mla_zero.json" "mla --distributed-optimizer"

# TP 4 over tiny-dense's 2 kv heads (each held by 2 TP ranks, its gradient counted once in the norm) and
# DP 2: 8 ranks. The sharded state splits the fused QKV tensor at other places than the replicated copy's
# norm weights do, so Σ g² is associated differently: the same to 1e-12.
pair kv_copies 8 --model tiny-dense --tp 4 --dp 2 --dtype fp32
same kv_copies 1e-12

# A sharded checkpoint: 2 steps saved, then resumed to 4, equals 4 uninterrupted steps.
Z=(train --backend host --warmup-steps 0 --model tiny-moe --dp 4 --ep 2 --distributed-optimizer)
run_capture whole fb_mpirun 4 "${Z[@]}" --steps 4 -o "$T/whole.json"
run_capture first fb_mpirun 4 "${Z[@]}" --steps 2 --run-dir "$T/run" --checkpoint-every 2 -o "$T/first.json"
run_capture resumed fb_mpirun 4 "${Z[@]}" --steps 4 --run-dir "$T/run" --checkpoint-every 2 --resume -o "$T/resumed.json"
[ "$RC" -eq 0 ] || fail "resumed exit $RC: $(stderr_summary "$T/resumed.err")"
grep -q '"type":"ckpt_restore_end"' "$T/run/events.jsonl" && grep '"type":"ckpt_restore_end"' "$T/run/events.jsonl" | grep -q '"checkpoint":"step-00000002"' \
  && ok "resume: restored step 2" || fail "resume: no restore of step 2 in $(grep restore "$T/run/events.jsonl")"
assert_json "$T/resumed.json" "$M['loss']['value'] == json.load(open('$T/whole.json'))['results'][0]['metrics']['loss']['value'] and $M['grad_norm']['value'] == json.load(open('$T/whole.json'))['results'][0]['metrics']['grad_norm']['value']" "resume: the same loss and gradient norm as 4 uninterrupted steps"

# Resumed at the last step there is nothing to train: the result is skipped and says so (no zero figures).
run_capture again fb_mpirun 4 "${Z[@]}" --steps 4 --run-dir "$T/run" --checkpoint-every 2 --resume -o "$T/again.json"
[ "$RC" -eq 0 ] || fail "again exit $RC: $(stderr_summary "$T/again.err")"
assert_json "$T/again.json" "d['results'][0]['status'] == 'skipped' and d['results'][0]['error'] == 'nothing to train: the run resumed at step 4 and --steps is 4' and 'loss' not in d['results'][0]['metrics'] and 'step_time_s' not in d['results'][0]['metrics']" "resume at the last step: skipped with the reason, no figures"

# SDC cannot be detected with the master weights sharded: refused before the run dir or a report exists.
for cmd in "fb_mpirun 2 train --backend host --model tiny-dense --dp 2 --steps 4 --distributed-optimizer --run-dir $T/sdc --faults sdc@step=2,rank=1" \
           "fb resilience --ranks 2 --model tiny-dense --steps 4 --distributed-optimizer --run-dir $T/sdc --faults random:mtbf=10s,mix=crash:0.5/sdc:0.5"; do
  run_capture sdc $cmd -o "$T/sdc.json"
  [ "$RC" -eq 2 ] && grep -q -- "--faults injects sdc, which --distributed-optimizer cannot detect" "$T/sdc.err" && [ ! -e "$T/sdc.json" ] && [ ! -e "$T/sdc" ] \
    && ok "sdc with a sharded optimizer refused: ${cmd%% *} ${cmd#* }" | cut -c1-80 || fail "sdc: exit $RC: $(cat "$T/sdc.err")"
done

finish
