#!/usr/bin/env python3
"""Note [settings, not flags] (framework/core/error.h): no string in framework/
names a tool's flag ("--batch"); messages name settings with setting("batch"),
which the tools print as their flags. Prints each offending line; exits 1 on any."""
import pathlib
import re
import sys

FLAG = re.compile(r'(?<![\w-])--[a-z]')


def strings_of(line):
    """The string literals of a line of C++, comments left out."""
    out, i, n = [], 0, len(line)
    while i < n:
        if line.startswith("//", i):
            break
        if line[i] == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append(line[i + 1:j])
            i = j + 1
        elif line[i] == "'":
            i = line.find("'", i + 2 if i + 1 < n and line[i + 1] == "\\" else i + 1) + 1 or n
        else:
            i += 1
    return out


def main(root):
    bad = []
    for path in sorted(pathlib.Path(root, "framework").rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu"):
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if any(FLAG.search(s) for s in strings_of(line)):
                bad.append(f"{path.relative_to(root)}:{k}: {line.strip()}")
    for b in bad:
        print(b)
    if bad:
        print(f"framework_settings: {len(bad)} framework string(s) name a flag; use setting(\"name\") "
              "and map it in harness/lib/cli/setting_flags.cpp")
        return 1
    print("framework_settings: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
