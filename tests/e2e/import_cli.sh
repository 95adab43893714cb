#!/usr/bin/env bash
# Imports round-trip through compare: nccl-tests text and JSON output (hand-written samples in the formats
# nccl-tests prints, and genuine outputs in tests/data/real) and MLPerf Training logs become schema-valid
# reports that compare like ours; exit codes 0/1/2 as `import --help` states them.
. "$(dirname "$0")/../lib.sh"
set -e
DATA="$FB_SOURCE_DIR/tests/data"

# nccl-tests: the text table (baseline) and the -J JSON of a later run (candidate, 1 GiB 22% slower).
run_capture nccl_text fb import nccl-tests "$DATA/nccl_tests_allreduce_h100.txt" -o "$T/nccl_base.json"
[ "$RC" -eq 0 ] && ok "import nccl-tests text" || fail "import text: rc=$RC $(cat "$T/nccl_text.err")"
validate "$T/nccl_base.json"
assert_json "$T/nccl_base.json" 'len(d["results"]) == 17 and d["run"]["world_size"] == 8 and d["run"]["backend"] == "cuda" and "seed" not in d["run"]' \
  "text: 8 sizes x 2 + avg_busbw, 8 ranks"
assert_json "$T/nccl_base.json" \
  'next(r for r in d["results"] if r["name"] == "allreduce/fp32/17179869184")["metrics"]["busbw_gbps"]["value"] == 467.26' \
  "text: busbw of the 16 GiB row"
