#!/usr/bin/env bash
# Bad command lines: exit 2, exactly one clear line on stderr, no report written.
. "$(dirname "$0")/../lib.sh"
cd "$T"

expect_error unknown_subcommand 2 "frobnicate" fb frobnicate
expect_error no_subcommand 2 "subcommand" fb
expect_error unknown_option 2 "--bogus" fb info --bogus -o "$T/r1.json"
expect_error bad_backend 2 "--backend" fb info --backend tpu -o "$T/r2.json"
expect_error bad_log_level 2 "--log-level" fb info --log-level loud -o "$T/r3.json"
expect_error bad_seed 2 "--seed" fb info --seed banana -o "$T/r4.json"
# This machine has no GPU (CI): asking for cuda fails with the driver's reason, not a crash.
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  expect_error cuda_without_gpu 2 "--backend cuda: " fb info --backend cuda -o "$T/r5.json"
  # An earlier run's report at -o does not pass for this run's: the start-up report replaced it as the backend
  # started (tools/session.hpp), and the error removed that. Under mpirun too, where the job is then aborted.
  for np in 1 2; do
    echo '{"an earlier run": true}' >"$T/earlier$np.json"
    run_capture "earlier$np" fb_mpirun "$np" gemm --backend cuda --m 64 -o "$T/earlier$np.json"
    [ "$RC" -ne 0 ] && grep -q "error: --backend cuda: " "$T/earlier$np.err" && [ ! -e "$T/earlier$np.json" ] \
      && ok "np $np: a start-up error leaves no report, not even the earlier one" \
      || fail "np $np: rc=$RC, $(ls "$T" | grep earlier), $(cat "$T/earlier$np.err")"
  done
fi
# An integer beyond 64 bits is refused as typed (CLI11 alone saturated it to 2^63-1, and the later check
# named 9223372036854775807), for a count option, a plain integer option and a negative value alike.
expect_error huge_steps 2 "--steps: '99999999999999999999999' is out of range" fb train --model tiny-dense --steps 99999999999999999999999 -o "$T/r6.json"
expect_error huge_gpus 2 "--gpus: '-99999999999999999999999' is out of range" fb simulate --gpus -99999999999999999999999 -o "$T/r7.json"
expect_error huge_tp 2 "--tp: '18446744073709551617' is out of range" fb train --model tiny-dense --tp 18446744073709551617 -o "$T/r8.json"
# The largest seed itself is still a seed.
run_capture largest_seed fb simulate --gpus 8 --days 1 --trials 2 --seed 18446744073709551615 -o "$T/seed.json"
[ "$RC" -eq 0 ] && ok "largest seed accepted" || fail "largest seed: rc=$RC $(tail -2 "$T/largest_seed.out")"
for f in r1 r2 r3 r4 r5 r6 r7 r8; do [ ! -e "$T/$f.json" ] || fail "a report was written despite the error ($f)"; done

# locate: a buffer no rank can hold is refused before the watchdog's directory is made (was: exit 3 from the
# allocation, and fb-hang-* left in the run dir).
mkdir -p "$T/locate_run"
expect_error locate_bytes 2 "invalid -b/--bytes 1T: a buffer of 1 TiB per rank, but only .* is free" \
  fb locate --backend host -b 1T --run-dir "$T/locate_run" -o "$T/locate.json"
[ -z "$(ls -A "$T/locate_run")" ] && [ ! -e "$T/locate.json" ] && ok "locate_bytes: nothing left behind" \
  || fail "locate_bytes: left $(ls -A "$T/locate_run")"

# -o through links: a link to a file not yet written gets the report; a loop, or a link into a missing
# directory, is refused before the run (both used to fail with exit 3 after it).
ln -s "run-9.json" "$T/latest.json"
run_capture link_out fb simulate --gpus 8 --days 1 --trials 2 -o "$T/latest.json"
[ "$RC" -eq 0 ] && [ -L "$T/latest.json" ] && [ -s "$T/run-9.json" ] && ok "-o a link to a new file: written there" \
  || fail "link_out: rc=$RC $(cat "$T/link_out.err")"
ln -s "$T/loop_b" "$T/loop_a"; ln -s "$T/loop_a" "$T/loop_b"
expect_error link_loop 2 "invalid -o/--output .*loop_a: a loop of symbolic links" fb simulate --gpus 8 -o "$T/loop_a"
# ...and a loop given as an input is one, not a missing file.
expect_error input_loop 2 "cannot read .*loop_a: a loop of symbolic links$" fb report "$T/loop_a"
ln -s /nonexistent/dir/r.json "$T/dangling.json"
expect_error link_missing_dir 2 "invalid -o/--output .*dangling.json: /nonexistent/dir does not exist$" fb simulate --gpus 8 -o "$T/dangling.json"

