#!/usr/bin/env python3
"""No host function of framework/, harness/ or datasets/ is longer than 80
lines (a CUDA kernel may be, where splitting it would cost speed). A function
here is what the code's layout makes one: a definition that starts at column 0
and ends at the next line that is a lone "}" at column 0. Prints each one
over the limit; exits 1 on any."""
import pathlib
import re
import sys

LIMIT = 80
NOT_FUNCTIONS = (" ", "#", "}", "//", "namespace", "struct", "class", "enum", "union", "extern", "template")


def long_functions(root):
    for folder in ("framework", "harness", "datasets"):
        for path in sorted(pathlib.Path(root, folder).rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cu"):
                continue
            lines = path.read_text().split("\n")
            i = 0
            while i < len(lines):
                line = lines[i]
                # A definition whose signature ends on a continuation line starts on the line before.
                continued = (line.startswith(" ") and line.endswith("{") and i > 0 and lines[i - 1]
                             and not lines[i - 1].startswith(" ") and lines[i - 1].rstrip().endswith(","))
                initializer = re.search(r"=\s*\{$", line) is not None  # a table, not a body
                if line.endswith("{") and not initializer and "(" in line + (lines[i - 1] if continued else "") and (
                        not line.startswith(NOT_FUNCTIONS) or continued):
                    start = i - 1 if continued else i
                    end = i + 1
                    while end < len(lines) and lines[end] not in ("}", "};"):
                        end += 1
                    kernel = "__global__" in " ".join(lines[max(0, start - 4):start + 1])
                    if end - start + 1 > LIMIT and not kernel:
                        yield f"{path.relative_to(root)}:{start + 1}: {end - start + 1} lines: {lines[start][:70]}"
                    i = end + 1
                else:
                    i += 1


def main(root):
    bad = list(long_functions(root))
    for b in bad:
        print(b)
    if bad:
        print(f"function_length: {len(bad)} host function(s) over {LIMIT} lines; split them into named steps")
        return 1
    print(f"function_length: ok (no host function over {LIMIT} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
