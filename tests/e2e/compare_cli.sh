#!/usr/bin/env bash
# factorybench compare and report as a CI user runs them: exit codes 0/1/2, every --format, JUnit validated
# with xmllint against tests/data/junit.xsd, a reference comparison with its ratio column, and the HTML
# report's one <svg> per chart.
. "$(dirname "$0")/../lib.sh"
set -e
DATA="$FB_SOURCE_DIR/tests/data"
XSD="$DATA/junit.xsd"
SAMPLE="$DATA/report_sample.json"  # it holds one failed result (gemm fp8), which fails any gate
BASE="$T/base.json"                # the sample without it

# Candidates derived from the sample: the same run, one regression, a malformed file, other variants.
"$PY" - "$SAMPLE" "$T" <<'EOF'
import copy, json, sys
base = json.load(open(sys.argv[1])); out = sys.argv[2]
def save(name, d): json.dump(d, open(f"{out}/{name}.json", "w"), indent=1)
base["results"] = [r for r in base["results"] if r["status"] != "failed"]; save("base", base)
def find(d, name): return next(r for r in d["results"] if r["name"] == name)
d = copy.deepcopy(base); find(d, "allreduce/bf16/1073741824")["metrics"]["busbw_gbps"]["value"] *= 0.80; save("worse", d)
d = copy.deepcopy(base); d["run"]["backend"] = "host"; d["run"]["world_size"] = 4; save("other_backend", d)
d = copy.deepcopy(base); d["results"] = [r for r in d["results"] if r["name"] != "bf16/4096x4096x4096"]; save("missing", d)
d = copy.deepcopy(base); find(d, "allreduce/bf16/1048576")["metrics"]["busbw_gbps"]["value"] = "fast"; save("malformed", d)
d = copy.deepcopy(base); find(d, "allreduce/bf16/1048576")["metrics"]["busbw_gbps"]["unit"] = "MB/s"; save("units", d)
d = copy.deepcopy(base); d["results"] = [dict(r, benchmark="other") for r in d["results"]]; save("disjoint", d)
ref = json.load(open(sys.argv[1].replace("tests/data/report_sample.json", "configs/references/h200-8gpu.json")))
mine = copy.deepcopy(base)
find(mine, "allreduce/bf16/17179869184")["metrics"]["busbw_gbps"]["value"] = 470.0
save("mine_h200", mine)
EOF
printf '{"rules": ["train/* mfu >= 0.45"]}\n' >"$T/floor.json"
printf '{"rules": [{"metric": "mfu", "min": "high"}]}\n' >"$T/bad_rules.json"

# Exit 0: a run against itself.
run_capture same fb compare "$BASE" "$BASE"
[ "$RC" -eq 0 ] && grep -q "gate: pass -> exit 0" "$T/same.out" && ok "same report: exit 0" || fail "same: rc=$RC $(cat "$T/same.err")"

# Exit 1: a failed result fails the gate, even against a baseline where it failed too.
run_capture failed_both fb compare "$SAMPLE" "$SAMPLE"
[ "$RC" -eq 1 ] && grep -qE "gemm/fp8/8192x8192x8192 +status .*WORSE +failed in candidate \(and in baseline\)" "$T/failed_both.out" \
  && ok "failed in both: exit 1" || fail "failed in both: rc=$RC $(grep -i fail "$T/failed_both.out")"

# Exit 1: one busbw 20% lower; the row says WORSE.
run_capture worse fb compare "$BASE" "$T/worse.json"
[ "$RC" -eq 1 ] && ok "regression: exit 1" || fail "regression: rc=$RC"
grep -qE "collective/allreduce/bf16/1073741824 +busbw_gbps .*-20\.0% .*WORSE" "$T/worse.out" && ok "table names the WORSE row" ||
  fail "table row: $(cat "$T/worse.out")"
# A failed gate written to a file says why on stderr, also under -q (it said nothing at all).
run_capture worse_quiet fb -q compare "$BASE" "$T/worse.json" --format md -o "$T/worse.md"
[ "$RC" -eq 1 ] && [ ! -s "$T/worse_quiet.out" ] && grep -qE "^error: gate FAIL: collective/allreduce/bf16/1073741824 busbw_gbps: WORSE \(-20\.0% beyond" "$T/worse_quiet.err" \
  && ok "-q, -o: the failing row on stderr" || fail "worse_quiet: rc=$RC: $(cat "$T/worse_quiet.out" "$T/worse_quiet.err")"
