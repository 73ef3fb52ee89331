#!/usr/bin/env python3
"""Appends a GPU check's history lines to the committed history, once the
reports they cite are committed.

ci/interleave.py --history writes one line per interleaved figure, its source
the interleave.json relative to the history file's folder (the check's output,
say check/history.jsonl citing interleave/cnn/interleave.json). Once that
output is copied under the repository (FOLDER, e.g. reports/h100) and
committed as COMMIT, each line's source becomes PATH@COMMIT
(reports/h100/interleave/cnn/interleave.json@abc1234), as
reports/schema.md ("The history of the headline figures") asks, and the line is
appended to reports/history.jsonl.

  python3 ci/history_append.py --lines CHECK/history.jsonl --folder FOLDER --commit COMMIT [--root ROOT]

Every line is checked before any is written: it must be a JSON object with
the history's keys, and its report must exist at COMMIT:PATH (git cat-file).
Exit 0: appended; 1: a line or its report is wrong (nothing written); 2: bad
input. Standard library and git only.
"""
import argparse
import json
import os
import subprocess
import sys

TOOL = "history_append"
KEYS = ["date", "commit", "machine", "figure", "tr", "peer", "ratio", "ci_low", "ci_high", "rounds", "source"]
HISTORY = "reports/history.jsonl"


class Failure(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="ci/history_append.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", required=True, help="the check's history.jsonl")
    ap.add_argument("--folder", required=True, help="where the check's output now lies, from the repository root")
    ap.add_argument("--commit", required=True, help="the commit that holds it")
    ap.add_argument("--root", default=".", help="the repository (default: .)")
    return ap.parse_args(argv)


def exists_at(root, commit, path):
    r = subprocess.run(["git", "-C", root, "cat-file", "-e", f"{commit}:{path}"], capture_output=True)
    return r.returncode == 0


def converted(root, text, folder, commit, where):
    """The lines of text with their sources rewritten as PATH@COMMIT."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            h = json.loads(line)
        except ValueError as e:
            raise Failure(f"{where} line {number}: not JSON: {e}")
        if not isinstance(h, dict) or list(h) != KEYS:
            raise Failure(f"{where} line {number}: not a history line (its keys must be {', '.join(KEYS)})")
        source = h["source"]
        if not isinstance(source, str) or "@" in source or os.path.isabs(source) or ".." in source.split("/"):
            raise Failure(f"{where} line {number}: source {source!r} is not a path inside the check's output")
        path = f"{folder.rstrip('/')}/{source}"
        if not exists_at(root, commit, path):
            raise Failure(f"{where} line {number}: {path} is not in commit {commit}")
        h["source"] = f"{path}@{commit}"
        out.append(json.dumps(h))
    if not out:
        raise Failure(f"{where}: no lines")
    return out


def main(argv):
    a = parse_args(argv)
    try:
        with open(a.lines, encoding="utf-8") as f:
            text = f.read()
        lines = converted(a.root, text, a.folder, a.commit, a.lines)
        with open(os.path.join(a.root, HISTORY), "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    except (Failure, OSError) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    print(f"{TOOL}: {len(lines)} line(s) appended to {HISTORY}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
