#!/usr/bin/env bash
# factorybench train rejects bad input with one line naming the option or JSON path, exit 2, no report file.
. "$(dirname "$0")/../lib.sh"
cd "$T"

no_report() { [ ! -e "$T/$1.json" ] && ok "$1: no report written" || fail "$1: report written"; }

expect_error unknown_model 2 "unknown model 'llama9-1t' \(available: .*llama3-8b" \
  fb train --backend host --model llama9-1t -o "$T/unknown_model.json"
no_report unknown_model

printf '{"name": "bad", "layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "activation": "swiglu", "vocab": 100, "seq": 32, "moe": {"experts": 4, "top_k": "2"}}' >"$T/bad.json"
expect_error malformed_model 2 'bad\.json: \$\.moe\.top_k: must be an integer, got string "2"' \
  fb train --backend host --model "$T/bad.json" -o "$T/malformed_model.json"
no_report malformed_model

printf '{"name": "bad", "layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "activation": "swiglu", "vocab": 100, "seq": 32, "dropout": 0.1}' >"$T/extra.json"
expect_error unknown_field 2 'extra\.json: \$\.dropout: unknown field' fb train --backend host --model "$T/extra.json"

printf '{"name": "bad", "layers": 2,' >"$T/trunc.json"
expect_error truncated_model 2 'trunc\.json: malformed JSON' fb train --backend host --model "$T/trunc.json"

# Degrees whose product wraps (tp x pp to 0 divided by zero: SIGFPE), a --seq past the model file's bound,
# a learning rate that is 0 or infinite in fp32: one line each, exit 2.
expect_error pp_wraps 2 "^factorybench: error: invalid --pp 4611686018427387904: at most 16777216$" \
  fb train --backend host --dry-run --tp 4 --pp 4611686018427387904
expect_error pp_wraps_run 2 "^factorybench: error: invalid --pp 4611686018427387904: at most 16777216$" \
  fb train --backend host --tp 4 --pp 4611686018427387904
expect_error layout_ranks 2 "^factorybench: error: invalid layout --tp 4096 x --pp 4096 x --dp 2: more than 16777216 ranks$" \
  fb train --backend host --dry-run --tp 4096 --pp 4096 --dp 2
expect_error seq_huge 2 "^factorybench: error: invalid --seq 536870912: at most 16777216$" fb train --backend host --dry-run --seq 512M
expect_error lr_underflow 2 "^factorybench: error: invalid --lr 1e-50: zero in fp32, where the optimizer applies it$" \
  fb train --backend host --steps 2 --lr 1e-50
expect_error lr_overflow 2 "^factorybench: error: invalid --lr 1e\+39: infinite in fp32, where the optimizer applies it$" \
  fb train --backend host --steps 2 --lr 1e39
expect_error tp_heads 2 "--tp 3 does not divide tiny-dense's heads \(4\)" \
  fb train --backend host --model tiny-dense --tp 3 --dp 1 --dry-run -o "$T/tp_heads.json"
no_report tp_heads

expect_error ep_experts 2 "--ep 3 does not divide tiny-moe's experts \(4\)" \
  fb train --backend host --model tiny-moe --dp 3 --ep 3 --dry-run -o "$T/ep_experts.json"
no_report ep_experts

expect_error world 2 "--tp 2 x --dp 2 x --pp 1 = 4 ranks, but the job has 1" \
  fb train --backend host --model tiny-dense --tp 2 --dp 2 -o "$T/world.json"
no_report world

expect_error no_fit 2 "llama3.1-405b does not fit: each rank needs about .* try --layers N" \
  fb train --backend host --model llama3.1-405b --steps 2 --warmup-steps 1 -o "$T/no_fit.json"
no_report no_fit

# 0 stands for "the default" only when the option is left out; typed, it is refused, not read as the default.
for opt in --seq --layers --dp; do
  expect_error "zero${opt}" 2 "invalid $opt 0: must be at least 1 \(leave the option out for the default\)" \
    fb train --backend host --model tiny-dense $opt 0 -o "$T/zero${opt}.json"
  no_report "zero${opt}"
