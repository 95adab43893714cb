#!/usr/bin/env bash
# Imports round-trip through compare: nccl-tests text and JSON output (hand-written samples in the formats
# nccl-tests prints) and MLPerf Training logs become schema-valid reports that compare like ours.
. "$(dirname "$0")/../lib.sh"
set -e
DATA="$FB_SOURCE_DIR/tests/data"

# nccl-tests: the text table (baseline) and the -J JSON of a later run (candidate, 1 GiB 22% slower).
run_capture nccl_text fb import nccl-tests "$DATA/nccl_tests_allreduce_h100.txt" -o "$T/nccl_base.json"
[ "$RC" -eq 0 ] && ok "import nccl-tests text" || fail "import text: rc=$RC $(cat "$T/nccl_text.err")"
validate "$T/nccl_base.json"
assert_json "$T/nccl_base.json" 'len(d["results"]) == 17 and d["run"]["world_size"] == 8 and d["run"]["backend"] == "cuda"' \
  "text: 8 sizes x 2 + avg_busbw, 8 ranks"
assert_json "$T/nccl_base.json" \
  'next(r for r in d["results"] if r["name"] == "allreduce/fp32/17179869184")["metrics"]["busbw_gbps"]["value"] == 467.26' \
  "text: busbw of the 16 GiB row"
run_capture nccl_json fb import nccl-tests "$DATA/nccl_tests_allreduce_h100.json" -o "$T/nccl_cand.json"
[ "$RC" -eq 0 ] && ok "import nccl-tests JSON" || fail "import json: rc=$RC $(cat "$T/nccl_json.err")"
validate "$T/nccl_cand.json"
assert_json "$T/nccl_cand.json" 'd["system"]["ranks"][0]["host"] == "node02" and d["tool"]["name"] == "factorybench"' \
  "json: devices and tool"

run_capture nccl_same fb compare "$T/nccl_base.json" "$T/nccl_base.json"
[ "$RC" -eq 0 ] && ok "nccl-tests import vs itself: exit 0" || fail "same: rc=$RC"
fb compare "$T/nccl_base.json" "$T/nccl_cand.json" --format json >"$T/nccl_cmp.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] && ok "nccl-tests regression: exit 1" || fail "regression: rc=$rc"
assert_json "$T/nccl_cmp.json" \
  '[c["verdict"] for c in d["comparisons"] if c["result"] == "allreduce/fp32/1073741824" and c["metric"] == "busbw_gbps"] == ["WORSE"]' \
  "the 1 GiB busbw is WORSE"
assert_json "$T/nccl_cmp.json" \
  '[c["verdict"] for c in d["comparisons"] if c["result"] == "allreduce/fp32/17179869184" and c["metric"] == "busbw_gbps"] == ["SAME"]' \
  "the 16 GiB busbw is SAME"

# Several files make one report; no -o prints the report on stdout.
fb import nccl-tests "$DATA/nccl_tests_allreduce_h100.txt" >"$T/stdout.json"
validate "$T/stdout.json"

# MLPerf: five baseline runs, five candidate runs (one aborted): the score regresses.
run_capture ml_base fb import mlperf "$DATA"/mlperf_llama2_70b_lora_base_*.log -o "$T/ml_base.json"
[ "$RC" -eq 0 ] && ok "import mlperf" || fail "import mlperf: rc=$RC $(cat "$T/ml_base.err")"
validate "$T/ml_base.json"
assert_json "$T/ml_base.json" \
  'abs(next(r for r in d["results"] if r["name"] == "llama2_70b_lora/score")["metrics"]["time_to_train_min"]["value"] - 25.1333) < 0.01' \
  "score: olympic mean of 25.1, 24.6, 25.4, 24.9, 26.0 = 25.13"
run_capture ml_cand fb import mlperf "$DATA"/mlperf_llama2_70b_lora_cand_*.log -o "$T/ml_cand.json"
[ "$RC" -eq 1 ] && ok "an aborted run fails its result: exit 1" || fail "ml_cand: rc=$RC"
validate "$T/ml_cand.json"
fb compare "$T/ml_base.json" "$T/ml_cand.json" --format json >"$T/ml_cmp.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] && ok "mlperf regression: exit 1" || fail "mlperf compare: rc=$rc"
assert_json "$T/ml_cmp.json" \
  '[c["verdict"] for c in d["comparisons"] if c["result"] == "llama2_70b_lora/score"] == ["WORSE"]' "time to train WORSE"

# Errors: one line, exit 2.
printf '%s\n' '{"results": [{"size": 8, "type": "float", "out_of_place": {"time": "x", "alg_bw": 1, "bus_bw": 1}}]}' >"$T/bad.json"
expect_error bad_json 2 'bad.json: \$\.results\[0\]\.out_of_place\.time: expected a number' fb import nccl-tests "$T/bad.json"
printf ':::MLLOG {oops\n' >"$T/bad.log"
expect_error bad_log 2 'bad.log:1: malformed :::MLLOG line' fb import mlperf "$T/bad.log"
expect_error no_file 2 'nope.txt' fb import nccl-tests "$T/nope.txt"
expect_error no_kind 2 'subcommand is required' fb import
finish
