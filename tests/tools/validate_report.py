#!/usr/bin/env python3
"""Validates factorybench reports against the JSON Schema: validate_report.py SCHEMA REPORT..."""
import json
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("python3-jsonschema is missing (scripts/install-deps.sh installs it)")


def main() -> int:
    schema = json.load(open(sys.argv[1]))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    bad = 0
    for path in sys.argv[2:]:
        report = json.load(open(path))
        for error in validator.iter_errors(report):
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            print(f"{path}: {where}: {error.message}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