done
expect_error zero_gemm_seq 2 "invalid --seq 0: must be at least 1" fb gemm --backend host --model tiny-dense --seq 0
expect_error zero_burnin_size 2 "invalid --size 0: must be at least 1" fb burnin --backend host --size 0
expect_error zero_health_gemm 2 "invalid --gemm-size 0: must be at least 1" fb health --backend host --gemm-size 0
expect_error zero_gpus_per_node 2 "invalid --gpus-per-node 0: must be at least 1" fb simulate --gpus 8 --gpus-per-node 0

# Sizes the plan's integer counts cannot hold, dtypes no step trains in, options a mode ignores.
expect_error huge_step 2 "--seq x --micro-batch x --grad-accum x --dp = 5.903e\+20 tokens per step: at most 2\^32" \
  fb train --backend host --model tiny-dense --dry-run --micro-batch 2147483647 --grad-accum 2147483647 -o "$T/huge_step.json"
no_report huge_step
expect_error int8_train 2 "invalid --dtype int8: not a training dtype" fb train --backend host --dry-run --dtype int8
expect_error bogus_dtype 2 "invalid --dtype bogus: not a training dtype \(expected bf16, fp16, fp8_e4m3, fp8_e5m2 or fp32\)" \
  fb train --backend host --dry-run --dtype bogus
# A step whose activations alone pass 8 EiB per rank is refused, not planned at a wrapped size.
expect_error exabytes 2 "llama3.1-405b at --seq 16777216 x --micro-batch 4 in fp32 needs about 31.* EiB per rank .*beyond any machine" \
  fb train --backend host --model llama3.1-405b --seq 16M --micro-batch 4 --dry-run -o "$T/exabytes.json"
no_report exabytes
# A model name with a control character would split console lines and fail the report's schema.
printf '{"name": "tab\\tname", "layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "activation": "swiglu", "vocab": 100, "seq": 32}' >"$T/tab.json"
expect_error model_name_tab 2 "tab.json: [$][.]name: must not contain control characters" \
  fb train --backend host --model "$T/tab.json" --dry-run -o "$T/model_name_tab.json"
no_report model_name_tab
expect_error gemm_model_ta 2 "--model takes each pass's layout from the model" fb gemm --backend host --model tiny-dense --ta T
expect_error split_zero 2 "invalid --split 0: must be at least 1" fb collective --backend host --split 0

expect_error bad_recompute 2 "invalid --recompute 'some'" fb train --backend host --recompute some
expect_error bad_layers 2 "invalid --layers 9: tiny-dense has only 2 layers" fb train --backend host --layers 9
expect_error pp_layers 2 "--pp 2 does not divide tiny-moe's layers \(3\)" \
  fb train --backend host --model tiny-moe --pp 2 --dp 1 --dry-run -o "$T/pp_layers.json"
no_report pp_layers
expect_error sp_tokens 2 "--sequence-parallel: --seq x --micro-batch = 127 tokens is not divisible by --tp 2" \
  fb train --backend host --model tiny-dense --tp 2 --dp 1 --seq 127 --sequence-parallel --dry-run -o "$T/sp_tokens.json"
no_report sp_tokens
expect_error host_fp8 2 "--dtype fp8_e4m3 on the host backend" fb train --backend host --dtype fp8 --steps 2 --warmup-steps 0
expect_error bad_engine 2 "invalid --attention-engine 'fast': expected auto, cudnn, gemm or reference" \
  fb train --backend host --attention-engine fast
# Refused once the backend has started, before the plan is printed (it was found as the step built its engine).
expect_error cudnn_on_host 2 "^factorybench: error: --attention-engine cudnn: cuDNN attention needs the cuda backend$" \
  fb train --backend host --steps 2 --warmup-steps 0 --attention-engine cudnn -o "$T/cudnn_on_host.json"
no_report cudnn_on_host
! grep -q . "$T/cudnn_on_host.out" && ok "cudnn_on_host: no plan printed" || fail "cudnn_on_host printed: $(head -2 "$T/cudnn_on_host.out")"

