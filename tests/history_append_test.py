#!/usr/bin/env python3
"""ci/history_append.py on a throw-away git repository: a check's history
lines get PATH@COMMIT sources and are appended; a line whose report is not in
the commit, or that is not a history line, stops the whole append.

  python3 tests/history_append_test.py [-v]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "ci", "history_append.py")
OLD = '{"date": "2026-12-05", "commit": "c0", "machine": "GPU", "figure": "f (ms)", "tr": 1.0, "peer": 2.0, ' \
      '"ratio": 0.5, "ci_low": null, "ci_high": null, "rounds": null, "source": "reports/x.json@c0"}\n'


def line(source, **over):
    h = {"date": "2026-12-06T20:00:00Z", "commit": "abc", "machine": "NVIDIA H100 80GB HBM3",
         "figure": "cnn amp b256 full capture vs PyTorch full-capture (ms)", "tr": 0.6, "peer": 1.2, "ratio": 0.5,
         "ci_low": 0.45, "ci_high": 0.55, "rounds": 3, "source": source}
    h.update(over)
    return json.dumps(h)


class HistoryAppendTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = self.tmp.name
        git = lambda *a: subprocess.run(["git", "-C", self.repo, *a], check=True, capture_output=True, text=True)
        git("init", "-q")
        os.makedirs(os.path.join(self.repo, "reports/h100/interleave/cnn"))
        with open(os.path.join(self.repo, "reports/h100/interleave/cnn/interleave.json"), "w") as f:
            f.write("{}\n")
        with open(os.path.join(self.repo, "reports/history.jsonl"), "w") as f:
            f.write(OLD)
        git("add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "reports")
        self.commit = git("rev-parse", "--short", "HEAD").stdout.strip()
        self.lines = os.path.join(self.repo, "check_history.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def append(self, *lines):
        with open(self.lines, "w") as f:
            f.write("".join(l + "\n" for l in lines))
        return subprocess.run([sys.executable, TOOL, "--lines", self.lines, "--folder", "reports/h100",
                               "--commit", self.commit, "--root", self.repo], capture_output=True, text=True)

    def history(self):
        with open(os.path.join(self.repo, "reports/history.jsonl")) as f:
            return f.read()

    def test_sources_become_path_at_commit(self):
        r = self.append(line("interleave/cnn/interleave.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.history()
        self.assertTrue(text.startswith(OLD))  # appended, the old lines kept
        new = json.loads(text[len(OLD):])
        self.assertEqual(new["source"], f"reports/h100/interleave/cnn/interleave.json@{self.commit}")
        self.assertEqual(new["ratio"], 0.5)

    def test_a_report_missing_from_the_commit_writes_nothing(self):
        r = self.append(line("interleave/cnn/interleave.json"), line("interleave/gpt2/interleave.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 2: reports/h100/interleave/gpt2/interleave.json is not in commit", r.stderr)
        self.assertEqual(self.history(), OLD)

    def test_a_line_that_is_not_a_history_line_writes_nothing(self):
        bad = json.loads(line("interleave/cnn/interleave.json"))
        del bad["rounds"]
        for text, words in ((json.dumps(bad), "not a history line"), ("{", "not JSON"),
                            (line("../secret.json"), "not a path inside"), (line("x.json@c1"), "not a path inside")):
            with self.subTest(words):
                r = self.append(text)
                self.assertEqual(r.returncode, 1)
                self.assertIn(words, r.stderr)
                self.assertEqual(self.history(), OLD)


if __name__ == "__main__":
    unittest.main()
