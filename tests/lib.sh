# Shared helpers for the shell tests (tests/mpi, tests/e2e). Source it first: `. "$(dirname "$0")/../lib.sh"`.
# ctest provides FACTORYBENCH (the binary) and FB_SOURCE_DIR; each test runs in its own temporary folder.
set -u
: "${FACTORYBENCH:?run through ctest, or set FACTORYBENCH to the binary}"
: "${FB_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
# Debian's python3 carries python3-jsonschema; a pyenv python3 earlier on PATH may not.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SCHEMA="$FB_SOURCE_DIR/reports/schema/report-v1.json"
T=$(mktemp -d /tmp/fbtest.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }
# skip REASON: ends the test as skipped (ctest's SKIP_RETURN_CODE, set in tests/CMakeLists.txt), not passed.
FB_SKIP_CODE=77
skip() { echo "SKIP: $*"; exit "$FB_SKIP_CODE"; }
fb() { "$FACTORYBENCH" "$@"; }
# stderr_summary FILE: factorybench's own lines of FILE, then its last 3 lines: what a failure message quotes,
# since under mpirun the last lines are the launcher's banner, not the reason.
stderr_summary() { { grep -m3 "^factorybench: \|\] error: " "$1" || true; } && tail -3 "$1"; }
fb_mpirun() { local n=$1; shift; mpirun --oversubscribe -np "$n" "$FACTORYBENCH" "$@"; }

# run_capture NAME CMD...: runs CMD, stdout in $T/NAME.out, stderr in $T/NAME.err, exit code in $RC.
run_capture() {
  local name=$1; shift
  set +e
  "$@" >"$T/$name.out" 2>"$T/$name.err"
  RC=$?
  set -e
}

# expect_error NAME CODE PATTERN CMD...: CMD exits CODE, stderr is exactly one line matching PATTERN.
expect_error() {
  local name=$1 code=$2 pattern=$3; shift 3
  run_capture "$name" "$@"
  [ "$RC" -eq "$code" ] || { fail "$name: exit $RC, expected $code; stderr: $(cat "$T/$name.err")"; return; }
  local lines; lines=$(grep -c . "$T/$name.err" || true)
  [ "$lines" -eq 1 ] || { fail "$name: expected one line on stderr, got $lines: $(cat "$T/$name.err")"; return; }
  grep -qE -- "$pattern" "$T/$name.err" || { fail "$name: stderr '$(cat "$T/$name.err")' does not match /$pattern/"; return; }
  ok "$name"
}

# json FILE EXPR: prints a Python expression evaluated on the JSON document `d`.
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# assert_json FILE EXPR MESSAGE: Python expression on `d` must be true.
assert_json() {
  if "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; then ok "$3"; else fail "$3 ($2)"; fi
}

# validate FILE: the report validates against reports/schema/report-v1.json.
validate() {
  if "$PY" "$FB_SOURCE_DIR/tests/tools/validate_report.py" "$SCHEMA" "$1"; then ok "schema: $(basename "$1")"; else fail "schema: $1"; fi
}

finish() {
  if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}

# run_resilience NAME ARGS...: `factorybench resilience` with the caller's COMMON options, --max-restarts
# MAX_RESTARTS (default 6), --run-dir T/NAME and -o T/NAME.json; it must exit 0 and its report validate.
run_resilience() {
  local name=$1; shift
  run_capture "$name" fb resilience "${COMMON[@]}" --max-restarts "${MAX_RESTARTS:-6}" --run-dir "$T/$name" \
    -o "$T/$name.json" "$@"
  [ "$RC" -eq 0 ] || { cat "$T/$name.out" "$T/$name.err" >&2; die "$name: exit $RC"; }
  validate "$T/$name.json"
}

# flip_middle FILE: XORs 8 bytes at the middle of FILE with 0xA5, as the ckpt-corrupt fault damages a shard.
flip_middle() {
  "$PY" - "$1" <<'PYEOF'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(os.path.getsize(sys.argv[1]) // 2)
    b = f.read(8)
    f.seek(-len(b), 1)
    f.write(bytes(x ^ 0xA5 for x in b))
PYEOF
}