# Checkpoint sizes this host cannot hold are refused before the run dir is touched: nothing is left behind.
expect_error state_memory 2 "invalid --state-bytes 64T: 1 rank\\(s\\) on this host x 2 checkpoint buffer\\(s\\) of it exceed 90% of the host's available memory" \
  fb train --backend host --steps 4 --run-dir "$T/state_memory" --state-bytes 64T --async-checkpoint --checkpoint-every 2 -o "$T/state_memory.json"
no_report state_memory
[ ! -e "$T/state_memory" ] && ok "state_memory: no run dir" || fail "state_memory: run dir created: $(ls "$T/state_memory")"
expect_error state_disk 2 "invalid --state-bytes 1G: --keep 100000 \\+ 2 checkpoints of 1 rank\\(s\\) need .* free" \
  fb train --backend host --steps 4 --run-dir "$T/state_disk" --state-bytes 1G --keep 100000 --checkpoint-every 2 -o "$T/state_disk.json"
[ ! -e "$T/state_disk" ] && ok "state_disk: no run dir" || fail "state_disk: run dir created"

# The dry run plans a cluster-size layout from one process and reports it.
run_capture plan fb train --backend host --model llama3-8b --tp 2 --dp 4 --dry-run -o "$T/plan.json"
[ "$RC" -eq 0 ] && ok "dry run exit 0" || fail "dry run exit $RC: $(cat "$T/plan.err")"
validate "$T/plan.json"
assert_json "$T/plan.json" "abs(d['results'][0]['metrics']['flops_per_token']['value'] / 1e9 - 51.47) < 0.01" "dry run: llama3-8b 51.47 GFLOP/token"
assert_json "$T/plan.json" "any(g['name'] == 'llama3-8b/tp2/mlp_up/fwd' and g['m'] == 14336 for g in d['results'][0]['extra']['gemms'])" "dry run: GEMM shapes listed"
assert_json "$T/plan.json" "[(c['name'], c['calls_per_step'], c.get('note', '').split(':')[0]) for c in d['results'][0]['extra']['collectives_plan']] == [('tp_allreduce/layer_out', 129, 'call sites (those this rank has)'), ('tp_allreduce/embedding', 1, ''), ('dp_allreduce/grads', 1, 'output layer and final norm'), ('dp_allreduce/grads', 32, '1 layer'), ('dp_allreduce/grads', 1, 'input embedding')]" "dry run: collectives listed, a DP all-reduce per gradient bucket"
# --bucket-layers 5 over 32 layers: 6 buckets of 5 and, reached first in backward, one of 2.
run_capture plan5 fb train --backend host --model llama3-8b --tp 2 --dp 4 --bucket-layers 5 --dry-run -o "$T/plan5.json"
[ "$RC" -eq 0 ] || fail "dry run --bucket-layers 5: exit $RC: $(cat "$T/plan5.err")"
assert_json "$T/plan5.json" "[(c['calls_per_step'], c['note']) for c in d['results'][0]['extra']['collectives_plan'] if c['group'] == 'dp'] == [(1, 'output layer and final norm'), (1, '2 layers'), (6, '5 layers'), (1, 'input embedding')] and sum(c['bytes_per_step'] for c in d['results'][0]['extra']['collectives_plan'] if c['group'] == 'dp') == sum(c['bytes_per_step'] for c in json.load(open('$T/plan.json'))['results'][0]['extra']['collectives_plan'] if c['group'] == 'dp')" "dry run --bucket-layers 5: 9 DP calls, the same bytes"
grep -q "dp_allreduce/grads .* x 6 .*(5 layers)" "$T/plan5.out" && ok "dry run --bucket-layers 5: printed per bucket" || fail "dry run --bucket-layers 5 output: $(grep dp_ "$T/plan5.out")"
grep -q "does not fit\|GEMMs per micro-batch" "$T/plan.out" && ok "dry run prints the plan" || fail "dry run output: $(head "$T/plan.out")"

