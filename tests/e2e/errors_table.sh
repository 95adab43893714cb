#!/usr/bin/env bash
# docs/errors.md cannot drift: every row of its bad-input table is run against this build, and the exit code
# and the one line on stderr must be the table's (tests/tools/check_errors_table.py; --update rewrites them).
. "$(dirname "$0")/../lib.sh"
"$PY" "$FB_SOURCE_DIR/tests/tools/check_errors_table.py" "$FACTORYBENCH" "$FB_SOURCE_DIR" || die "docs/errors.md is out of date"
finish
