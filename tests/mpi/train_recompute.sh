#!/usr/bin/env bash
# Activation recomputation (--recompute selective|full) on real ranks: recomputing runs the same forward
# again, so every layout must reproduce, bit for bit, the loss and gradient norm of the run that keeps its
# activations: tiny-dense with TP + sequence parallelism, tiny-moe with TP, DP and EP (bf16), tiny-dense with
# PP and --overlap, tiny-mla with TP and the fused reference attention. HFU counts what ran again
# (full: 4/3 of the layers' FLOPs, selective: 4/3 of the attention core's), the collectives executed match
# the plan's, bytes and calls (full recomputation repeats each layer's forward TP reductions, all-gathers and EP all-to-alls),
# the MoE routing counts are not counted twice, and the saved activations shrink (full: each layer keeps
# only its input, Korthikanti et al. 2022).
. "$(dirname "$0")/../lib.sh"
cd "$T"

COMMON=(train --backend host --steps 2 --warmup-steps 1)

# NAME WORLD ARGS...: the three runs of one layout.
runs() {
  local name=$1 world=$2
  shift 2
  for r in none selective full; do
    run_capture "${name}_$r" fb_mpirun "$world" "${COMMON[@]}" --recompute "$r" "$@" -o "$T/${name}_$r.json"
    [ "$RC" -eq 0 ] && ok "$name --recompute $r: exit 0" || fail "$name --recompute $r: exit $RC: $(stderr_summary "$T/${name}_$r.err")"
    validate "$T/${name}_$r.json"
  done
}

M="d['results'][0]['metrics']"
X="d['results'][0]['extra']"
F="$X['flops_per_token']"
TOTAL="sum(v for k, v in $F.items() if k != 'hardware')"  # model FLOPs per token
# NAME: selective and full reproduce none exactly; HFU/MFU is the plan's ratio; executed TP and EP bytes are
# the planned ones, with full recomputation's repeats.
same() {
  local name=$1 ref="$T/$1_none.json"
  for r in selective full; do
    local f="$T/${name}_$r.json"
    assert_json "$f" "$M['loss']['value'] == json.load(open('$ref'))['results'][0]['metrics']['loss']['value'] and $M['grad_norm']['value'] == json.load(open('$ref'))['results'][0]['metrics']['grad_norm']['value']" "$name $r: loss and gradient norm identical to none"
    assert_json "$f" "d['results'][0]['params']['recompute'] == '$r'" "$name $r: recorded"
    assert_json "$f" "abs($M['hfu']['value'] / $M['mfu']['value'] - $F['hardware'] / ($TOTAL)) < 1e-12 and $M['hfu']['value'] > $M['mfu']['value']" "$name $r: HFU/MFU = hardware/model FLOPs > 1"
    assert_json "$f" "$X['memory_estimate_bytes']['activations'] < json.load(open('$ref'))['results'][0]['extra']['memory_estimate_bytes']['activations'] or '$name' == 'mla'" "$name $r: fewer activation bytes than none"
  done
  for r in none selective full; do
    local f="$T/${name}_$r.json"
    for op in tp_allreduce tp_allgather tp_reduce_scatter ep_alltoallv; do
      # Routed rows follow the router, the plan assumes balance: compare EP only with uniform routing, as
      # a ratio to none (full: three passes instead of two).
      if [ "$op" = ep_alltoallv ]; then
        local k=1
        [ "$r" = full ] && k=1.5
        assert_json "$f" "sum(v for n, v in $X['collective_bytes_per_step'].items() if n.startswith('ep_alltoallv/')) == $k * sum(v for n, v in json.load(open('$ref'))['results'][0]['extra']['collective_bytes_per_step'].items() if n.startswith('ep_alltoallv/'))" "$name $r: EP all-to-all bytes x$k of none"
        continue
      fi
      assert_json "$f" "sum(v for n, v in $X['collective_bytes_per_step'].items() if n.startswith('$op/') and n != 'tp_allreduce/replicated_grads' and n != 'tp_allreduce/kv_head_grads') == sum(c['bytes_per_call'] * c['calls_per_step'] for c in $X['collectives_plan'] if c['name'].startswith('$op/') and c['name'] not in ('tp_allreduce/replicated_grads', 'tp_allreduce/kv_head_grads'))" "$name $r: $op bytes executed = planned"
    done
    # Calls, whatever the routing: the run names each call site (tp_allreduce/mlp_out), the plan each kind
    # (tp_allreduce/layer_out), so compare per group and operation.
    assert_json "$f" "(lambda ran, plan: ran == plan and len(ran) > 0)({k: sum(v for n, v in $X['collective_calls_per_step'].items() if n.split('/')[0] == k) for k in {n.split('/')[0] for n in $X['collective_calls_per_step']}}, {k: sum(c['calls_per_step'] for c in $X['collectives_plan'] if c['name'].split('/')[0] == k) for k in {c['name'].split('/')[0] for c in $X['collectives_plan']}})" "$name $r: calls executed = planned, per group and operation"
  done
}

runs sp 4 --model tiny-dense --tp 2 --dp 2 --sequence-parallel --grad-accum 2
same sp
runs moe 4 --model tiny-moe --tp 2 --dp 2 --ep 2 --grad-accum 2 --dtype bf16
same moe
assert_json "$T/moe_full.json" "$X['moe_dispatch'] == json.load(open('$T/moe_none.json'))['results'][0]['extra']['moe_dispatch']" "moe full: routing counts not counted twice"
runs pp 4 --model tiny-dense --pp 2 --dp 2 --grad-accum 3 --overlap
same pp
runs mla 2 --model tiny-mla --tp 2 --attention-engine reference
same mla

# HFU ratios of the plan (Korthikanti et al.): full adds one forward of the layers (1/3 of their training
# FLOPs), selective one forward of the attention core.
assert_json "$T/sp_full.json" "abs($F['hardware'] - ($TOTAL + ($TOTAL - $F['logits']) / 3)) < 1e-6 * $F['hardware']" "full: hardware = model + (model - logits)/3"
assert_json "$T/sp_selective.json" "abs($F['hardware'] - ($TOTAL + $F['attention_core'] / 3)) < 1e-6 * $F['hardware']" "selective: hardware = model + attention core/3"

# Full recomputation keeps one input per layer: llama3-8b with 4 layers instead of 2 saves 2 more layer inputs
# of seq x micro-batch x hidden x 2 bytes (bf16) and nothing else (Korthikanti et al. 2022, Table 2:
# 2·s·b·h bytes per layer).
for n in 2 4; do
  run_capture "dry$n" fb train --backend host --model llama3-8b --layers "$n" --micro-batch 2 --dtype bf16 --recompute full --dry-run -o "$T/dry$n.json"
  [ "$RC" -eq 0 ] || fail "dry run --layers $n: exit $RC: $(stderr_summary "$T/dry$n.err")"
done
assert_json "$T/dry4.json" "$X['memory_estimate_bytes']['activations'] - json.load(open('$T/dry2.json'))['results'][0]['extra']['memory_estimate_bytes']['activations'] == 2 * 2 * 8192 * 2 * 4096" "full recompute: 2·s·b·h bytes per layer (llama3-8b, s 8192, b 2, h 4096)"
finish