# An explicit fused engine is planned as it runs (no strip GEMMs, no probability blocks); auto's plan is the
# blocked path's and says so. The plan needs no device, so cudnn plans on a host-only build too.
run_capture fused fb train --backend host --model llama3-8b --layers 4 --dry-run --attention-engine cudnn -o "$T/fused.json"
[ "$RC" -eq 0 ] && ok "fused dry run exit 0" || fail "fused dry run exit $RC: $(cat "$T/fused.err")"
run_capture blocked fb train --backend host --model llama3-8b --layers 4 --dry-run -o "$T/blocked.json"
assert_json "$T/fused.json" "not any(g['name'].split('/')[2] in ('attn_scores', 'attn_context') for g in d['results'][0]['extra']['gemms']) and d['results'][0]['params']['attention_engine'] == 'cudnn'" "fused dry run: no attention-core GEMMs, engine cudnn"
assert_json "$T/blocked.json" "sum(g['name'].split('/')[2] in ('attn_scores', 'attn_context') for g in d['results'][0]['extra']['gemms']) == 6" "auto dry run: the blocked path's six attention GEMMs"
fused_act=$(json "$T/fused.json" "d['results'][0]['extra']['memory_estimate_bytes']['activations']")
blocked_act=$(json "$T/blocked.json" "d['results'][0]['extra']['memory_estimate_bytes']['activations']")
[ "$fused_act" -lt "$blocked_act" ] && ok "fused dry run: activations $fused_act < $blocked_act B" || fail "fused activations $fused_act, blocked $blocked_act"
grep -q "attention core: fused" "$T/fused.out" && grep -q "attention core: blocked GEMMs.*auto picks cudnn at run time" "$T/blocked.out" \
  && ok "dry run names the attention core" || fail "attention core lines: $(grep attention "$T/fused.out" "$T/blocked.out")"
# An explicit cudnn plan says what cuDNN's own graph checks make of its shape, as on Hopper and on Blackwell
# (no GPU needed; the engine in the build and libcudnn.so.9 are): fp8 with DeepSeek-V3's 192/128 heads is
# refused on Hopper in the backward and taken on Blackwell; llama3-8b's bf16 heads pass both; fp32 (the host
# plan above) is no cuDNN type.
grep -q "attention core: fused .*; cuDNN attention takes bf16, fp16 or fp8_e4m3, not fp32: a run refuses it" "$T/fused.out" \
  && ok "fp32 cudnn plan: refused by type" || fail "fp32 cudnn plan: $(grep attention "$T/fused.out")"
if "$FACTORYBENCH" --version | grep -q "cudnn attention [0-9]"; then
  run_capture mla_fp8 fb train --backend cuda --model deepseek-v3 --tp 8 --ep 8 --dtype fp8 --dry-run --attention-engine cudnn
  grep -q "cuDNN's graph checks of this shape: sm 90 (Hopper) refuses: backward: .*; sm 100 (Blackwell) accepts$" "$T/mla_fp8.out" \
    && ok "fp8 MLA cudnn plan: Hopper refuses the backward" || fail "fp8 MLA cudnn plan (exit $RC): $(grep -i "attention\|error" "$T/mla_fp8.out" "$T/mla_fp8.err")"
  run_capture llama_bf16 fb train --backend cuda --model llama3-8b --layers 4 --dry-run --attention-engine cudnn
  grep -q "cuDNN's graph checks of this shape: sm 90 (Hopper) accepts; sm 100 (Blackwell) accepts$" "$T/llama_bf16.out" \
    && ok "bf16 llama3-8b cudnn plan: both accept" || fail "bf16 llama3-8b cudnn plan (exit $RC): $(grep -i "attention\|error" "$T/llama_bf16.out" "$T/llama_bf16.err")"
else
  echo "note: cuDNN's graph checks not asserted: no loadable cuDNN engine ($("$FACTORYBENCH" --version))"
fi