run_capture worse_tol fb compare "$BASE" "$T/worse.json" --tolerance 25%
[ "$RC" -eq 0 ] && ok "--tolerance 25%: exit 0" || fail "--tolerance: rc=$RC"

# Every format; JUnit validates against the schema and has one testcase per compared metric.
run_capture junit fb compare "$BASE" "$T/worse.json" --format junit -o "$T/compare.xml"
[ "$RC" -eq 1 ] && [ ! -s "$T/junit.out" ] && ok "junit to -o, nothing on stdout" || fail "junit: rc=$RC"
xmllint --noout --schema "$XSD" "$T/compare.xml" 2>"$T/xmllint.err" && ok "compare JUnit validates (xmllint)" ||
  fail "xmllint: $(cat "$T/xmllint.err")"
fb compare "$BASE" "$T/worse.json" --format json >"$T/compare.json" || true
compared=$(json "$T/compare.json" 'd["summary"]["compared"]')
testcases=$(grep -c "<testcase " "$T/compare.xml")
[ "$compared" -eq "$testcases" ] && [ "$testcases" -gt 50 ] && ok "one testcase per metric ($testcases)" ||
  fail "testcases $testcases vs compared $compared"
assert_json "$T/compare.json" 'd["summary"]["exit_status"] == 1 and d["summary"]["counts"]["WORSE"] == 1' "json summary"
grep -q 'failures="1"' "$T/compare.xml" && ok "junit counts the failure" || fail "junit failures"
run_capture md fb compare "$BASE" "$T/worse.json" --format md
grep -q "| collective/allreduce/bf16/1073741824 | busbw_gbps | 458.5 | 366.8 | -20.0% | 0.800 | \*\*WORSE\*\* |" "$T/md.out" &&
  ok "markdown row" || fail "markdown: $(grep 1073741824 "$T/md.out")"

# Warnings for a different backend and world size; missing results with and without --fail-on-missing.
run_capture backend fb compare "$BASE" "$T/other_backend.json"
[ "$RC" -eq 0 ] && grep -q "warning: backends differ: baseline cuda, candidate host" "$T/backend.out" &&
  grep -q "warning: world sizes differ: baseline 8, candidate 4" "$T/backend.out" && ok "warnings" || fail "warnings"
run_capture missing fb compare "$BASE" "$T/missing.json"
[ "$RC" -eq 0 ] && grep -q "MISSING" "$T/missing.out" && ok "missing: exit 0" || fail "missing: rc=$RC"
run_capture missing_fail fb compare "$BASE" "$T/missing.json" --fail-on-missing
[ "$RC" -eq 1 ] && ok "--fail-on-missing: exit 1" || fail "--fail-on-missing: rc=$RC"

# Rules: a floor the sample's mixtral result (mfu 0.39) breaks.
run_capture floor fb compare "$BASE" "$BASE" --rules "$T/floor.json"
[ "$RC" -eq 1 ] && grep -qE "mfu .*WORSE +0.39 below floor 0.45" "$T/floor.out" && ok "floor: exit 1" ||
  fail "floor: rc=$RC $(grep mfu "$T/floor.out")"

# Exit 2: usage and input errors, one line naming the file and JSON path, nothing written.
expect_error malformed 2 'malformed.json: \$\.results\[0\]\.metrics\.busbw_gbps\.value: expected a number' \
  fb compare "$BASE" "$T/malformed.json" -o "$T/never.md"
[ ! -e "$T/never.md" ] && ok "no output file on error" || fail "output written on error"
expect_error bad_rules 2 'bad_rules.json: \$\.rules\[0\]\.min: expected a number' fb compare "$BASE" "$BASE" --rules "$T/bad_rules.json"
expect_error units 2 'units.json: \$\.results\[0\]\.metrics\.busbw_gbps\.unit: "MB/s" but the baseline .* has "GB/s"' \
  fb compare "$BASE" "$T/units.json"
