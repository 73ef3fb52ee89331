#!/usr/bin/env python3
"""Fails when the project's documents drift from the project:
  * a Markdown file links to a file that is not there, to a heading its target
    does not have, or to anything outside the repository;
  * a document or a source file points outside the repository (a path that
    climbs above the root, a design brief kept elsewhere);
  * a source comment cites a document's section that does not exist, in the
    form  README "Title  or  docs/design.md, "Title  (any page of docs/): the
    quoted words must begin one of that document's section titles;
  * a Note the code cites (Note [name]) is missing from docs/design.md's
    Notes index, or the index names a file that does not hold the Note;
  * README.md grows past 300 lines, or reports/ past 150 files: the front
    page stays short, and reports/ holds results rather than a lab notebook.
A section's anchor follows its title (GitHub's rule: lower case, punctuation
dropped, spaces to hyphens), so a renamed or moved section breaks every link
to it; this finds them before a reader does.
  tests/markdown_links.py ROOT
"""
import os
import re
import sys

SOURCE_DIRS = ["framework", "harness", "tests", "ci", "peers", "datasets", "cmake", "experiments"]
SOURCE_EXTS = (".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake", ".txt")
README_MAX_LINES = 300
REPORTS_MAX_FILES = 150
# Words that only a pointer outside the repository would need (the lab log
# left the tree: a path qualified by a commit, COMMIT:reports/h200/LOG.md, is fine).
OUTSIDE = re.compile(r"\.\./shared|DESIGN §|DESIGN\.md|(?<!:)reports/h200/LOG\.md")


def markdown_files(root):
    files = ["README.md"]
    for d in ["docs", "reports", "experiments"]:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            files += [os.path.relpath(os.path.join(dirpath, n), root) for n in sorted(names) if n.endswith(".md")]
    return sorted(set(f for f in files if os.path.exists(os.path.join(root, f))))


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
    real_root = os.path.realpath(root)
    for n, line in enumerate(text.split("\n"), 1):
        if OUTSIDE.search(line):
            problems.append(f"{name}:{n}: points at what the repository does not hold: {OUTSIDE.search(line).group(0)}")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.realpath(linked).startswith(real_root + os.sep) and os.path.realpath(linked) != real_root:
            problems.append(f"{name}: link outside the repository: {target}")
            continue
        if not os.path.exists(linked):
            problems.append(f"{name}: link to a missing file: {target}")
            continue
        if anchor and linked.endswith(".md") and anchor not in {slug(t) for t in headings(linked)}:
            problems.append(f"{name}: link to a missing section: {target}")
    return problems


def source_files(root):
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith(SOURCE_EXTS) and f != "markdown_links.py":
                    yield os.path.join(dirpath, f)
    yield os.path.join(root, "CMakeLists.txt")


def check_citations(root):
    """Comments that send the reader to a section by its title's first words."""
    cited = {"README": "README.md"}
    for f in os.listdir(os.path.join(root, "docs")):
        if f.endswith(".md"):
            cited[f"docs/{f}"] = f"docs/{f}"
    titles = {key: headings(os.path.join(root, f)) for key, f in cited.items()}
    keys = "|".join(re.escape(k) for k in sorted(cited, key=len, reverse=True))
    pattern = re.compile(r"(?<![\w/])(" + keys + r"),? \"([^\"\n]+)")
    problems, count = [], 0
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            if OUTSIDE.search(line):
                problems.append(f"{rel}:{n}: points at what the repository does not hold: {OUTSIDE.search(line).group(0)}")
            for key, words in pattern.findall(line):
                count += 1
                words = words.strip().rstrip(").,;")
                if not any(t.startswith(words) for t in titles[key]):
                    problems.append(f"{rel}:{n}: cites {cited[key]} \"{words}\", which has no such section")
    return problems, count


def check_notes(root):
    """Every Note the code cites is in docs/design.md's index, and written where the index says."""
    index_path = os.path.join(root, "docs", "design.md")
    rows = re.findall(r"^\| Note \[([^\]]+)\] \| \[`([^`]+)`\]", open(index_path, encoding="utf-8").read(), re.M)
    index = dict(rows)
    problems = []
    cited = {}
    for path in source_files(root):
        text = open(path, encoding="utf-8", errors="replace").read()
        for name in re.findall(r"Note \[([^\]]+)\]", text):
            # A name may wrap onto the next comment line.
            name = re.sub(r"\s*\n\s*(//+|#|\*)?\s*", " ", name)
            cited.setdefault(name, os.path.relpath(path, root))
    for name, where in sorted(cited.items()):
        if name not in index:
            problems.append(f"docs/design.md: the Notes index lacks Note [{name}] (cited in {where})")
    for name, f in index.items():
        full = os.path.join(root, f)
        if not os.path.exists(full):
            problems.append(f"docs/design.md: Note [{name}] is said to be in {f}, which is not there")
        elif not re.search(r"Note \[" + r"\s*(?:\n\s*(?://+|#|\*)?\s*)?".join(map(re.escape, name.split())) + r"\]",
                           open(full, encoding="utf-8", errors="replace").read()):
            problems.append(f"docs/design.md: Note [{name}] is said to be in {f}, which does not hold it")
        elif name not in cited:
            problems.append(f"docs/design.md: Note [{name}] is in the index but no source cites it")
    return problems, len(index)


def check_sizes(root):
    problems = []
    lines = open(os.path.join(root, "README.md"), encoding="utf-8").read().count("\n")
    if lines > README_MAX_LINES:
        problems.append(f"README.md: {lines} lines; keep it to {README_MAX_LINES} and move the rest into docs/")
    files = sum(len(names) for _, _, names in os.walk(os.path.join(root, "reports")))
    if files > REPORTS_MAX_FILES:
        problems.append(f"reports/: {files} files; it holds the current results per machine "
                        f"(at most {REPORTS_MAX_FILES}), history lives in git")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = markdown_files(root)
    problems = [p for f in files for p in check_links(root, f)]
    cited, count = check_citations(root)
    notes, note_count = check_notes(root)
    problems += cited + notes + check_sizes(root)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f"markdown_links: ok ({len(files)} documents; {count} section citations in the sources; "
          f"{note_count} Notes indexed)")


if __name__ == "__main__":
    main()