# From the train audit: options that could not act are refused; the dry run checks what a run checks and
# plans in the dtype the asked backend would use; --seq takes a binary suffix; --steps 1 and 2 run.
expect_error sp_tp1 2 "--sequence-parallel needs --tp > 1" fb train --backend host --sequence-parallel -o "$T/r.json"
expect_error skew_dense 2 "--routing-skew 5: tiny-dense has no experts" fb train --backend host --routing-skew 5 -o "$T/r.json"
expect_error skew_inf 2 "invalid --routing-skew inf: must be a finite number >= 0" fb train --backend host --model tiny-moe --routing-skew inf -o "$T/r.json"
expect_error dry_keep 2 "invalid --keep 0: must be at least 1" fb train --backend host --dry-run --keep 0 -o "$T/r.json"
expect_error dry_faults 2 "--faults needs --run-dir DIR" fb train --backend host --dry-run --faults crash@step=1,rank=0 -o "$T/r.json"
# Options that would not act are refused, not silently ignored: checkpoint and watchdog options without a run
# dir, checkpoint options without checkpoints, --mtbf without Daly's interval.
for opt in "--keep 5" "--state-bytes 1M" "--hang-timeout 5s" "--straggler-threshold 0.5" "--check-every 2" "--mtbf 1h"; do
  name=${opt%% *}
  expect_error "no_dir${name//-/_}" 2 "^factorybench: error: $name needs --run-dir DIR$" \
    fb train --backend host --model tiny-dense --layers 1 --steps 2 $opt -o "$T/r.json"
done
for opt in "--keep 5" "--async-checkpoint"; do
  name=${opt%% *}
  expect_error "no_ckpt${name//-/_}" 2 "^factorybench: error: $name acts on checkpoints: add --checkpoint-every N or --checkpoint-interval DURATION[|]auto$" \
    fb train --backend host --model tiny-dense --layers 1 --steps 2 --run-dir "$T/no_ckpt" $opt -o "$T/r.json"
done
[ ! -e "$T/no_ckpt" ] && ok "no run dir made for an option that would not act" || fail "no_ckpt: run dir created"
expect_error mtbf_fixed 2 "^factorybench: error: --mtbf sets Daly's interval: it acts with --checkpoint-interval auto only$" \
  fb train --backend host --model tiny-dense --layers 1 --steps 2 --run-dir "$T/mtbf_fixed" --checkpoint-every 1 --mtbf 1h -o "$T/r.json"
[ ! -e "$T/r.json" ] && ok "no report for the refused options" || fail "a report was written for a refused option"
run_capture dry_cuda fb train --backend cuda --model llama3-8b --tp 8 --seq 8K --dry-run -o "$T/dry_cuda.json"
[ "$RC" -eq 0 ] && ok "dry run --backend cuda plans without a GPU" || fail "dry_cuda: exit $RC: $(cat "$T/dry_cuda.err")"
assert_json "$T/dry_cuda.json" "d['results'][0]['params']['dtype'] == 'bf16' and d['results'][0]['params']['seq'] == 8192" "dry run --backend cuda: bf16 (the cuda default), --seq 8K = 8192"
assert_json "$T/dry_cuda.json" "d['results'][0]['params']['recompute'] == 'none'" "dry run: recompute none by default"
run_capture dry_recompute fb train --backend host --recompute full --dry-run -o "$T/dry_recompute.json"
assert_json "$T/dry_recompute.json" "d['results'][0]['params']['recompute'] == 'full'" "dry run still plans --recompute full"
for steps in 1 2; do
  run_capture "steps$steps" fb train --backend host --steps $steps -o "$T/steps$steps.json"
  [ "$RC" -eq 0 ] && assert_json "$T/steps$steps.json" "d['results'][0]['params']['warmup_steps'] == $steps - 1" "--steps $steps: default warm-up $((steps - 1))" \
    || fail "--steps $steps: exit $RC: $(cat "$T/steps$steps.err")"
