#!/usr/bin/env python3
"""Fails when a Markdown file of the project links to a heading it does not
have, or to a file that is not there. A section's anchor follows its title
(GitHub's rule: lower case, punctuation dropped, spaces to hyphens), so a
renamed section breaks every link to it; this finds them before a reader does.
  tests/markdown_links.py ROOT    (checks README.md and reports/schema.md)
"""
import os
import re
import sys

FILES = ["README.md", "reports/schema.md"]


def slug(title):
    t = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return t.replace(" ", "-")


def check(root, name):
    path = os.path.join(root, name)
    text = open(path, encoding="utf-8").read()
    # Headings outside fenced code blocks.
    anchors, fenced = set(), False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#+ (.*)", line)
        if m:
            anchors.add(slug(m.group(1)))
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        if file_part:
            if not os.path.exists(os.path.join(os.path.dirname(path), file_part)):
                problems.append(f"{name}: link to a missing file: {target}")
        elif anchor not in anchors:
            problems.append(f"{name}: link to a missing section: #{anchor}")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = [p for f in FILES for p in check(root, f)]
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"markdown_links: ok ({', '.join(FILES)})")


if __name__ == "__main__":
    main()
