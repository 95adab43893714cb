#!/usr/bin/env bash
# factorybench gemm with bad input: exit 2, one clear line naming the option, nothing allocated, no report.
. "$(dirname "$0")/../lib.sh"
cd "$T"

G=(gemm --backend host --iters 1 --warmup 0)
# A thin but valid loop runs, and says what it loses.
run_capture thin fb gemm --backend host --m 64 --n 64 --k 64 --iters 1 --warmup 0 -o "$T/thin.json"
[ "$RC" -eq 0 ] && grep -q "warning: --iters 1: 1 timed sample(s) per case, so no spread.*--warmup 0: the first timed call includes start-up" "$T/thin.err" \
  && ok "--iters 1 --warmup 0: runs with a warning" || fail "thin loop: exit $RC: $(cat "$T/thin.err")"
expect_error zero_m 2 "invalid --m '0': must be positive" fb "${G[@]}" --m 0 -o "$T/r1.json"
expect_error negative_n 2 "--n.*-5" fb "${G[@]}" --n=-5 -o "$T/r2.json"
expect_error zero_in_list 2 "invalid --k '128,0'" fb "${G[@]}" --k 128,0 -o "$T/r3.json"
expect_error bad_range 2 "invalid --m '512:256:64': range stop below start" fb "${G[@]}" --m 512:256:64 -o "$T/r4.json"
expect_error zero_batch 2 "invalid --batch 0" fb "${G[@]}" --batch 0 -o "$T/r5.json"
# 1G x 1G x 16 fp32: C alone is 4 EiB. Refused before anything is allocated (no std::bad_alloc, no OOM kill).
expect_error too_large 2 "GEMM fp32/1073741824x1073741824x16: A, B and C need .* but the host backend has .* free" \
  fb "${G[@]}" --m 1G --n 1G --k 16 -o "$T/r6.json"
# A set that fits, with the check's host copy of A and B that does not (the host's own memory here):
# refused up front, where it ran and died of bad_alloc in the check.
free=$(awk '/^MemAvailable:/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
k=$((free / 3072 / 64 * 64))
expect_error too_large_checked 2 "A, B and C need .*, and the check's copy of A and B .* more \(--no-check\) but the host backend has .* free" \
  fb "${G[@]}" --m 256 --n 256 --k "$k" -o "$T/r6c.json"
expect_error dim_over_int32 2 "invalid --k '4G': at most 2147483647" fb "${G[@]}" --k 4G -o "$T/r7.json"
expect_error fp8_on_host 2 "fp8 needs the cuda backend" fb "${G[@]}" --dtype fp8_e4m3 -o "$T/r8.json"
expect_error fp16_on_host 2 "fp16 needs the cuda backend" fb "${G[@]}" --dtype fp16 -o "$T/r9.json"
expect_error unknown_dtype 2 "dtype.*fp7" fb "${G[@]}" --dtype fp7 -o "$T/r10.json"
expect_error unknown_model 2 "no-such-model" fb "${G[@]}" --model no-such-model -o "$T/r11.json"
expect_error model_tp_split 2 "heads 32 is not divisible by --tp 3" fb "${G[@]}" --model llama3-8b --tp 3 -o "$T/r12.json"
expect_error model_with_dims 2 "--model takes its shapes from the model" fb "${G[@]}" --model llama3-8b --m 64 -o "$T/r13.json"
expect_error tp_without_model 2 "need --model" fb "${G[@]}" --tp 8 -o "$T/r14.json"
expect_error zero_iters 2 "invalid --iters 0" fb gemm --backend host --iters 0 -o "$T/r15.json"
expect_error bad_threshold 2 "invalid --outlier-threshold '150%'" fb "${G[@]}" --outlier-threshold 150% -o "$T/r16.json"
expect_error bad_transpose 2 "invalid --ta 'X': expected N or T" fb "${G[@]}" --ta X -o "$T/r17.json"
# An -o that cannot be written is refused before the benchmark runs, not after it.
expect_error no_out_dir 2 "invalid -o/--output $T/no/such/r.json: $T/no/such does not exist$" fb -o "$T/no/such/r.json" "${G[@]}"
echo x >"$T/afile"
expect_error out_under_file 2 "invalid -o/--output $T/afile/r.json: $T/afile is not a directory$" fb -o "$T/afile/r.json" "${G[@]}"
mkdir -p "$T/adir"
expect_error out_is_dir 2 "invalid -o/--output $T/adir: a directory, not a file" fb -o "$T/adir" "${G[@]}"
# Hours of work on the host (32K^3 is minutes a call at any CPU's peak) are refused at once, with the estimate (20
# timed + 5 warm-up calls: --autotune runs nothing on host);
# so are a health GEMM of minutes a call and a burn-in GEMM longer than its check interval.
expect_error host_runaway 2 "^factorybench: error: gemm on the host backend: .* FLOP \(1 shape\(s\) x 25 calls\) would take at least .* at this host's fp32 peak of .* TFLOP/s; at most half an hour" \
  fb --backend host -o "$T/runaway.json" gemm --m 32K --n 32K --k 32K
expect_error health_runaway 2 "^factorybench: error: invalid --gemm-size 32768: one fp32 GEMM takes at least .* at this host's peak" \
  fb --backend host -o "$T/runaway.json" health --gemm-size 32768 --allreduce-size 4K --checkpoint-size 64K --checkpoint-dir "$T"
expect_error burnin_runaway 2 "^factorybench: error: invalid --size 32768: one fp32 GEMM takes at least .* at one core's peak of .* TFLOP/s \(the burn-in runs one thread per rank\), longer than a check interval \(500 ms\)" \
  fb --backend host -o "$T/runaway.json" burnin --duration 5s --size 32K
[ ! -e "$T/runaway.json" ] && ok "no report for runaway work" || fail "a report was written for runaway work"
# FACTORYBENCH_INJECT cannot act on gemm (no communicator, no burn-in or collective check): refused, not ignored.
FACTORYBENCH_INJECT=slow-rank@rank=0,delay=1ms expect_error inject_gemm 2 \
  "^factorybench: error: FACTORYBENCH_INJECT 'slow-rank@rank=0,delay=1ms': gemm sends nothing through the communicator: slow-link, slow-rank and hang cannot act on it$" \
  fb --backend host -o "$T/inject.json" gemm --m 64 --n 64 --k 64
FACTORYBENCH_INJECT=bogus@x=1 expect_error inject_bogus 2 "^factorybench: error: invalid FACTORYBENCH_INJECT entry 'bogus@x=1': unknown kind" \
  fb --backend host -o "$T/inject.json" gemm --m 64 --n 64 --k 64
[ ! -e "$T/inject.json" ] && ok "no report for a refused injection" || fail "a report was written despite FACTORYBENCH_INJECT"
# Every -o above (r1 to r17 and r6c): a glob, so that none is left out.
for f in "$T"/r[0-9]*.json; do [ ! -e "$f" ] || fail "a report was written despite the error ($(basename "$f" .json))"; done
finish
