#!/usr/bin/env python3
"""Fails when a Markdown file of the project links to a heading it does not
have, or to a file that is not there, and when a source comment cites a
README or H200-log section that does not exist. A section's anchor follows its
title (GitHub's rule: lower case, punctuation dropped, spaces to hyphens), so
a renamed or moved section breaks every link to it; this finds them before a
reader does.
  tests/markdown_links.py ROOT
Checks the links of README.md, reports/schema.md, reports/h200/LOG.md and
reports/h200/README.md, links between them included, and comments of the
form  README, "Title  or  README "Title  (and the same with LOG.md) in
framework/, harness/, tests/, ci/ and peers/: the quoted words must begin a
section's title.
"""
import os
import re
import sys

FILES = ["README.md", "reports/schema.md", "reports/h200/LOG.md", "reports/h200/README.md"]
CITED = {"README": "README.md", "LOG.md": "reports/h200/LOG.md"}
SOURCE_DIRS = ["framework", "harness", "tests", "ci", "peers"]
SOURCE_EXTS = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh")


def slug(title):
    t = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return t.replace(" ", "-")


def headings(path):
    """The titles of a Markdown file's headings outside fenced code blocks."""
    titles, fenced = [], False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#+ (.*)", line)
        if m:
            titles.append(m.group(1).strip())
    return titles


def check_links(root, name):
    path = os.path.join(root, name)
    text = open(path, encoding="utf-8").read()
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(linked):
            problems.append(f"{name}: link to a missing file: {target}")
            continue
        if anchor and linked.endswith(".md") and anchor not in {slug(t) for t in headings(linked)}:
            problems.append(f"{name}: link to a missing section: {target}")
    return problems


def check_citations(root):
    """Comments that send the reader to a section by its title's first words."""
    titles = {key: headings(os.path.join(root, f)) for key, f in CITED.items()}
    pattern = re.compile(r"\b(README|LOG\.md),? \"([^\"\n]+)")
    problems, count = [], 0
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXTS) or f == "markdown_links.py":
                    continue
                path = os.path.join(dirpath, f)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    for key, words in pattern.findall(line):
                        count += 1
                        words = words.strip().rstrip(").,;")
                        if not any(t.startswith(words) for t in titles[key]):
                            rel = os.path.relpath(path, root)
                            problems.append(f"{rel}:{n}: cites {CITED[key]} \"{words}\", which has no such section")
    return problems, count


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = [p for f in FILES for p in check_links(root, f)]
    cited, count = check_citations(root)
    problems += cited
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"markdown_links: ok ({', '.join(FILES)}; {count} section citations in the sources)")


if __name__ == "__main__":
    main()
