#!/usr/bin/env bash
# Golden reports for `train` on the host backend: fixed-seed fp32 steps of tiny-dense, tiny-moe and tiny-mla on
# 1 rank and under tp/dp/ep/pp/sequence-parallel layouts on 2 and 4 real ranks. The deterministic parts of each
# report (loss and gradient norm to full printed precision, FLOPs, parameters, memory, collective bytes, MoE
# dispatch counts, the plan, the breakdown's categories) must equal tests/data/golden/train_<case>.json;
# times, host names, ids and versions are masked. Refactoring the training step must keep these identical.
# FB_UPDATE_GOLDEN=1 rewrites the golden files from the current build (review the diff before committing).
. "$(dirname "$0")/../lib.sh"
cd "$T"
GOLDEN="$FB_SOURCE_DIR/tests/data/golden"

# Keeps what a fixed seed determines; drops what the machine, the clock or the build decides.
cat >"$T/mask.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
TIMED_METRICS = {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hfu"}
TIMED_EXTRA = {"peak", "step_times_s", "breakdown_note", "telemetry", "mfu_note"}
out = {"world_size": d["run"]["world_size"], "backend": d["run"]["backend"], "results": []}
for r in d["results"]:
    m = {k: v for k, v in r.get("metrics", {}).items() if k not in TIMED_METRICS}
    x = {k: v for k, v in r.get("extra", {}).items() if k not in TIMED_EXTRA}
    if "breakdown" in x:  # which categories, not their seconds
        x["breakdown"] = sorted(x["breakdown"])
    params = dict(r.get("params") or {})
    if "model_file" in params:  # where the checkout lies is not the model: keep the path below configs/
        f = params["model_file"]
        params["model_file"] = f[f.find("configs/"):] if "configs/" in f else f
    out["results"].append({"benchmark": r["benchmark"], "name": r["name"], "status": r["status"],
                           "error": r.get("error"), "params": params, "metrics": m,
                           "per_rank": r.get("per_rank"), "extra": x})
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
PY

COMMON=(train --backend host --dtype fp32 --steps 3 --warmup-steps 1 --seed 7)

golden() {  # CASE RANKS ARGS...: runs, masks and compares with (or, FB_UPDATE_GOLDEN=1, writes) the golden file
  local name=$1 n=$2; shift 2
  if [ "$n" -eq 1 ]; then
    run_capture "$name" fb "${COMMON[@]}" "$@" -o "$T/$name.json"
  else
    run_capture "$name" fb_mpirun "$n" "${COMMON[@]}" "$@" -o "$T/$name.json"
  fi
  [ "$RC" -eq 0 ] || { fail "$name: exit $RC: $(stderr_summary "$T/$name.err")"; return; }
  "$PY" "$T/mask.py" "$T/$name.json" >"$T/$name.masked.json" || { fail "$name: masking failed"; return; }
  local want="$GOLDEN/train_$name.json"
  if [ "${FB_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$T/$name.masked.json" "$want" && ok "$name: golden written to $want"
    return
  fi
  [ -f "$want" ] || { fail "$name: no golden file $want (FB_UPDATE_GOLDEN=1 writes it)"; return; }
  if diff -u "$want" "$T/$name.masked.json" >"$T/$name.diff"; then
    ok "$name: report matches $(basename "$want")"
  else
    fail "$name: report differs from $(basename "$want"):"$'\n'"$(head -40 "$T/$name.diff")"
  fi
}

golden dense_1 1 --model tiny-dense --grad-accum 2
# The console: the plan first (before the first step, so a long or stopped run has shown it), then the result.
[ "$(head -1 "$T/dense_1.out")" = "model tiny-dense: 2 layers, hidden 128, heads 4/2 kv, ffn 256, vocab 512" ] \
  && [ "$(grep -n "^memory per rank:" "$T/dense_1.out" | cut -d: -f1)" -lt "$(grep -n "^step time:" "$T/dense_1.out" | cut -d: -f1)" ] \
  && [ "$(grep -c "^model tiny-dense:" "$T/dense_1.out")" -eq 1 ] \
  && ok "dense_1: the plan printed once, before the result" || fail "dense_1 console: $(head -3 "$T/dense_1.out")"
golden moe_1 1 --model tiny-moe --routing-skew 0.5
golden mla_1 1 --model tiny-mla
golden dense_tp2_sp 2 --model tiny-dense --tp 2 --sequence-parallel
golden moe_dp2_ep2 2 --model tiny-moe --dp 2 --ep 2 --routing-skew 0.5
golden mla_tp2 2 --model tiny-mla --tp 2
golden dense_dp2_pp2 4 --model tiny-dense --dp 2 --pp 2 --grad-accum 4 --overlap
golden moe_tp2_dp2_ep2 4 --model tiny-moe --tp 2 --dp 2 --ep 2 --grad-accum 2 --routing-skew 0.3
golden mla_tp2_pp2_sp 4 --model tiny-mla --tp 2 --pp 2 --sequence-parallel --grad-accum 2

# The golden files must pin real numbers: a finite, non-zero loss and gradient norm in every case.
for f in "$GOLDEN"/train_*.json; do
  assert_json "$f" "all(r['metrics']['loss']['value'] > 0 and r['metrics']['grad_norm']['value'] > 0 for r in d['results'])" "$(basename "$f"): loss and grad norm pinned"
done
finish
