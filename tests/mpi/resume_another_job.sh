#!/usr/bin/env bash
# --resume into a run dir whose checkpoints another job wrote (another --layers, world size or --state-bytes)
# stops with exit 2 naming the checkpoint and the difference, and leaves those checkpoints as they were. It
# used to skip them as unreadable, train from step 0, and prune them with its own saves. The same options
# that wrote them resume from the newest.
. "$(dirname "$0")/../lib.sh"

RUN=$T/run
TRAIN=(train --backend host --model tiny-dense --layers 2 --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$RUN")
run_capture first fb_mpirun 2 "${TRAIN[@]}" --steps 4 -q
[ "$RC" -eq 0 ] && ok "first job: exit 0" || die "first job: exit $RC: $(stderr_summary "$T/first.err")"
sums() { (cd "$RUN/checkpoints" && find . -type f | sort | xargs sha256sum); }
before=$(sums)
[ -n "$before" ] || die "the first job left no checkpoint"

check_refused() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  local lines
  lines=$(wc -l <"$RUN/events.jsonl")
  run_capture "$name" "$@"
  [ "$RC" -eq 2 ] && grep -qE "^factorybench: error: --resume: $pattern" "$T/$name.err" \
    && ok "$name: exit 2 naming the difference" || fail "$name: exit $RC: $(head -3 "$T/$name.err")"
  [ "$(sums)" = "$before" ] && ok "$name: the checkpoints are untouched" || fail "$name: the checkpoints changed"
  ! grep -q '"ckpt_save_start"' <(tail -n +"$((lines + 1))" "$RUN/events.jsonl") \
    && ok "$name: no save" || fail "$name: it saved"
}
check_refused layers "checkpoint step-00000004: rank [01]'s shard holds .*, this run's state is .* \\(a different --model, --layers, parallel layout, --dtype, --distributed-optimizer or --state-bytes\\): resume with the options that wrote $RUN/checkpoints, or use another --run-dir$" \
  fb_mpirun 2 train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$RUN" --steps 6 --resume -q
check_refused ranks "checkpoint step-00000004 was written by 2 ranks, this job has 1 " \
  fb_mpirun 1 "${TRAIN[@]}" --steps 6 --resume -q
check_refused state_bytes "checkpoint step-00000004: rank [01]'s shard holds .*, this run's state is 16 MiB " \
  fb_mpirun 2 "${TRAIN[@]}" --steps 6 --resume --state-bytes 16M -q

# Another model with the same parameter count (tiny-dense's shapes with 8 heads of 16 instead of 4 of 32): the
# shards have the right sizes, and the manifest's "job" (model name and file digest, layers, layout, dtype)
# tells them apart. It used to load tiny-dense's weights into the other shapes without a word.
sed -e 's/"name": "tiny-dense"/"name": "tiny-dense-8h"/' -e 's/"heads": 4/"heads": 8/' -e 's/"kv_heads": 2/"kv_heads": 4/' \
  -e 's/"head_dim": 32/"head_dim": 16/' "$FB_SOURCE_DIR/configs/models/tiny-dense.json" >"$T/tiny-dense-8h.json"
check_refused same_size "checkpoint step-00000004 was written by another job \(model tiny-dense \([0-9a-f]{16}\), layers 2, tp1 pp1 dp2 ep1, fp32\); this run is model tiny-dense-8h " \
  fb_mpirun 2 train --backend host --model "$T/tiny-dense-8h.json" --layers 2 --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$RUN" --steps 6 --resume -q
grep -q '"job": "model tiny-dense' "$RUN/checkpoints/step-00000004/manifest.json" && ok "the manifest records the job" \
  || fail "no job in $(cat "$RUN/checkpoints/step-00000004/manifest.json")"

# The same model named by its file's path is the same job.
run_capture same fb_mpirun 2 train --backend host --model "$FB_SOURCE_DIR/configs/models/tiny-dense.json" --layers 2 \
  --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$RUN" --steps 6 --resume -q
[ "$RC" -eq 0 ] && ok "same options: exit 0" || fail "same options: exit $RC: $(stderr_summary "$T/same.err")"
grep '"ckpt_restore_end"' "$RUN/events.jsonl" | tail -1 | grep -q '"step":4' \
  && ok "same options: resumed from step 4" || fail "same options: $(grep '"ckpt_restore_end"' "$RUN/events.jsonl" | tail -1)"
# Two models padded to the same shard size by --state-bytes: the manifest's model-state size tells them apart
# (an audit's 1-layer resume loaded a 2-layer checkpoint, and trained NaNs).
PADDED="$T/padded"
fb_mpirun 2 train --backend host --model tiny-dense --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$PADDED" \
  --steps 4 --state-bytes 16M -q || die "the padded run failed"
run_capture padded fb_mpirun 2 train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 2 \
  --keep 1 --run-dir "$PADDED" --steps 6 --state-bytes 16M --resume -q
[ "$RC" -eq 2 ] && grep -qE "^factorybench: error: --resume: checkpoint step-00000004: rank [01]'s shard holds .* of model state \(padded to 16 MiB\), this run's model state is " "$T/padded.err" \
  && ok "padded to the same size, another model: refused" || fail "padded: exit $RC: $(head -3 "$T/padded.err")"
grep -q '"state_bytes"' "$PADDED/checkpoints/step-00000004/manifest.json" && ok "the manifest records each shard's model state" \
  || fail "no state_bytes in $(cat "$PADDED/checkpoints/step-00000004/manifest.json")"
finish
