#!/usr/bin/env python3
"""Checks docs/errors.md, the bad-input table, against the binary: each row's command must exit with the
row's code and print exactly the row's error, one line, on stderr (and write no report). With --update the
Exit and Error columns are rewritten from what the binary does (review the diff before committing).

usage: check_errors_table.py FACTORYBENCH SOURCE_DIR [--update]
Commands run in SOURCE_DIR with FACTORYBENCH_CONFIG_DIR=configs; leading VAR=VALUE words set the environment,
the word `factorybench` is the binary under test, `$OUT` is a temporary folder; a command without $OUT gets
`--output $OUT/report.json` appended. Nothing may appear in $OUT."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

BEGIN, END = "<!-- errors-table begin -->", "<!-- errors-table end -->"


def cells(line):
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def code(text):
    m = re.fullmatch(r"`(.*)`", text)
    if not m:
        raise ValueError(f"expected `code`, got {text!r}")
    return m.group(1)


def run(binary, source, command, out):
    words = shlex.split(command.replace("$OUT", out))
    env = dict(os.environ, FACTORYBENCH_CONFIG_DIR=os.path.join(source, "configs"))
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = os.path.join(source, value) if key.endswith("_DIR") else value
    if not words or words[0] != "factorybench":
        raise ValueError(f"command must start with factorybench: {command!r}")
    if "$OUT" not in command:  # every command asks for a report, and none may be written
        words += ["--output", os.path.join(out, "report.json")]
    p = subprocess.run([binary] + words[1:], cwd=source, env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def main():
    binary, source = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv[3:]
    path = os.path.join(source, "docs", "errors.md")
    lines = open(path).read().split("\n")
    begin, end = lines.index(BEGIN), lines.index(END)
    failures, rows = 0, 0
    for i in range(begin + 1, end):
        line = lines[i]
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| Surface"):
            continue
        surface, bad, command, exit_text, error = cells(line)
        command = code(command)
        rows += 1
        with tempfile.TemporaryDirectory() as out:
            rc, stderr = run(binary, source, command, out)
            leftovers = os.listdir(out)
        got = stderr.strip()
        if update:
            esc = got.replace("|", "\\|").replace("\n", " ⏎ ")  # several lines: the check fails on them
            lines[i] = f"| {surface} | {bad} | `{command.replace('|', chr(92) + '|')}` | {rc} | `{esc}` |"
            continue
        problems = []
        if str(rc) != exit_text:
            problems.append(f"exit {rc}, table says {exit_text}")
        if got != code(error):
            problems.append(f"stderr {got!r}, table says {code(error)!r}")
        if len(stderr.strip().split("\n")) != 1:
            problems.append(f"{len(stderr.strip().splitlines())} lines on stderr")
        if leftovers:
            problems.append(f"wrote {leftovers} despite the error")
        if problems:
            failures += 1
            print(f"FAIL: {command}: " + "; ".join(problems))
        else:
            print(f"ok: {surface}: {bad}")
    if update:
        open(path, "w").write("\n".join(lines))
        print(f"updated {rows} rows of {path}")
        return 0
    if rows < 30:
        print(f"FAIL: only {rows} rows in the table")
        return 1
    print(f"{rows} rows, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