# locate: two sizes measured as one (whole fp32 elements) would be two results of one name; a NaN floor
# compared false and switched the --floors preset off.
expect_error locate_dup_sizes 2 "invalid -b/--bytes '64K,65537': 64K and 65537 are both measured as 65536 bytes" \
  fb locate --backend host -b 64K,65537 -o "$T/locate.json"
expect_error locate_nan_floor 2 "invalid --min-p2p-bw nan: must be a finite number >= 0" \
  fb locate --backend host --floors network-400g --min-p2p-bw nan -o "$T/locate.json"

# A --run-dir that cannot hold the hang watchdog's files, and burn-in operands no rank can hold, are usage
# errors (exit 2), not runtime failures (exit 3 from the watchdog or the allocation).
expect_error locate_run_dir 2 "^factorybench: error: invalid --run-dir /proc/1: cannot write in /proc/1: .* \(the hang watchdog keeps its state files there\)$" \
  fb locate --backend host --run-dir /proc/1 -o "$T/rd1.json"
expect_error burnin_size 2 "invalid --size 1000000: its operands need .* per rank, but only .* is free" \
  fb burnin --backend host --size 1000000 --duration 1s -o "$T/rd2.json"
[ ! -e "$T/rd1.json" ] && [ ! -e "$T/rd2.json" ] && ok "no report for either" || fail "a report was written"

# --help and --version succeed and say what the tool is.
run_capture help fb --help
[ "$RC" -eq 0 ] && grep -q "info" "$T/help.out" && ok "--help lists subcommands" || fail "--help"
run_capture version fb --version
[ "$RC" -eq 0 ] && grep -qE '^factorybench [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}|unknown); (cuda [0-9.]+, driver [^,]+,|cuda: off).*Open MPI.*OpenBLAS' "$T/version.out" \
  && ok "--version: $(cat "$T/version.out")" || fail "--version: $(cat "$T/version.out")"
# Paths named for what they are: a report where no file can be made (/proc), compare rules that are missing.
expect_error out_in_proc 2 "^factorybench: error: invalid -o/--output /proc/version: cannot write in /proc: no new file can be created there$" \
  fb --backend host -o /proc/version info
expect_error missing_rules 2 "^factorybench: error: invalid --rules $T/missing-rules.json: no such file$" \
  fb compare --rules "$T/missing-rules.json" "$T/a.json" "$T/b.json"
# Global options that contradict each other, or could not act, are refused; CLI11's wording is made plain.
expect_error quiet_and_level 2 "^factorybench: error: --quiet and --log-level are exclusive: give one$" \
  fb -q --log-level debug info --backend host
expect_error interval_off 2 "^factorybench: error: --telemetry-interval acts only with --telemetry summary or full \(this run has it off\)$" \
  fb --telemetry off --telemetry-interval 1s info --backend host
expect_error given_twice 2 "^factorybench: error: --steps given 2 times: give it once$" \
  fb train --backend host --steps 2 --steps 3
expect_error check_and_no_check 2 "^factorybench: error: --check and --no-check are exclusive: give one$" \
  fb collective --backend host --check --no-check
# Extra words are named in the order they were typed (CLI11 listed them last first).
expect_error extras_order 2 "^factorybench: error: The following arguments were not expected: extra1 extra2$" \
  fb gemm --backend host extra1 extra2
# A global option the command does nothing for is refused, before or after the command word.
expect_error idle_seed 2 "^factorybench: error: --seed does nothing for report: it renders reports$" \
  fb --seed 7 report "$FB_SOURCE_DIR/tests/data/report_sample.json"
expect_error idle_backend 2 "^factorybench: error: --backend does nothing for compare: it compares reports$" \
  fb compare "$FB_SOURCE_DIR/tests/data/report_sample.json" "$FB_SOURCE_DIR/tests/data/report_sample.json" --backend host
expect_error idle_telemetry 2 "^factorybench: error: --telemetry does nothing for simulate: it computes from failure models, on no device$" \
  fb simulate --gpus 8 --telemetry off
run_capture simulate_seed fb simulate --gpus 8 --days 1 --trials 2 --seed 3 -o "$T/sim_seed.json"
[ "$RC" -eq 0 ] && ok "simulate takes --seed (its trials are random)" || fail "simulate --seed: exit $RC: $(cat "$T/simulate_seed.err")"