# A run nccl-tests reported wrong is imported as failed (exit 1), and import, which prints no table, says why
# on stderr at the default level (only -q did).
cat >"$T/wrong.txt" <<'EOF'
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1   100.00   10.49   10.49      0   100.00   10.49   10.49      1
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.49
EOF
run_capture nccl_wrong fb import nccl-tests "$T/wrong.txt" --op allreduce -o "$T/wrong.json"
[ "$RC" -eq 1 ] && grep -qE "^error: collective allreduce/fp32/1048576/inplace failed: nccl-tests reported 1 wrong elements" "$T/nccl_wrong.err" \
  && ok "a wrong run: exit 1 and the reason on stderr" || fail "nccl_wrong: exit $RC: $(cat "$T/nccl_wrong.err")"
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
# The same runs in a submission's benchmark folder whose scaling.json the review committee added: the score
# (not each run) times its factor, as MLCommons' result summarizer scales it; --no-scaling leaves it out.
mkdir -p "$T/scaled/llama2_70b_lora"
cp "$DATA"/mlperf_llama2_70b_lora_base_*.log "$T/scaled/llama2_70b_lora/"
echo '{"scaling_factor": 1.05}' >"$T/scaled/llama2_70b_lora/scaling.json"
run_capture ml_scaled fb import mlperf "$T/scaled/llama2_70b_lora"/*.log -o "$T/ml_scaled.json"
[ "$RC" -eq 0 ] && grep -q "llama2_70b_lora/score: times the scaling factor 1.05 of $T/scaled/llama2_70b_lora/scaling.json" "$T/ml_scaled.err" \
  && ok "scaling.json: exit 0, said on stderr" || fail "ml_scaled: rc=$RC $(cat "$T/ml_scaled.err")"
validate "$T/ml_scaled.json"
assert_json "$T/ml_scaled.json" \
  'abs(next(r for r in d["results"] if r["name"] == "llama2_70b_lora/score")["metrics"]["time_to_train_min"]["value"] - 25.1333 * 1.05) < 0.01 and next(r for r in d["results"] if r["name"] == "llama2_70b_lora/run1")["metrics"]["time_to_train_min"]["value"] == 25.1' \
  "scaling.json 1.05: score 25.13 x 1.05 = 26.39; the runs as logged"
run_capture ml_unscaled fb import mlperf --no-scaling "$T/scaled/llama2_70b_lora"/*.log -o "$T/ml_unscaled.json"
assert_json "$T/ml_unscaled.json" \
  'abs(next(r for r in d["results"] if r["name"] == "llama2_70b_lora/score")["metrics"]["time_to_train_min"]["value"] - 25.1333) < 0.01' \
  "--no-scaling: the olympic mean as measured"
echo '{"scaling_factor": "1.05"}' >"$T/scaled/llama2_70b_lora/scaling.json"
expect_error bad_scaling 2 "^factorybench: error: $T/scaled/llama2_70b_lora/scaling.json: scaling_factor \"1.05\" is not a positive number$" \
  fb import mlperf "$T/scaled/llama2_70b_lora"/*.log -o "$T/ml_bad_scaling.json"
[ ! -e "$T/ml_bad_scaling.json" ] && ok "a bad scaling.json writes no report" || fail "a bad scaling.json wrote a report"
echo '{"scaling_factor": 1.05}' >"$T/scaled/llama2_70b_lora/scaling.json"
expect_error mixed_scaling 2 "^factorybench: error: .*base_1.log and .*base_2.log are runs of llama2_70b_lora from folders scaled differently \(no scaling.json; .*scaling.json says 1.05\)" \
  fb import mlperf "$DATA"/mlperf_llama2_70b_lora_base_1.log "$T/scaled/llama2_70b_lora/mlperf_llama2_70b_lora_base_2.log" \
  -o "$T/ml_mixed.json"
run_capture ml_cand fb import mlperf "$DATA"/mlperf_llama2_70b_lora_cand_*.log -o "$T/ml_cand.json"
[ "$RC" -eq 1 ] && ok "an aborted run fails its result: exit 1" || fail "ml_cand: rc=$RC"
validate "$T/ml_cand.json"
fb compare "$T/ml_base.json" "$T/ml_cand.json" --format json >"$T/ml_cmp.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] && ok "mlperf regression: exit 1" || fail "mlperf compare: rc=$rc"
assert_json "$T/ml_cmp.json" \
  '[c["verdict"] for c in d["comparisons"] if c["result"] == "llama2_70b_lora/score"] == ["WORSE"]' "time to train WORSE"

# Real outputs (tests/data/real, provenance in its README.md): exit codes, figures, unknown metadata.
REAL="$DATA/real"
for f in nccl_2.x_a3mega_h100_2node_allreduce nccl_2.18_tagoutput_allreduce_mpi_rtx5090_3reps \
  nccl_2.x_old_efa_p4d_tagoutput_allreduce nccl_issue290_h100_1node_8gpu_allreduce \
  nccl_issue290_srun_label_h100_2node_allreduce; do
  run_capture "$f" fb import nccl-tests "$REAL/$f.txt" -o "$T/$f.json"
  [ "$RC" -eq 0 ] && ok "real $f: exit 0" || fail "real $f: rc=$RC $(cat "$T/$f.err")"
  validate "$T/$f.json"
done
assert_json "$T/nccl_2.x_old_efa_p4d_tagoutput_allreduce.json" \
  'd["run"]["world_size"] == 16 and all(r["status"] == "ok" for r in d["results"]) and "features" not in d["tool"]' \
  "old 'error' column (max deviation 5e-07) is not read as wrong elements; no local library versions"
run_capture issue37 fb import nccl-tests "$REAL/nccl_issue37_v100_allgather_error_column.txt" -o "$T/issue37.json"
[ "$RC" -eq 1 ] && ok "issue #37 (error 1e+00, 2 out of bounds): exit 1" || fail "issue37: rc=$RC $(cat "$T/issue37.err")"
validate "$T/issue37.json"
assert_json "$T/issue37.json" \
  'd["run"]["world_size"] is None and [r["name"] for r in d["results"] if r["status"] == "failed"] == ["allgather/fp32/4294967296", "allgather/fp32/4294967296/inplace"]' \
  "issue #37: both sides failed, world size unknown"
# Two files of the same test: one report, no duplicate names, repeats counted.
fb import nccl-tests "$REAL/nccl_2.18_tagoutput_allreduce_mpi_rtx5090_3reps.txt" \
  "$REAL/nccl_2.18_tagoutput_allreduce_mpi_rtx5090_nthreads4.txt" -o "$T/two.json"
validate "$T/two.json"
assert_json "$T/two.json" \
  'len({r["name"] for r in d["results"]}) == len(d["results"]) == 17 and d["results"][0]["params"]["repeats"] == 4' \
  "two files of one test: 17 unique results with 4 repeats each"
# The 2-node srun run against the 2-node A3 Mega run: same names, same world size, verdicts per size.
fb compare "$T/nccl_2.x_a3mega_h100_2node_allreduce.json" "$T/nccl_issue290_srun_label_h100_2node_allreduce.json" \
  --format json >"$T/real_cmp.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] && ok "A3 Mega vs issue #290 nodes: exit 1 (slower sizes)" || fail "real compare: rc=$rc"
assert_json "$T/real_cmp.json" \
  '[c["verdict"] for c in d["comparisons"] if c["result"] == "allreduce/fp32/8589934592" and c["metric"] == "busbw_gbps"] == ["WORSE"] and not any("world sizes" in w for w in d["warnings"])' \
  "8 GiB busbw 338.82 -> 155.57 is WORSE; 16 vs 16 ranks: no warning"
# Unknown world size (null) against a known one: no "world sizes differ" warning.
fb compare "$T/issue37.json" "$T/issue37.json" --format json >"$T/unknown_cmp.json" || true
assert_json "$T/unknown_cmp.json" 'not any("world sizes" in w for w in d["warnings"])' "unknown world size: no warning"
fb compare "$T/nccl_2.x_a3mega_h100_2node_allreduce.json" "$T/issue37.json" --format json >"$T/mixed_cmp.json" || true
assert_json "$T/mixed_cmp.json" 'not any("world sizes" in w for w in d["warnings"])' "16 vs unknown: no warning"
# --op names the collective where the output does not.
fb import nccl-tests "$REAL/nccl_issue290_h100_1node_8gpu_allreduce.txt" --op all_reduce_perf_mpi -o "$T/op.json"
assert_json "$T/op.json" 'd["results"][0]["name"] == "allreduce/fp32/134217728" and d["summary"]["import"][0]["ops"][0]["from"] == "--op"' "--op"
expect_error bad_op 2 "invalid --op 'allfoo'" fb import nccl-tests "$REAL/nccl_issue290_h100_1node_8gpu_allreduce.txt" --op allfoo
# MLPerf v4.0 logs from two submitters: the system from SYSJSON or the platform, world size only when said.
run_capture ml_real fb import mlperf "$REAL/mlperf_v4.0_nvidia_eos_n128_llama2_70b_lora_result_0.txt" -o "$T/ml_nv.json"
[ "$RC" -eq 0 ] && ok "MLPerf NVIDIA Eos log: exit 0" || fail "ml_real: rc=$RC $(cat "$T/ml_real.err")"
validate "$T/ml_nv.json"
assert_json "$T/ml_nv.json" 'd["summary"]["mlperf"]["system"] == "Eos_n128" and d["run"]["world_size"] == 1024' "SYSJSON: Eos_n128, 1024 GPUs"
fb import mlperf "$REAL/mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora_result_0.txt" -o "$T/ml_asus.json"
validate "$T/ml_asus.json"
assert_json "$T/ml_asus.json" \
  'd["run"]["world_size"] is None and abs(d["results"][0]["metrics"]["time_to_train_min"]["value"] - 29.5544) < 1e-3' \
  "ASUSTeK (CRLF): 29.554 min, world size unknown"
# The exit codes are in --help.
for sub in "" nccl-tests mlperf; do
  # shellcheck disable=SC2086
  fb import $sub --help >"$T/help.txt"
  grep -q "2  usage or input error" "$T/help.txt" && grep -q "1  imported, a result failed" "$T/help.txt" \
    && ok "exit codes in import $sub --help" || fail "exit codes missing from import $sub --help"
done
# Each format's help is its own: mlperf's does not describe nccl-tests files.
fb import mlperf --help | grep -q "nccl-tests" && fail "import mlperf --help talks of nccl-tests" || ok "import mlperf --help is mlperf's"

# Errors: one line, exit 2.
printf '%s\n' '{"results": [{"size": 8, "type": "float", "out_of_place": {"time": "x", "alg_bw": 1, "bus_bw": 1}}]}' >"$T/bad.json"
expect_error bad_json 2 'bad.json: \$\.results\[0\]\.out_of_place\.time: expected a number' fb import nccl-tests "$T/bad.json"
printf ':::MLLOG {oops\n' >"$T/bad.log"
expect_error bad_log 2 'bad.log:1: malformed :::MLLOG line' fb import mlperf "$T/bad.log"
expect_error no_file 2 'nope.txt' fb import nccl-tests "$T/nope.txt"
expect_error no_kind 2 '^factorybench: error: import needs a format: one of nccl-tests, mlperf' fb import
expect_error unknown_kind 2 "^factorybench: error: unknown import format 'nccl' \\(expected one of nccl-tests, mlperf\\)" fb import nccl x.txt
# A byte order mark (a file saved by a Windows editor) is not part of the output.
printf '\xef\xbb\xbf' >"$T/bom.txt"
cat "$FB_SOURCE_DIR/tests/data/nccl_tests_allreduce_h100.txt" >>"$T/bom.txt"
run_capture bom fb import nccl-tests "$T/bom.txt" -o "$T/bom.json"
[ "$RC" -eq 0 ] && validate "$T/bom.json" && ok "a file with a byte order mark imports" || fail "bom: exit $RC: $(cat "$T/bom.err")"
# A -J file of a format version past the known ones is read, and said to be newer.
sed 's/"version": 2/"version": 7/' "$FB_SOURCE_DIR/tests/data/nccl_tests_allreduce_h100.json" >"$T/v7.json"
run_capture v7 fb import nccl-tests "$T/v7.json" -o "$T/v7.json.out"
[ "$RC" -eq 0 ] && grep -q "v7.json: nccl-tests JSON v7 is newer than the -J format versions 1 to 3" "$T/v7.err" \
  && ok "a newer -J format version is read with a warning" || fail "v7: exit $RC: $(cat "$T/v7.err")"
# -J without its closing average: the run did not finish, as a text table without its Avg line.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('average_bus_bandwidth'); json.dump(d, open(sys.argv[2], 'w'))" \
  "$FB_SOURCE_DIR/tests/data/nccl_tests_allreduce_h100.json" "$T/noavg.json"
run_capture noavg fb import nccl-tests "$T/noavg.json" -o "$T/noavg.out.json"
[ "$RC" -eq 0 ] && grep -q "has no closing average" "$T/noavg.err" && ok "-J without its average is unfinished" \
  || fail "noavg: exit $RC: $(cat "$T/noavg.err")"
sed 's/"time_ms": 1764400096000, "event_type": "INTERVAL_START", "key": "run_start"/"time_ms": 1764409999999, "event_type": "INTERVAL_START", "key": "run_start"/' \
  "$DATA/mlperf_llama2_70b_lora_base_1.log" >"$T/reversed.log"
expect_error reversed 2 'reversed.log:[0-9]+: run_stop \(time_ms [0-9]+\) does not follow run_start' fb import mlperf "$T/reversed.log"
printf '# size count type redop root time algbw busbw #wrong\n  8  2  float  sum  -1  nan  0.00  0.00  0\n' >"$T/nan.txt"
expect_error nan_time 2 "nan.txt:2: column time: expected a number, got 'nan'" fb import nccl-tests "$T/nan.txt"
printf '# size count type redop root time algbw busbw #wrong\n  8  2  float  none  -1  1.0  0.00  0.00  0\n' >"$T/which.txt"
expect_error which_op 2 'which.txt:1: cannot tell which collective .* give --op' fb import nccl-tests "$T/which.txt"
# One file given twice would be two runs (mlperf) or its rows' repeats (nccl-tests): refused, no report.
expect_error twice_mlperf 2 "^factorybench: error: .*base_1.log is given twice: each file is one run" \
  fb import mlperf "$DATA/mlperf_llama2_70b_lora_base_1.log" "$DATA/mlperf_llama2_70b_lora_base_1.log" -o "$T/twice.json"
ln -s "$DATA/nccl_tests_allreduce_h100.txt" "$T/link.txt"
expect_error twice_nccl 2 "^factorybench: error: .*nccl_tests_allreduce_h100.txt is given twice \(also as $T/link.txt\)" \
  fb import nccl-tests "$DATA/nccl_tests_allreduce_h100.txt" "$T/link.txt" -o "$T/twice.json"
[ ! -e "$T/twice.json" ] && ok "no report for a file given twice" || fail "a report was written for a file given twice"
# A log with MLLOG events but none of a run's: named as such (it was called a log with no MLLOG lines).
grep -E '"key": "(eval_accuracy|tracked_stats)"' "$DATA/mlperf_llama2_70b_lora_base_1.log" >"$T/events_only.log"
expect_error no_run_events 2 "^factorybench: error: .*events_only.log: [0-9]+ :::MLLOG event\(s\), but no run_start, run_stop or submission_\* key" \
  fb import mlperf "$T/events_only.log"
# --op against the table's shape: the user's word is kept, the contradiction said once.
grep -v "Collective test" "$DATA/nccl_tests_allreduce_h100.txt" >"$T/unnamed.txt"
run_capture op_shape fb import nccl-tests "$T/unnamed.txt" --op allgather -o "$T/op_shape.json"
[ "$RC" -eq 0 ] && [ "$(grep -c "unnamed.txt.*: --op allgather, but the table's shape .* is allreduce's; imported as allgather, as asked" "$T/op_shape.err")" = 1 ] \
  && ok "--op against the shape: imported as asked, warned once" || fail "op_shape: rc=$RC $(cat "$T/op_shape.err")"
assert_json "$T/op_shape.json" 'd["summary"]["import"][0]["ops"][0]["shape_says"] == "allreduce" and d["results"][0]["name"].startswith("allgather/")' "--op against the shape: recorded in summary.import"
run_capture op_agrees fb import nccl-tests "$T/unnamed.txt" --op allreduce -o "$T/op_agrees.json"
[ "$RC" -eq 0 ] && ! grep -q "shape" "$T/op_agrees.err" && ok "--op agreeing with the shape: exit 0, no warning" \
  || fail "op_agrees: rc=$RC $(cat "$T/op_agrees.err")"
assert_json "$T/op_agrees.json" 'd["summary"]["import"][0]["ops"] == [{"from": "--op", "op": "allreduce"}] and {r["name"].split("/")[0] for r in d["results"]} == {"allreduce", "avg_busbw"}' \
  "--op agreeing with the shape: imported as allreduce, no shape_says in summary.import"
finish
