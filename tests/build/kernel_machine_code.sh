#!/usr/bin/env bash
# The cuda kernels' machine code (SASS), read with cuobjdump from the built binary, for properties that decide
# a memory-bound kernel's speed and that no test without a GPU could see otherwise:
# - every load, store and atomic names its state space (LDG/STG/LDS/ATOMG/REDG...); none is generic (LD, ST,
#   ATOM, RED). A pointer that the compiler cannot prove global, such as one read from a table, costs a generic
#   access: the one-launch Adam kernel's 16-byte loads were generic until it said its pointers were global.
# - per-thread arrays stay in registers: ptxas places an array it cannot keep there, and spilled registers, in
#   the thread's stack frame (-res-usage STACK; LOCAL counts other local data and stays 0). No kernel may have
#   more than 16 bytes of it: one of the Adam kernel's 8-float arrays alone would take 32. The bf16 and fp16
#   Adam kernels on sm_90a do save 12 bytes of registers there, once before and after their loop (ptxas keeps
#   them to 64 registers, four blocks of 256 threads per SM); the test lists every kernel with a frame.
# - the one-launch Adam kernel moves its fp32 arrays with 16-byte accesses (LDG.E.128, STG.E.128).
# Skips where the build has no cuda backend, or cuobjdump and nvdisasm are not found (scripts/install-deps.sh
# puts them in /opt/cuda-binutils, which is tried first: an older toolkit's cuobjdump may not read sm_100a).
. "$(dirname "$0")/../lib.sh"
set -e
fb --version | grep -q "; cuda [0-9]" || skip "this build has no cuda backend"
CUOBJDUMP=${CUOBJDUMP:-}
for c in "$CUOBJDUMP" "${CUDA_BINUTILS_PREFIX:-/opt/cuda-binutils}/bin/cuobjdump" /usr/local/cuda/bin/cuobjdump \
  "$(command -v cuobjdump || true)"; do
  [ -n "$c" ] && [ -x "$c" ] && [ -x "$(dirname "$c")/nvdisasm" ] && { CUOBJDUMP=$c; break; }
done
[ -n "$CUOBJDUMP" ] && [ -x "$CUOBJDUMP" ] || skip "no cuobjdump with nvdisasm beside it (scripts/install-deps.sh installs them)"
echo "cuobjdump: $CUOBJDUMP"

"$CUOBJDUMP" -sass "$FACTORYBENCH" >"$T/sass.txt" || die "cuobjdump -sass $FACTORYBENCH failed"
"$CUOBJDUMP" -res-usage "$FACTORYBENCH" >"$T/res.txt" || die "cuobjdump -res-usage $FACTORYBENCH failed"
functions=$(grep -c "Function :" "$T/sass.txt" || true)
archs=$(grep -oE "^arch = sm_[0-9a-z]+" "$T/sass.txt" | cut -d" " -f3 | sort -u | paste -sd" ")
[ "$functions" -ge 20 ] && ok "$functions kernels in the binary ($archs)" || fail "only $functions kernels in the SASS"

# Per kernel and architecture: the generic accesses (the mnemonic after the address comment and an optional
# predicate) and the 16-byte global accesses.
"$PY" - "$T/sass.txt" >"$T/kernels.txt" <<'PY'
import re, sys
arch, name, counts = "?", None, {}
generic = re.compile(r"\*/\s+(?:@!?U?P[0-9T]\s+)?(LD|ST|ATOM|RED)[. ]")
for line in open(sys.argv[1]):
    if m := re.match(r"arch = (sm_\w+)", line.strip()):
        arch = m.group(1)
    elif m := re.search(r"Function : (\S+)", line):
        name = (arch, m.group(1))
        counts[name] = [0, 0, 0]
    elif name:
        counts[name][0] += bool(generic.search(line))
        counts[name][1] += bool(re.search(r"\bLDG\.E(\.[A-Z0-9_]+)*\.128\b", line))
        counts[name][2] += bool(re.search(r"\bSTG\.E(\.[A-Z0-9_]+)*\.128\b", line))
for (arch, fn), (g, l, s) in counts.items():
    print(arch, fn, g, l, s)
PY
generic=$(awk '$3 > 0' "$T/kernels.txt")
[ -z "$generic" ] && ok "no generic load, store or atomic in any kernel" \
  || fail "generic memory accesses (arch, kernel, count): $(awk '$3 > 0 {print $1, $2, $3}' "$T/kernels.txt")"

adam=$(grep -c " [^ ]*adam_multi_tensor_kernel[^ ]* " "$T/kernels.txt" || true)
[ "$adam" -ge 3 ] && ok "$adam one-launch Adam kernels (fp32, bf16, fp16 per architecture)" \
  || fail "expected the Adam kernel per weight type, found $adam"
narrow=$(awk '$2 ~ /adam_multi_tensor_kernel/ && ($4 < 6 || $5 < 6)' "$T/kernels.txt")
[ -z "$narrow" ] && ok "the Adam kernels load and store the master weights and moments 16 bytes at a time" \
  || fail "Adam kernels without 16-byte accesses to master, m, v (arch, kernel, generic, LDG.128, STG.128): $narrow"

# -res-usage: a "Function NAME:" line, then one line of counts (REG, STACK, SHARED, LOCAL, ...) per kernel.
"$PY" - "$T/res.txt" >"$T/frames.txt" <<'PY'
import re, sys
arch, name = "?", None
for line in open(sys.argv[1]):
    if m := re.match(r"\s*arch = (sm_\w+)", line):
        arch = m.group(1)
    elif m := re.match(r"\s*Function (\S+):", line):
        name = m.group(1)
    elif name and (m := re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", line)):
        print(arch, name, m.group(1), m.group(2), m.group(3))
        name = None
PY
usage=$(wc -l <"$T/frames.txt")
[ "$usage" -eq "$functions" ] && ok "resource usage for all $usage kernels" \
  || fail "resource usage for $usage kernels, SASS for $functions"
awk '$4 > 0 || $5 > 0 {print "  stack frame:", $1, $2, "registers", $3, "stack", $4, "local", $5}' "$T/frames.txt"
big=$(awk '$4 > 16 || $5 > 0 {print $1, $2, "stack", $4, "local", $5}' "$T/frames.txt")
[ -z "$big" ] && ok "no kernel keeps more than 16 bytes per thread in local memory (arrays stay in registers)" \
  || fail "kernels with more than 16 bytes of stack or any local data (arch, kernel): $big"
finish
