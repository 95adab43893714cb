#!/usr/bin/env bash
# factorybench train on 4 real ranks (host backend, MPI engine): tiny-dense with --tp 2 --dp 2 and tiny-moe with
# --dp 4 --ep 2 (two expert-parallel groups of 2 inside data parallel 4), 3 steps each. Every rank finishes the
# same steps, the MoE dispatch sends as many token rows as the peers receive, --overlap (non-blocking DP
# reduction) runs the same steps without deadlock, and every report validates.
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
  assert_json "$f" "abs($m['flops_per_step']['value'] - $m['flops_per_token']['value'] * d['results'][0]['params']['seq'] * d['results'][0]['params']['micro_batch'] * d['results'][0]['params']['grad_accum'] * d['results'][0]['params']['dp']) < 1" "$name: flops per step = per token x tokens (seq x micro-batch x grad-accum x dp)"
  assert_json "$f" "all(v >= 0 for v in d['results'][0]['extra']['breakdown'].values()) and d['results'][0]['extra']['breakdown']['gemm'] > 0" "$name: breakdown recorded"
  assert_json "$f" "$m['loss']['value'] == $m['loss']['value'] and $m['loss']['value'] > 0" "$name: finite loss"
}

run_capture dense fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 -o "$T/dense.json"
[ "$RC" -eq 0 ] && ok "tiny-dense tp2 dp2 exit 0" || fail "tiny-dense exit $RC: $(tail -5 "$T/dense.err")"
check_run dense "$T/dense.json" 4
assert_json "$T/dense.json" "d['results'][0]['extra']['collective_bytes_per_step']['tp_allreduce/attn_out'] == 2 * 128 * 128 * 4" "dense: TP all-reduce bytes (2 layers x 128 tokens x 128 hidden x fp32)"
assert_json "$T/dense.json" "d['results'][0]['extra']['collective_bytes_per_step']['dp_allreduce/grads'] > 0" "dense: DP gradient all-reduce bytes"
[ "$(grep -c '^step time:' "$T/dense.out")" -eq 1 ] && ok "dense: rank 0 prints once" || fail "dense: output $(cat "$T/dense.out")"

run_capture moe fb_mpirun 4 "${COMMON[@]}" --model tiny-moe --dp 4 --ep 2 --routing-skew 0.5 -o "$T/moe.json"
[ "$RC" -eq 0 ] && ok "tiny-moe dp4 ep2 exit 0" || fail "tiny-moe exit $RC: $(tail -5 "$T/moe.err")"
check_run moe "$T/moe.json" 4
# 2 MoE layers x 128 tokens x top-2 x 4 ranks x 3 steps routed, all of it received by some expert.
assert_json "$T/moe.json" "d['results'][0]['extra']['moe_dispatch']['rows_sent'] == d['results'][0]['extra']['moe_dispatch']['rows_received'] == 2 * 128 * 2 * 4 * 3" "moe: tokens sent in dispatch = tokens received"
assert_json "$T/moe.json" "d['results'][0]['metrics']['moe_load_imbalance']['value'] > 1" "moe: skewed routing shows imbalance"
assert_json "$T/moe.json" "d['results'][0]['extra']['collective_bytes_per_step']['ep_alltoallv/dispatch'] > 0 and d['results'][0]['extra']['collective_bytes_per_step']['edp_allreduce/expert_grads'] > 0" "moe: EP all-to-all and expert-DP bytes"

run_capture overlap fb_mpirun 4 "${COMMON[@]}" --model tiny-moe --dp 4 --ep 2 --overlap -o "$T/overlap.json"
[ "$RC" -eq 0 ] && ok "--overlap exit 0" || fail "--overlap exit $RC: $(tail -5 "$T/overlap.err")"
check_run overlap "$T/overlap.json" 4
assert_json "$T/overlap.json" "d['results'][0]['params']['overlap'] is True" "overlap: recorded"

run_capture overlap_dense fb_mpirun 4 "${COMMON[@]}" --model tiny-dense --tp 2 --dp 2 --overlap --grad-accum 2 --dtype bf16 -o "$T/overlap_dense.json"
[ "$RC" -eq 0 ] && ok "dense --overlap bf16 grad-accum 2 exit 0" || fail "dense overlap exit $RC: $(tail -5 "$T/overlap_dense.err")"
check_run overlap_dense "$T/overlap_dense.json" 4

finish