expect_error disjoint 2 'no result in common' fb compare "$BASE" "$T/disjoint.json"
expect_error no_file 2 'nope.json' fb compare "$BASE" "$T/nope.json"
# 150,000 nested arrays in the summary overflowed the stack (exit 139): refused as input, by report too.
python3 -c "import sys; t = open(sys.argv[1]).read(); open(sys.argv[2], 'w').write(t.replace('\"summary\": {', '\"summary\": {\"deep\": ' + '[' * 150000 + ']' * 150000 + ', ', 1))" "$BASE" "$T/deep.json"
expect_error deep 2 "^factorybench: error: $T/deep.json: JSON nested deeper than 512 levels$" fb compare "$BASE" "$T/deep.json"
expect_error deep_report 2 "^factorybench: error: $T/deep.json: JSON nested deeper than 512 levels$" fb report "$T/deep.json"
expect_error bad_format 2 "^factorybench: error: --format: xml not in \\{table,md,markdown,json,junit\\}$" fb compare "$BASE" "$BASE" --format xml
expect_error bad_tolerance 2 "invalid --tolerance 'lots'" fb compare "$BASE" "$BASE" --tolerance lots
fb compare --help | grep -q "Exit status: 0 no regression; 1 at least one WORSE" && ok "--help documents the exit status" ||
  fail "--help"

# A run as a fraction of a published figure.
run_capture ref fb compare "$FB_SOURCE_DIR/configs/references/h200-8gpu.json" "$T/mine_h200.json" --format md
grep -q "| published | candidate | change | fraction of published |" "$T/ref.out" &&
  grep -q "| collective/allreduce/bf16/17179869184 | busbw_gbps | 482.3 | 470 | -2.6% | 0.974 | SAME |" "$T/ref.out" &&
  ok "reference comparison shows the fraction of the published figure" || fail "reference: $(cat "$T/ref.out")"

# A published nccl-tests average (GB200's all_reduce_perf, 745.5 GB/s) stands for an all-reduce's avg_busbw only:
# an --op all run's average over eight ops is not comparable (it was gated WORSE against it, by name).
fb collective --backend host --op allreduce -b 1K -e 2K -n 3 -w 1 -o "$T/ar.json" >/dev/null
fb collective --backend host --op all -b 1K -e 1K -n 3 -w 1 -o "$T/all_ops.json" >/dev/null
run_capture gb200_ar fb compare "$FB_SOURCE_DIR/configs/references/gb200-nvl72.json" "$T/ar.json"
[ "$RC" -eq 1 ] && grep -qE "^collective/all_reduce_perf/512M-8G/avg_busbw ~ avg_busbw +busbw_gbps +745.5 .* WORSE" "$T/gb200_ar.out" \
  && ok "an all-reduce's avg_busbw pairs with the published average" || fail "gb200_ar: exit $RC: $(cat "$T/gb200_ar.out" "$T/gb200_ar.err")"
expect_error gb200_all 2 "not comparable: all_reduce_perf/512M-8G/avg_busbw: avg_busbw has params.op \"all\" where the reference needs \"allreduce\"$" \
  fb compare "$FB_SOURCE_DIR/configs/references/gb200-nvl72.json" "$T/all_ops.json"

# A report of a newer schema is read with a warning; report runs alone, so it names no rank.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['schema']='factorybench.report/v2'; json.dump(d, open(sys.argv[2], 'w'))" \
  "$SAMPLE" "$T/newer.json"
run_capture newer fb report "$T/newer.json"
[ "$RC" -eq 0 ] && grep -q "^warning: $T/newer.json: schema factorybench.report/v2, this build reads factorybench.report/v1" "$T/newer.err" \
  && ok "newer schema: a warning without a rank" || fail "newer schema: exit $RC: $(cat "$T/newer.err")"

# report: every format; html has one <svg> per chart and nothing external.
fb report "$SAMPLE" --format html -o "$T/report.html"
charts=$(grep -c '<figure class="chart"' "$T/report.html")
svgs=$(grep -o '<svg ' "$T/report.html" | wc -l)
[ "$charts" -eq 8 ] && [ "$svgs" -eq "$charts" ] && ok "html: $svgs svg for $charts charts" || fail "html: $svgs svg, $charts charts"
grep -qiE '<script|<link |https?://[^w]' "$T/report.html" && fail "html is not self-contained" || ok "html self-contained"
fb report "$SAMPLE" "$T/worse.json" --format html -o "$T/trend.html"
grep -q "change</th>" "$T/trend.html" && ok "html trend over two runs" || fail "trend"
fb report "$SAMPLE" --format junit -o "$T/report.xml"
xmllint --noout --schema "$XSD" "$T/report.xml" 2>"$T/xmllint2.err" && ok "report JUnit validates" || fail "$(cat "$T/xmllint2.err")"
fb report "$SAMPLE" --format prometheus >"$T/metrics.prom"
grep -q '^factorybench_busbw_gbps{benchmark="collective",result="allreduce/bf16/1048576",op="allreduce",dtype="bf16",size="1048576"} ' \
  "$T/metrics.prom" && ok "prometheus sample line" || fail "prometheus: $(head -5 "$T/metrics.prom")"
