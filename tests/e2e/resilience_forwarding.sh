#!/usr/bin/env bash
# Issue 16 finding 2: every option `resilience` accepts reaches the training job it launches. Each train option
# is set to a value other than its default, and read back from the params of the job's own report
# (RUN_DIR/attempt-1.json); the resilience options from the job's command line.
. "$(dirname "$0")/../lib.sh"
set -e

run_capture all fb resilience --backend host --launcher mpirun --launcher-args "--oversubscribe" --ranks 8 \
  --model tiny-moe --layers 2 --tp 2 --dp 2 --pp 2 --ep 2 --sequence-parallel --overlap --bucket-layers 2 \
  --distributed-optimizer --lr 0.0003 --attention-flops full --routing-skew 0.5 --grad-accum 2 --micro-batch 2 \
  --seq 64 --dtype bf16 --steps 3 --checkpoint-every 2 --keep 3 --state-bytes 1M --async-checkpoint \
  --hang-timeout 30s --straggler-threshold 0.5 --check-every 7 --heartbeat-timeout 60s \
  --faults "crash@step=99" --run-dir "$T/all" --output "$T/all.json"
[ "$RC" -eq 0 ] || { cat "$T/all.out" "$T/all.err" >&2; die "resilience with every train option: exit $RC"; }
P="$T/all/attempt-1.json"
[ -f "$P" ] || die "the job wrote no report of its own ($P)"
check() {  # PARAM PYTHON-VALUE
  assert_json "$P" "d['results'][0]['params']['$1'] == $2" "the job got $1 = $2"
}
check model "'tiny-moe'"
check layers 2
check tp 2
check dp 2
check pp 2
check ep 2
check sequence_parallel True
check overlap True
check bucket_layers 2
assert_json "$P" "d['results'][0]['params']['learning_rate'] == 0.0003" "the job got learning_rate 0.0003, recorded as given (not its fp32 9.9999997e-05-style rounding)"
check attention_flops "'full'"
check routing_skew 0.5
check grad_accum 2
check micro_batch 2
check seq 64
check dtype "'bf16'"
check distributed_optimizer True
# The resilience options, as the job's command line carries them.
CMD="[e for e in d['events'] if e['type'] == 'attempt_start'][0]['command']"
for pair in "--checkpoint-every 2" "--keep 3" "--state-bytes 1M" "--hang-timeout 30s" \
  "--straggler-threshold 0.5" "--check-every 7"; do
  set -- $pair
  assert_json "$T/all.json" "(lambda c: '$1' in c and c[c.index('$1') + 1] == '$2')($CMD)" "the job got $1 $2"
done
assert_json "$T/all.json" "'--async-checkpoint' in $CMD" "the job got --async-checkpoint"
# ... and as the job's own report records them (docs/resilience.md: its params show every option it was given).
check checkpoint_every 2
check keep 3
check state_bytes 1048576
check async_checkpoint True
check hang_timeout "'30s'"
check straggler_threshold 0.5
check check_every 7
check faults "'crash@step=99'"
assert_json "$P" "d['results'][0]['params']['run_dir'].endswith('/all') and d['results'][0]['params']['checkpoint_interval'] is None" "the job's report names its run dir"
assert_json "$T/all.json" "d['results'][0]['status'] == 'ok' and d['results'][0]['metrics']['steps_completed']['value'] == 3" "the job ran its 3 steps"

finish