done
# run.started_at is stamped before the first step (it was stamped after the last): the report's span holds
# every step it timed.
assert_json "$T/steps2.json" "(__import__('datetime').datetime.fromisoformat(d['run']['finished_at'].replace('Z', '+00:00')) - __import__('datetime').datetime.fromisoformat(d['run']['started_at'].replace('Z', '+00:00'))).total_seconds() >= d['results'][0]['metrics']['step_time_s']['value'] - 0.001" "train: started_at .. finished_at spans the measured step"
run_capture moe_prefix fb train --backend host --model tiny-moe --layers 1 --dry-run -o "$T/moe_prefix.json"
assert_json "$T/moe_prefix.json" "'1 of them MoE (first_dense_layers 0' in d['results'][0]['params']['layers_note']" "--layers 1 on tiny-moe: the note says the one layer is MoE"

# The disk check counts the run dir's own checkpoints as the job's space (an audit's resume on a volume that
# fitted the first run was refused): refused when keep + 2 checkpoints exceed the free space, accepted once
# checkpoints already in the run dir (a sparse file here) hold what is missing.
# Margins of gibibytes both ways: tests running beside this one write and remove files, so the free space
# moves between the df and the run.
free=$(df -B1 --output=avail "$T" | tail -1)
if [ "$free" -gt $((8 << 30)) ]; then
  keep=$((free / (1 << 30) + 6))  # (keep + 2) GiB: 6 to 8 GiB beyond the free space
  expect_error disk_short 2 "invalid --state-bytes 1G: --keep $keep \+ 2 checkpoints of 1 rank\(s\) need .* free$" \
    fb train --backend host --dry-run --run-dir "$T/held" --checkpoint-every 5 --state-bytes 1G --keep "$keep"
  # Held: keep GiB already in the run dir, so 2 GiB more are needed, of the 8 GiB or more free.
  mkdir -p "$T/held/checkpoints/step-00000005" && truncate -s "$((keep << 30))" "$T/held/checkpoints/step-00000005/shard"
  run_capture disk_held fb train --backend host --dry-run --run-dir "$T/held" --checkpoint-every 5 --state-bytes 1G \
    --keep "$keep" --resume -o "$T/disk_held.json"
  [ "$RC" -eq 0 ] && ok "disk check: the run dir's checkpoints count as the job's space" || fail "disk_held: exit $RC: $(cat "$T/disk_held.err")"
else
  echo "note: less than 8 GiB free under $T; the disk-check part was not run"
fi

# --state-bytes 0 is the unset value typed: refused. A size below the model's state is raised to it, and said.
expect_error state_bytes_zero 2 "^factorybench: error: invalid --state-bytes 0: must be positive \(leave the option out for the model's state\)$" \
  fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 --run-dir "$T/sb0" --state-bytes 0
run_capture state_bytes_small fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 \
  --run-dir "$T/sb1" --state-bytes 1K -o "$T/sb1.json"
[ "$RC" -eq 0 ] && grep -q "warning: --state-bytes 1 KiB is below this rank's model state (.*): each shard holds the state" "$T/state_bytes_small.err" \
  && ok "--state-bytes below the state: raised, with a warning" || fail "state_bytes_small: exit $RC: $(cat "$T/state_bytes_small.err")"
# A checkpoint interval beyond the run saves nothing: said, not silent.
run_capture ckpt_beyond fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 5 \
  --run-dir "$T/ce" -o "$T/ce.json"
[ "$RC" -eq 0 ] && grep -q "warning: --checkpoint-every 5 is beyond --steps 2: no checkpoint is saved" "$T/ckpt_beyond.err" \
  && ok "--checkpoint-every beyond --steps: warned" || fail "ckpt_beyond: exit $RC: $(cat "$T/ckpt_beyond.err")"
# Options on the data-parallel gradient reduction, with none (dp 1, and for MoE expert-DP 1): refused.
expect_error overlap_dp1 2 "^factorybench: error: --overlap needs a data-parallel gradient reduction \(dp > 1\): with dp 1 there is none to overlap$" \
  fb train --backend host --model tiny-dense --steps 2 --overlap
expect_error zero_dp1 2 "^factorybench: error: --distributed-optimizer needs a data-parallel gradient reduction \(dp > 1, or expert-DP dp x tp / ep > 1\): with dp 1 there is none to shard$" \
  fb train --backend host --model tiny-moe --steps 2 --distributed-optimizer