bad=$(grep -vcE '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\} [-+0-9.eEInfNa]+)$' "$T/metrics.prom" || true)
[ "$bad" -eq 0 ] && ok "prometheus lines parse" || fail "$bad prometheus lines do not parse"
# The Prometheus client library's own parser reads every sample, with a result name that needs escaping
# ('"' and '\') read back as written, and no series twice.
"$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); d['results'][0]['name'] = 'q\"b\\\\s é'; json.dump(d, open(sys.argv[2], 'w'))" "$SAMPLE" "$T/quoted.json"
fb report "$T/quoted.json" --format prometheus >"$T/quoted.prom"
"$PY" - "$T/quoted.prom" >"$T/promparse.out" 2>&1 <<'PYEOF' && ok "prometheus_client parses every sample: $(cat "$T/promparse.out")" || fail "prometheus_client: $(tail -3 "$T/promparse.out")"
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
lines = [l for l in text.splitlines() if l and not l.startswith("#")]
assert len(samples) == len(lines), f"{len(samples)} samples parsed from {len(lines)} sample lines"
keys = [(s.name, tuple(sorted(s.labels.items()))) for s in samples]
assert len(set(keys)) == len(keys), "a series is given twice"
assert any(s.labels.get("result") == 'q"b\\s \u00e9' for s in samples), "the escaped result name does not read back"
print(f"{len(samples)} samples")
PYEOF
fb report "$SAMPLE" >"$T/report.md"
grep -q "^## collective" "$T/report.md" && ok "markdown report" || fail "markdown report"
# A result given twice: refused as compare refuses it (a trend row would hold one copy, Prometheus both).
"$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); d['results'].append(d['results'][0]); json.dump(d, open(sys.argv[2], 'w'))" "$SAMPLE" "$T/twice.json"
for f in md prometheus; do
  expect_error "report_twice_$f" 2 "^factorybench: error: $T/twice.json: \\\$\\.results\\[[0-9]+\\]: result [^ ]+ is also \\\$\\.results\\[0\\]: results are told apart by benchmark \\+ name, which must be unique$" \
    fb report "$T/twice.json" --format "$f"
done
# A metric given in two units by the results of one table: no unit in the heading, each value its own.
"$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); r = [x for x in d['results'] if x['benchmark'] == 'collective'][-1]; m = r['metrics']['busbw_gbps']; m['unit'] = 'MB/s'; m['value'] = 123.5; json.dump(d, open(sys.argv[2], 'w'))" "$SAMPLE" "$T/mixed.json"
fb report "$T/mixed.json" >"$T/mixed.md"
grep -q "| busbw_gbps |" "$T/mixed.md" && grep -q " 123.5 MB/s |" "$T/mixed.md" && grep -qE "\| [0-9.]+ GB/s \|" "$T/mixed.md" \
  && ok "report: mixed units named in each cell" || fail "mixed units: $(grep -A4 "^## collective" "$T/mixed.md")"
expect_error report_format 2 "^factorybench: error: --format: pdf not in \\{md,markdown,html,junit,prometheus,summary\\}$" fb report "$SAMPLE" --format pdf
expect_error report_bad 2 'malformed.json: \$\.results\[0\]\.metrics\.busbw_gbps\.value' fb report "$T/malformed.json"
# A report with no results renders nothing: a JUnit file of no testcase would pass a CI gate.
"$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); d['results'] = []; json.dump(d, open(sys.argv[2], 'w'))" "$SAMPLE" "$T/noresults.json"
for f in junit summary md; do
  expect_error "report_no_results_$f" 2 "noresults.json: the report has no results, so there is nothing to render" \
    fb report "$T/noresults.json" --format "$f"
done
# -o naming an input is refused before anything is written: the input is left as it was.
cp "$SAMPLE" "$T/in.json"
sum_before=$(sha256sum <"$T/in.json")
expect_error out_is_input_report 2 "invalid -o/--output $T/in.json: it is the input $T/in.json, which writing would destroy" \
  fb -o "$T/in.json" report "$T/in.json"
# In the caller's shell, not a subshell: a failure recorded there would be lost with the subshell's FAILS.
pushd "$T" >/dev/null
expect_error out_is_input_compare 2 "invalid -o/--output ./in.json: it is the input $T/in.json, which writing would destroy" \
  fb -o ./in.json compare "$T/in.json" "$T/worse.json" --format junit
