#!/usr/bin/env python3
"""Fails when docs/user-guide.md does not mention something a user can type.

The user guide is the one page that answers "how do I use each tool, verb and
flag?". It is written by hand, so it drifts when a flag is added to a tool
and nobody updates the page. This check catches that drift in ctest:

  * every `--flag` printed by `tr-train --help`, `tr-data --help` (and its
    verbs shards and check), `tr-bench --help` and the
    `--help` of each tr-bench verb (run, gate, report, tta; the verbs are read
    from tr-bench's usage lines, and the known ones are always checked);
  * every tr-bench verb itself (`tr-bench gate`, ...);
  * every part of the GPU check (the ORDER= line of ci/gpu_check.sh);
  * every flag of the PyTorch peer scripts (the add_argument calls of
    peers/*.py, read from the source: running them needs torch);
  * every TR_* environment variable that a ci/ script reads with a default or
    an alternative (`${TR_X:-...}`, `${TR_X:+...}`), and every TR_* variable
    the tools read (getenv in framework/, harness/, datasets/).

Flags of other programs quoted in a help text's "Examples:" block (nsys ...)
are not the tool's and are skipped.

"Mentioned" means the exact token appears somewhere in the guide: `--batch`
does not count as a mention of `--batch-per-gpu`, nor the reverse.

  tests/docs_flags.py SOURCE_ROOT BIN_DIR [--guide FILE] [-v]

--guide checks another copy of the guide (to see the check fail on purpose
without touching the real one). Exit 0 with a one-line summary when all is
mentioned; exit 1 with one line per missing item (tool and flag); exit 2 when
a binary or file it needs is missing or a --help run fails.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

# The verbs tr-bench has today; any other verb its usage lines name is checked too.
KNOWN_VERBS = ["run", "gate", "report", "tta"]
# A flag: two dashes, then a lower-case word with dashes; not inside a longer token.
FLAG = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)(?![\w-])")
# A usage line of tr-bench naming a verb: "usage: tr-bench [run] ..." or "tr-bench gate ...".
VERB_LINE = re.compile(r"^\s*(?:usage:\s*)?tr-bench\s+\[?([a-z][a-z-]*)\]?(?:\s|$)")


class Setup(Exception):
    """Something the check needs is not there (exit 2, not 1)."""


def help_text(binary, args):
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        raise Setup(f"{binary}: no such executable (build it first: bash ci/build.sh)")
    cmd = [binary] + args + ["--help"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Setup(f"{' '.join(cmd)}: {e}")
    if r.returncode != 0:
        raise Setup(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[:300]}")
    return r.stdout


def flags_in_help(text, tool):
    """The --flags a help text prints. In an "Examples:" block only the tool's own
    command lines count: the others (nsys ...) show another program's flags."""
    flags, in_examples = [], False
    for line in text.splitlines():
        if line.strip() == "Examples:":
            in_examples = True
            continue
        if in_examples and not line.strip().startswith(tool):
            continue
        for f in FLAG.findall(line):
            if f not in flags:
                flags.append(f)
    return flags


def verbs_in_help(text):
    verbs = [m.group(1) for m in map(VERB_LINE.match, text.splitlines()) if m]
    return list(dict.fromkeys(KNOWN_VERBS + verbs))


def gpu_check_parts(root):
    path = os.path.join(root, "ci", "gpu_check.sh")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise Setup(f"{path}: {e}")
    m = re.search(r'^ORDER="([^"]*)"', text, re.M)
    if not m or not m.group(1).split():
        raise Setup(f"{path}: no ORDER=\"...\" line listing the parts")
    return m.group(1).split()


def peer_flags(root):
    """(script, flag) for every add_argument("--flag", ...) in peers/*.py."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "peers", "*.py"))):
        text = open(path, encoding="utf-8").read()
        for f in re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", text):
            out.append((f"peers/{os.path.basename(path)}", f))
    return out


def env_vars(root):
    """(where, NAME) for the TR_* knobs of ci/ and the TR_* variables the tools read."""
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "ci", "**", "*.sh"), recursive=True)):
        for name in re.findall(r"\$\{(TR_[A-Z0-9_]+):?[-=+?]", open(path, encoding="utf-8").read()):
            out.setdefault(name, os.path.relpath(path, root))
    for d in ("framework", "harness", "datasets"):
        for path in sorted(glob.glob(os.path.join(root, d, "**", "*.*"), recursive=True)):
            if not path.endswith((".h", ".cpp", ".cu")):
                continue
            text = open(path, encoding="utf-8", errors="replace").read()
            for name in re.findall(r"getenv\(\"(TR_[A-Z0-9_]+)\"\)", text):
                out.setdefault(name, os.path.relpath(path, root))
    return sorted((where, name) for name, where in out.items())


def mentioned(guide, token):
    return re.search(r"(?<![\w-])" + re.escape(token) + r"(?![\w-])", guide) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", help="the source tree (holds docs/, ci/, peers/)")
    ap.add_argument("bin_dir", help="the directory of tr-train and tr-bench (build/bin)")
    ap.add_argument("--guide", help="the guide to check (default ROOT/docs/user-guide.md)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list everything checked")
    a = ap.parse_args()
    guide_path = a.guide or os.path.join(a.root, "docs", "user-guide.md")
    try:
        try:
            guide = open(guide_path, encoding="utf-8").read()
        except OSError as e:
            raise Setup(f"{guide_path}: {e}")
        train = os.path.join(a.bin_dir, "tr-train")
        bench = os.path.join(a.bin_dir, "tr-bench")
        checks = []  # (what, token)
        checks += [("tr-train", f) for f in flags_in_help(help_text(train, []), "tr-train")]
        data = os.path.join(a.bin_dir, "tr-data")
        checks += [("tr-data", f) for f in flags_in_help(help_text(data, []), "tr-data")]
        checks += [("tr-data verbs", f"tr-data {v}") for v in ("shards", "check")]
        top = help_text(bench, [])
        checks += [("tr-bench", f) for f in flags_in_help(top, "tr-bench")]
        verbs = verbs_in_help(top)
        for v in verbs:
            checks.append(("tr-bench verbs", f"tr-bench {v}"))
            checks += [(f"tr-bench {v}", f) for f in flags_in_help(help_text(bench, [v]), "tr-bench")]
        parts = gpu_check_parts(a.root)
        checks += [("ci/gpu_check.sh part", p) for p in parts]
        checks += peer_flags(a.root)
        envs = env_vars(a.root)
        checks += [(f"environment ({where})", name) for where, name in envs]
    except Setup as e:
        print(f"docs_flags: cannot check: {e}", file=sys.stderr)
        return 2

    missing, seen = [], set()
    for what, token in checks:
        if (what, token) in seen:
            continue
        seen.add((what, token))
        ok = mentioned(guide, token)
        if a.verbose:
            print(f"docs_flags: {'ok     ' if ok else 'MISSING'} {what}: {token}")
        if not ok:
            missing.append(f"{os.path.relpath(guide_path, a.root) if a.guide is None else guide_path}: "
                           f"{what}: {token} is not mentioned")
    for m in missing:
        print(m)
    if missing:
        print(f"docs_flags: {len(missing)} item(s) missing from the user guide", file=sys.stderr)
        return 1
    flags = {t for w, t in seen if t.startswith("--")}
    print(f"docs_flags: ok: {guide_path} mentions all {len(flags)} flags of tr-train, tr-data (shards, check), tr-bench "
          f"({', '.join(verbs)}) and peers/*.py, {len(parts)} gpu_check parts and {len(envs)} TR_* variables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