expect_error buckets_dp1 2 "^factorybench: error: --bucket-layers needs a data-parallel gradient reduction \(dp > 1\): with dp 1 there is none to bucket$" \
  fb train --backend host --model tiny-dense --steps 2 --bucket-layers 2
expect_error zero_dp1_dry 2 "^factorybench: error: --distributed-optimizer needs" \
  fb train --backend host --model tiny-dense --tp 4 --dry-run --distributed-optimizer
# A real command line with --dry-run added: its checkpoint and fault options are checked, and said not to act.
run_capture dry_resilience fb train --backend host --model tiny-dense --dry-run --run-dir "$T/dry_rd" --checkpoint-every 2 \
  --faults crash@step=2 -o "$T/dry.json"
[ "$RC" -eq 0 ] && [ ! -e "$T/dry_rd" ] && grep -q "warning: --dry-run: --run-dir, --checkpoint-every, --faults checked, not acted on" "$T/dry_resilience.err" \
  && ok "--dry-run with resilience options: plan, no run dir, said" || fail "dry_resilience: exit $RC: $(cat "$T/dry_resilience.err")"
expect_error dry_bad_faults 2 "invalid --faults 'crash@step=2,rank=3'" \
  fb train --backend host --model tiny-dense --dry-run --run-dir "$T/dry_rd" --faults crash@step=2,rank=3
# The default warm-up leaves a measured step of those a resumed run has left (2 of 2 were warm-up: SKIPPED,
# exit 0, no figure).
fb train --backend host --model tiny-dense --layers 1 --steps 3 --checkpoint-every 1 --run-dir "$T/resumed" >/dev/null 2>&1
run_capture resumed fb train --backend host --model tiny-dense --layers 1 --steps 5 --checkpoint-every 1 --run-dir "$T/resumed" --resume -o "$T/resumed.json"
[ "$RC" -eq 0 ] && assert_json "$T/resumed.json" "d['results'][0]['status'] == 'ok' and d['results'][0]['metrics']['step_time_s']['value'] > 0 and d['results'][0]['params']['warmup_steps'] == 1" "resumed with 2 steps left: one is measured, and params.warmup_steps says 1" \
  || fail "resumed: exit $RC: $(stderr_summary "$T/resumed.err")"
grep -q -- "--resume: restored step-00000003 (a checkpoint of .* MiB, read in" "$T/resumed.err" \
  && ok "resumed: says which checkpoint it restored" || fail "resumed: no 'restored' line: $(cat "$T/resumed.err")"
# --resume in a run dir with no checkpoint (the first attempt of a requeued job, or a mistyped --run-dir)
# trains from step 0 and says so.
run_capture resume_empty fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 \
  --run-dir "$T/resume_empty" --resume -o "$T/resume_empty.json"
[ "$RC" -eq 0 ] && grep -q -- "--resume: no checkpoint in $T/resume_empty/checkpoints; training from step 0" "$T/resume_empty.err" \
  && ok "resume_empty: trains from step 0 and says so" || fail "resume_empty: exit $RC: $(cat "$T/resume_empty.err")"
# A file where the checkpoints go is refused at the start (every save failed as a warning, exit 0).
mkdir -p "$T/ckpt_file" && echo x >"$T/ckpt_file/checkpoints"
expect_error ckpt_file 2 "--run-dir .*/ckpt_file: cannot hold checkpoints in .*/ckpt_file/checkpoints: Not a directory" \
  fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 --run-dir "$T/ckpt_file" -o "$T/ckpt_file.json"
no_report ckpt_file
# A placement file (the supervisor's) with a slot that is not an integer: one line naming it.
mkdir -p "$T/placement" && echo '{"slots": ["a"]}' >"$T/placement/placement.json"
expect_error placement 2 "placement/placement.json: slots\[0\] is not a slot number" \
  fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 --run-dir "$T/placement" -o "$T/placement.json"
no_report placement
finish
