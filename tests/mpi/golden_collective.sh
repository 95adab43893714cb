#!/usr/bin/env bash
# Golden reports for `collective` on the host backend (issue 14): every op with --check in and out of place
# on 2 and 3 ranks, a --split run, reduce ops and MoE dispatch/combine, compared with
# tests/data/golden/collective_host.json after masking times and bandwidths (tests/tools/golden_report.py).
# Guards the per-collective table: names, S, counts, bus factors, check outcomes. FB_UPDATE_GOLDEN=1 rewrites.
. "$(dirname "$0")/../lib.sh"
cd "$T"
C=(collective --backend host --seed 7 --check -n 2 -w 1)
run_capture runs bash -c '
  set -e
  mpirun --oversubscribe -np 2 "$FACTORYBENCH" '"${C[*]}"' --op all --inplace -b 8 -e 4K -f 8 -o '"$T"'/all2.json
  mpirun --oversubscribe -np 3 "$FACTORYBENCH" '"${C[*]}"' --op all -d int32 -b 100 -e 1K -f 10 -r 2 -o '"$T"'/all3.json
  mpirun --oversubscribe -np 4 "$FACTORYBENCH" '"${C[*]}"' --op reducescatter --redop max --split 2 -b 64 -e 256 -o '"$T"'/split.json
  mpirun --oversubscribe -np 2 "$FACTORYBENCH" '"${C[*]}"' --op allreduce -d bf16 --redop avg -b 1K -e 1K -o '"$T"'/avg.json
  mpirun --oversubscribe -np 3 "$FACTORYBENCH" '"${C[*]}"' --op alltoallv --moe-tokens 16 --hidden 8 --experts 6 --top-k 2 --skew 1 --inplace -o '"$T"'/moe.json'
[ "$RC" -eq 0 ] && ok "collective runs exit 0" || die "collective runs exit $RC: $(cat "$T/runs.err")"
for f in all2 all3 split avg moe; do validate "$T/$f.json"; done
if "$PY" "$FB_SOURCE_DIR/tests/tools/golden_report.py" "$FB_SOURCE_DIR/tests/data/golden/collective_host.json" \
  "$T"/{all2,all3,split,avg,moe}.json; then ok "collective reports match the golden"; else fail "collective golden"; fi
finish
