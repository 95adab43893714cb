#!/usr/bin/env bash
# factorybench collective with bad input: exit 2, one clear line naming the option, no report, no allocation.
. "$(dirname "$0")/../lib.sh"
cd "$T"

C=(collective --backend host)
expect_error min_gt_max 2 "minbytes.*larger than.*maxbytes" fb "${C[@]}" -b 1M -e 1K -o "$T/r1.json"
expect_error factor_lt_2 2 "stepfactor 1: must be in \\[2, 1024\\]" fb "${C[@]}" -b 8 -e 64 -f 1 -o "$T/r2.json"
expect_error factor_negative 2 "invalid -f/--stepfactor -2: must not be negative" fb "${C[@]}" -b 8 -e 64 -f -2 -o "$T/r2.json"
expect_error average_range 2 "^factorybench: error: invalid -a/--average 7: expected 0 \\(rank 0.s time\\), 1 \\(the mean\\), 2 \\(the min\\) or 3 \\(the max\\)$" fb "${C[@]}" -a 7 -o "$T/r2a.json"
expect_error unknown_op 2 "--op 'allscatter'" fb "${C[@]}" --op allscatter -o "$T/r3.json"
expect_error unknown_dtype 2 "dtype.*fp7" fb "${C[@]}" -d fp7 -o "$T/r4.json"
expect_error tf32 2 "^factorybench: error: invalid --dtype tf32: a GEMM compute mode, not a type collectives move; its data is fp32 \(use -d fp32\)$" fb "${C[@]}" -d tf32 -o "$T/r4t.json"
expect_error experts_huge 2 "^factorybench: error: invalid --experts 1000000000: at most 65536$" fb "${C[@]}" --op alltoallv --moe-tokens 64 --experts 1000000000 --top-k 2 -o "$T/r4e.json"
expect_error routing_huge 2 "^factorybench: error: invalid --moe-tokens 16777216 with --experts 256 and --top-k 8 on 1 ranks: the routing table takes 4.3e\+10 draws" fb "${C[@]}" --op alltoallv --moe-tokens 16777216 --experts 256 --top-k 8 -o "$T/r4r.json"
expect_error too_large 2 "needs .* per rank.*free" fb "${C[@]}" -b 64T -e 64T -o "$T/r5.json"
# --check copies a case's input and output on top of the two buffers (the host's own memory here): a size
# whose two buffers fit and four do not is refused up front, not killed after minutes of measuring.
avail=$(awk '/^MemAvailable:/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
third=$((avail / 3))
expect_error too_large_checked 2 "needs .* per rank \(4 buffers of .*, 2 of them --check's copies\), but only .* is free .*, or --no-check\)$" \
  fb "${C[@]}" -b "$third" -e "$third" -n 1 -w 0 -o "$T/r5c.json"  # the few-samples warning waits for the checks
expect_error split_1 2 "--split 2: must divide the world size 1" fb "${C[@]}" --split 2 -o "$T/r6.json"
expect_error bad_size 2 "minbytes" fb "${C[@]}" -b 12Q -o "$T/r7.json"
expect_error bad_redop 2 "reduce op 'prod'" fb "${C[@]}" --redop prod -o "$T/r8.json"
expect_error bad_root 2 "--root 3" fb "${C[@]}" --op broadcast --root 3 -o "$T/r9.json"
expect_error bad_average 2 "average" fb "${C[@]}" -a 5 -o "$T/r10.json"
expect_error moe_without_tokens 2 "need --moe-tokens" fb "${C[@]}" --op alltoallv --experts 8 -o "$T/r11.json"
expect_error moe_wrong_op 2 "--moe-tokens needs --op alltoallv" fb "${C[@]}" --moe-tokens 8 --experts 8 --top-k 2 -o "$T/r12.json"
expect_error moe_topk 2 "--top-k 9" fb "${C[@]}" --op alltoallv --moe-tokens 8 --experts 8 --top-k 9 -o "$T/r13.json"
expect_error zero_iters 2 "--iters 0" fb "${C[@]}" -n 0 -o "$T/r14.json"
expect_error step_zero 2 "stepbytes" fb "${C[@]}" -i 0 -o "$T/r15.json"
# Options that cannot act on the chosen ops are refused, not ignored.
expect_error redop_no_reduce 2 "^factorybench: error: --redop acts only on allreduce, .*reduce.*; --op broadcast does not reduce$" \
  fb "${C[@]}" --op broadcast --redop max -o "$T/r16.json"
expect_error root_no_root 2 "^factorybench: error: --root acts only on .*broadcast.*; --op allgather has no root$" \
  fb "${C[@]}" --op allgather --root 0 -o "$T/r17.json"
expect_error moe_sizes 2 "^factorybench: error: -b, -e, -f and -i do not apply to --moe-tokens" \
  fb "${C[@]}" --op alltoallv --moe-tokens 16 --hidden 64 --experts 4 --top-k 2 -b 1M -e 2M -o "$T/r18.json"
expect_error skew_text 2 "^factorybench: error: invalid --skew -1: must be a finite number >= 0$" \
  fb "${C[@]}" --op alltoallv --moe-tokens 16 --hidden 64 --experts 4 --top-k 2 --skew -1 -o "$T/r19.json"
expect_error iters_cap 2 "^factorybench: error: invalid --iters 100000000: must be in \[1, 1000000\]$" \
  fb "${C[@]}" -n 100000000 -w 100000000 -o "$T/r20.json"
# Every -o above (r1 to r20 and the lettered ones, r2a, r4t, r4e, r4r, r5c): a glob, so that none is left out.
for f in "$T"/r[0-9]*.json; do [ ! -e "$f" ] || fail "a report was written despite the error ($(basename "$f" .json))"; done

# A negative value for an unsigned option is named, not read as 2^64-1.
expect_error neg_factor 2 "^factorybench: error: invalid -f/--stepfactor -1: must not be negative$" fb "${C[@]}" -f -1 -o "$T/neg.json"
expect_error neg_tokens 2 "^factorybench: error: invalid --moe-tokens -1: must not be negative$" \
  fb "${C[@]}" --op alltoallv --moe-tokens -1 --experts 8 --top-k 2 -o "$T/neg.json"
expect_error inf_gate 2 "^factorybench: error: invalid --min-busbw inf: must be a bus bandwidth in \[0, 100000\] GB/s$" \
  fb "${C[@]}" --min-busbw inf -o "$T/neg.json"
[ ! -e "$T/neg.json" ] && ok "no report for a negative count or an unreachable gate" || fail "a report for a negative count or an unreachable gate"
# A hang watchdog's --run-dir that cannot hold its state files (a file in the path: as root, a read-only
# directory is still writable) is refused before anything is measured (it was found as the watchdog started,
# after the device and its peak), by collective, health, locate and burnin alike; nothing made, no report.
touch "$T/plain_file"
for cmd in "collective -b 1K -e 1K" "health" "locate" "burnin --duration 2s"; do
  name=hang_dir_${cmd%% *}
  # shellcheck disable=SC2086
  expect_error "$name" 2 "^factorybench: error: invalid --run-dir $T/plain_file/hang: $T/plain_file is not a directory \(the hang watchdog keeps its state files there\)$" \
    fb $cmd --backend host --hang-timeout 30s --run-dir "$T/plain_file/hang" -o "$T/$name.json"
  [ ! -e "$T/$name.json" ] && ! grep -q . "$T/$name.out" && ok "$name: nothing measured, no report" || fail "$name: $(cat "$T/$name.out")"
done
# A good run in one process (world size 1) works and validates.
run_capture good fb "${C[@]}" --op all --check -b 64 -e 1K -f 4 -n 2 -w 1 -o "$T/good.json"
[ "$RC" -eq 0 ] && validate "$T/good.json" || fail "world-size-1 run exited $RC: $(cat "$T/good.err")"
finish