# -o must not replace what the run reads: a preset named by its bare name, the hardware table, a run dir's files.
cp -r "$FB_SOURCE_DIR/configs" "$T/cfg"
cp "$T/cfg/models/tiny-dense.json" "$T/tiny-dense.orig"
FACTORYBENCH_CONFIG_DIR="$T/cfg" expect_error out_is_preset 2 \
  "^factorybench: error: invalid -o/--output $T/cfg/models/tiny-dense.json: a file of the configuration directory $T/cfg, which the run reads" \
  fb train --backend host --model tiny-dense --steps 2 -o "$T/cfg/models/tiny-dense.json"
FACTORYBENCH_CONFIG_DIR="$T/cfg" expect_error out_is_hardware 2 "a file of the configuration directory" \
  fb info --backend host -o "$T/cfg/hardware/host-cpu.json"
cmp -s "$T/cfg/models/tiny-dense.json" "$T/tiny-dense.orig" && ok "the preset is untouched" || fail "the preset was replaced"
mkdir -p "$T/rd"
run_capture rd_first fb train --backend host --model tiny-dense --layers 1 --steps 2 --checkpoint-every 1 --run-dir "$T/rd"
expect_error out_is_event_log 2 "^factorybench: error: invalid -o/--output $T/rd/events.jsonl: a file the job keeps in --run-dir $T/rd" \
  fb train --backend host --model tiny-dense --layers 1 --steps 3 --run-dir "$T/rd" --resume -o "$T/rd/events.jsonl"
expect_error out_is_manifest 2 "a file the job keeps in --run-dir" \
  fb train --backend host --model tiny-dense --layers 1 --steps 3 --run-dir "$T/rd" --resume \
  -o "$T/rd/checkpoints/step-00000002/manifest.json"
run_capture rd_beside fb train --backend host --model tiny-dense --layers 1 --steps 3 --run-dir "$T/rd" --resume \
  -o "$T/rd/report.json"
[ "$RC" -eq 0 ] && [ -s "$T/rd/report.json" ] && ok "a report beside the run dir's files is written" \
  || fail "rd_beside: exit $RC: $(cat "$T/rd_beside.err")"

# A control character in what an error quotes (a path, an option value, a JSON key) is written as an escape:
# the error stays one line and shows it (a carriage return used to hide the text before it).
expect_error newline_path 2 '^factorybench: error: file not found: /tmp/no\\nsuch\.json$' fb report $'/tmp/no\nsuch.json'
expect_error cr_model 2 "unknown model 'tiny-dense\\\\r' \\(available: " fb train --backend host --dry-run --model $'tiny-dense\r'
expect_error newline_value 2 "invalid --m '8\\\\n9'" fb gemm --backend host --m $'8\n9' -o "$T/nl.json"
[ ! -e "$T/nl.json" ] && ok "newline_value: no report" || fail "newline_value wrote a report"
$PY -c 'import json, sys; m = json.load(open(sys.argv[1])); m["evil\nkey"] = 1; json.dump(m, open(sys.argv[2], "w"))' \
  "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/nlkey.json"
expect_error newline_key 2 'nlkey\.json.*evil\\nkey' fb train --backend host --dry-run --model "$T/nlkey.json"
# A NUL in a suite step's args (JSON's \u0000) can be in no command-line word: named with its path, whole.
printf '{"steps": [{"name": "g", "command": "gemm", "args": ["--m", "8\\u0000"]}]}' >"$T/nul_suite.json"
expect_error nul_suite_args 2 'nul_suite\.json: \$\.steps\[0\]\.args\[1\]: a NUL byte: no command-line word can hold one$' \
  fb suite --backend host "$T/nul_suite.json"
# A suite holds each step's parsed command until it ends (about 250 KB): more than 1000 steps are refused
# before any is parsed (20,000 took 5 GB, and more ran out of memory as an internal error).
$PY -c 'import json, sys; json.dump({"steps": [{"name": f"s{i}", "command": "info"} for i in range(1001)]}, open(sys.argv[1], "w"))' \
  "$T/long_suite.json"
expect_error long_suite 2 'long_suite\.json: \$\.steps: 1001 steps; a suite has at most 1000 \(split it into several suites\)$' \
  fb suite --backend host --list "$T/long_suite.json"
# ...and a NUL in a JSON file is malformed, not the end of it (nlohmann stops reading there).
printf '{"schema": "factorybench.report/v1"}\0 garbage' >"$T/nul_report.json"
expect_error nul_json 2 'nul_report\.json: malformed JSON: a NUL byte at byte 37$' fb report "$T/nul_report.json"
finish