popd >/dev/null
expect_error out_is_input_import 2 "invalid -o/--output $T/nccl.txt: it is the input $T/nccl.txt" \
  sh -c "cp '$DATA/nccl_tests_allreduce_h100.txt' '$T/nccl.txt' && exec '$FACTORYBENCH' -o '$T/nccl.txt' import nccl-tests '$T/nccl.txt'"
# Any other argument naming an existing file is an input too: a suite, a model, a failure model (a report
# written over one replaced it and exited 0).
printf '{"name": "s", "steps": [{"name": "g", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 3"}]}\n' >"$T/suite_in.json"
cp "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/model_in.json"
cp "$FB_SOURCE_DIR/configs/failure-models/llama3-h100.json" "$T/fm_in.json"
sums_before=$(cat "$T/suite_in.json" "$T/model_in.json" "$T/fm_in.json" | sha256sum)
expect_error out_is_suite 2 "invalid -o/--output $T/suite_in.json: it is the input $T/suite_in.json, which writing would destroy" \
  fb --backend host -o "$T/suite_in.json" suite "$T/suite_in.json"
expect_error out_is_model 2 "invalid -o/--output $T/model_in.json: it is the input $T/model_in.json, which writing would destroy" \
  fb --backend host --output="$T/model_in.json" train --steps 2 --model="$T/model_in.json"
expect_error out_is_failure_model 2 "invalid -o/--output $T/fm_in.json: it is the input $T/fm_in.json" \
  fb -o "$T/fm_in.json" simulate --gpus 64 --trials 2 --failure-model "$T/fm_in.json"
[ "$(cat "$T/suite_in.json" "$T/model_in.json" "$T/fm_in.json" | sha256sum)" = "$sums_before" ] \
  && ok "the suite, model and failure model are left as they were" || fail "an input was overwritten"
# configs/rules/ci.json gates one figure per timing: a GEMM shape 25% slower (its TFLOP/s, time and MFU all
# move) and a training step 25% slower (step time, tokens/s, TFLOP/s, MFU, HFU) each fail once.
fb --backend host -q -o "$T/ci_gemm.json" gemm --m 64 --n 64 --k 64 --iters 3 --warmup 1 --no-check
fb --backend host -q -o "$T/ci_train.json" train --model tiny-dense --steps 3 --warmup-steps 1
"$PY" - "$T" <<'EOF2'
import json, sys
t = sys.argv[1]
for name, slower, faster in (("ci_gemm", {"time_us"}, {"tflops", "mfu"}),
                             ("ci_train", {"step_time_s"}, {"tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hfu"})):
    d = json.load(open(f"{t}/{name}.json"))
    r = d["results"][0]
    for k, m in r["metrics"].items():
        m.pop("stats", None)
        if k in slower: m["value"] /= 0.75
        if k in faster: m["value"] *= 0.75
    json.dump(d, open(f"{t}/{name}_slow.json", "w"))
EOF2
for kind in gemm train; do
  rc=0; fb compare "$T/ci_$kind.json" "$T/ci_${kind}_slow.json" --rules "$FB_SOURCE_DIR/configs/rules/ci.json" --format json \
    >"$T/ci_$kind.cmp" || rc=$?
  worse=$(json "$T/ci_$kind.cmp" "[c['metric'] for c in d['comparisons'] if c['verdict'] == 'WORSE']")
  [ "$rc" -eq 1 ] && [ "$worse" = "['$([ $kind = gemm ] && echo tflops || echo mfu)']" ] \
    && ok "ci.json: a slower $kind fails once ($worse)" || fail "ci.json $kind: exit $rc, WORSE $worse"
done
# A resilience run is gated on goodput (within 1 percentage point) and its checkpoint (25%, times within
# 0.5 s): two quickstart-sized runs differ by this much from one run to the next on a loaded 2-core VM (a
# 10 ms restore taking 15, MTTF and ETTR 10% apart) and pass; goodput 2 points lower and a restore 1 s
# slower fail, once each.
"$PY" - "$DATA/golden/resilience_none.json" "$T" <<'EOF2'
import copy, json, sys
d = json.load(open(sys.argv[1])); t = sys.argv[2]
base = {"goodput_pct": 6.0, "goodput_ref_pct": 5.6, "ettr": 0.19, "mttf_s": 2.0, "mttr_s": 4.6, "wall_s": 11.0,
        "productive_s": 0.6, "productive_time_s": 0.65, "ckpt_interval_s": 0.2, "ckpt_save_s": 0.18,
        "ckpt_save_blocking_s": 0.18, "ckpt_restore_s": 0.010, "ckpt_write_gbps": 0.5}
