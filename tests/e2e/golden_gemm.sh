#!/usr/bin/env bash
# Golden reports for `gemm` on the host backend (issue 14): fixed seeds and shapes, compared with
# tests/data/golden/gemm_host.json after masking times, rates, hosts and machine-dependent figures
# (tests/tools/golden_report.py). Guards refactors of the measurement loop: names, params, FLOP and byte
# counts, metric units, sample counts and check outcomes must not change. FB_UPDATE_GOLDEN=1 rewrites it.
. "$(dirname "$0")/../lib.sh"
cd "$T"
G=(--backend host --seed 7 --iters 3 --warmup 1)
run_capture runs bash -c '
  set -e
  for d in fp32 fp64 bf16; do "$FACTORYBENCH" gemm '"${G[*]}"' --dtype $d --m 64 --n 48 --k 32 -o '"$T"'/$d.json; done
  "$FACTORYBENCH" gemm '"${G[*]}"' --m 64 --n 32 --k 48 --batch 3 --ta T -o '"$T"'/batched.json
  "$FACTORYBENCH" gemm '"${G[*]}"' --sweep --m 32:64:32 --n 32 --k 16,32 -o '"$T"'/sweep.json
  "$FACTORYBENCH" gemm '"${G[*]}"' --model tiny-dense --tp 2 --seq 32 -o '"$T"'/model.json
  "$FACTORYBENCH" gemm '"${G[*]}"' --m 40 --n 40 --k 40 --no-check -o '"$T"'/nocheck.json'
[ "$RC" -eq 0 ] && ok "gemm runs exit 0" || die "gemm runs exit $RC: $(cat "$T/runs.err")"
for f in fp32 fp64 bf16 batched sweep model nocheck; do validate "$T/$f.json"; done
if "$PY" "$FB_SOURCE_DIR/tests/tools/golden_report.py" "$FB_SOURCE_DIR/tests/data/golden/gemm_host.json" \
  "$T"/{fp32,fp64,bf16,batched,sweep,model,nocheck}.json; then ok "gemm reports match the golden"; else fail "gemm golden"; fi
finish