noisy = dict(base, goodput_pct=5.4, goodput_ref_pct=5.0, ettr=0.17, mttf_s=1.8, mttr_s=5.2, wall_s=12.0,
             productive_s=0.55, productive_time_s=0.6, ckpt_save_s=0.21, ckpt_save_blocking_s=0.21,
             ckpt_restore_s=0.015, ckpt_write_gbps=0.43)
worse = dict(noisy, goodput_pct=4.0, ckpt_restore_s=1.011)
for name, values in (("base", base), ("noisy", noisy), ("worse", worse)):
    r = copy.deepcopy(d)
    for k, v in values.items(): r["results"][0]["metrics"][k]["value"] = v
    json.dump(r, open(f"{t}/ci_res_{name}.json", "w"))
EOF2
for kind in noisy worse; do
  rc=0; fb compare "$T/ci_res_base.json" "$T/ci_res_$kind.json" --rules "$FB_SOURCE_DIR/configs/rules/ci.json" \
    --format json >"$T/ci_res_$kind.cmp" || rc=$?
  echo "$kind: rc $rc $(json "$T/ci_res_$kind.cmp" "[(c['metric'], c['verdict'], c['reason']) for c in d['comparisons']]")" >>"$T/ci_res.log"
  worse=$(json "$T/ci_res_$kind.cmp" "sorted(c['metric'] for c in d['comparisons'] if c['verdict'] == 'WORSE')")
  want=$([ $kind = noisy ] && echo "0 []" || echo "1 ['ckpt_restore_s', 'goodput_pct']")
  [ "$rc $worse" = "$want" ] && ok "ci.json: resilience $kind run: exit $rc, WORSE $worse" \
    || fail "ci.json resilience $kind: exit $rc, WORSE $worse (want $want); $(cat "$T/ci_res.log")"
done
grep -q "'ckpt_restore_s', 'SAME', '+0.005 within ±0.5 s absolute tolerance'" "$T/ci_res.log" \
  && ok "ci.json: the restore's 5 ms is within the absolute tolerance, and says so" || fail "abs note: $(cat "$T/ci_res.log")"

# A rendering that cannot be written to stdout (a full disk behind `>`) is a runtime failure, not success.
if [ -w /dev/full ]; then
  for cmd in "report $SAMPLE" "compare $BASE $BASE" "import nccl-tests $DATA/nccl_tests_allreduce_h100.txt" "--help" \
    "compare --help" "--version"; do
    # shellcheck disable=SC2086
    rc=0; fb $cmd >/dev/full 2>"$T/full.err" || rc=$?
    [ "$rc" -eq 3 ] && grep -q "cannot write to standard output" "$T/full.err" \
      && ok "${cmd%% *} > /dev/full: exit 3" || fail "${cmd%% *} > /dev/full: rc=$rc $(cat "$T/full.err")"
  done
fi
# A reader that goes away (`| true`, `| head`) does not kill a run before its -o report is written: the
# run completes, keeps its report, and says the console output was lost (exit 3). It ended by SIGPIPE (141)
# with no report.
for cmd in "gemm --backend host --m 64 --n 64 --k 64 -n 3 -w 1" "attention --backend host --seq 64 --heads 4 --head-dim 16 -n 3 -w 1"; do
  rm -f "$T/piped.json"
  # shellcheck disable=SC2086
  fb $cmd -o "$T/piped.json" 2>"$T/piped.err" | true
  rc=${PIPESTATUS[0]}
  # (0 only if the reader were still there when the table was printed: the run takes far longer than `true`.)
  { [ "$rc" -eq 3 ] && grep -q "cannot write to standard output" "$T/piped.err" || [ "$rc" -eq 0 ]; } && [ -s "$T/piped.json" ] \
    && ok "${cmd%% *} | true: report kept, exit 3" || fail "${cmd%% *} | true: rc=$rc, report $(ls "$T/piped.json" 2>&1): $(cat "$T/piped.err")"
done
[ "$(sha256sum <"$T/in.json")" = "$sum_before" ] && ok "the input is untouched" || fail "the input was overwritten"
cmp -s "$T/nccl.txt" "$DATA/nccl_tests_allreduce_h100.txt" && ok "the imported log is untouched" || fail "the log was overwritten"
finish
