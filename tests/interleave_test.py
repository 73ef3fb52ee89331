#!/usr/bin/env python3
"""ci/interleave.py with stand-in commands: a small script that plays tr-bench
(A) or the peer (B), logs its letter, and writes a report holding the step time
given for its round. No GPU, no torch: ci/test.sh runs it with a plain python3.

  python3 tests/interleave_test.py [-v]
"""
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(ROOT, "ci", "interleave.py")
TR_CASE = "model=cnn,mode=full-capture,batch=256"
PEER_CASE = "torch_step/model:cnn/mode:full-capture/batch:256"
FIGURE = "cnn amp b256 full capture vs PyTorch whole-step graph (ms)"

# STANDIN KIND LOG TIMES --json PATH [--fail]: KIND tr or tta plays tr-bench (a
# bench or a tta report), peer, torch_tta or llmc the peer; appends A (tr) or B (peer) to LOG;
# its round is how many of its letter LOG then holds; writes a report whose case
# takes TIMES[round - 1] ms (from the first again after the last: a second
# driver call). The tr report also holds what must not be read: the case's
# repetitions and mean, the same case at another batch, variant and rank count,
# so only the right median gives the expected numbers.
STANDIN = r'''
import json, sys
kind, log, times = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split(",")]
path = sys.argv[sys.argv.index("--json") + 1]
letter = "A" if kind in ("tr", "tta") else "B"
with open(log, "a") as f:
    f.write(letter + "\n")
if "--fail" in sys.argv:
    sys.exit(3)
with open(log) as f:
    r = f.read().split().count(letter)
ms = times[(r - 1) % len(times)]
def entry(agg, t, batch=256, variant="train_base", ranks=1):
    e = {"run_type": "aggregate" if agg else "iteration", "real_time": t, "time_unit": "ms", "model": "cnn",
         "mode": "full-capture", "variant": variant, "ranks": ranks, "batch": batch}
    if agg:
        e["aggregate_name"] = agg
        e["throttled_repetitions"] = 1 if (agg == "median" and batch == 256 and r == 2) else 0
        e["energy_j_per_step"], e["device_memory_peak_bytes"] = 0.25 * r, 1000 + r
    return e
if kind == "tta":  # tr-bench tta: one model, seconds; "short" leaves a seed short of the target
    reached = 4 if "--short" in sys.argv else 5
    report = {"context": {"git_commit": f"commit-call{r}", "device_name": "Stand-in GPU"}, "benchmarks": [],
              "tta": {"model": "cnn", "summary": {"runs": 5, "reached": reached,
                                                  "time_to_target_s": {"mean": ms, "median": 9 * ms}},
                      "runs": [{"energy_j": 100.0, "device_memory_peak_bytes": 10},
                               {"energy_j": 300.0, "device_memory_peak_bytes": 30}]}}
elif kind == "torch_tta":
    report = {"context": {}, "runs": [{"seed": 1, "energy_j": 400.0}], "device_memory": {"max_memory_reserved": 50},
              "summary": {"runs": 5, "reached": 5, "time_to_target": {"mean": ms, "min": ms / 9}}}
elif kind == "llmc":
    report = {"peer": "llm.c train_gpt2cu", "gpu": "Stand-in GPU", "results": [
        {"batch": 1, "status": "ok", "median_ms": 50.0},
        {"batch": 4, "status": "failed" if "--oom" in sys.argv else "ok", "median_ms": ms, "mean_ms": 7 * ms,
         "device_memory_used_max_bytes": 70}]}
elif kind == "tr":
    report = {"context": {"git_commit": f"commit-call{r}", "device_name": "Stand-in GPU"},
              "benchmarks": [entry(None, 9 * ms), entry("mean", 7 * ms), entry("median", ms),
                             entry("median", 5 * ms, batch=64), entry("median", 5 * ms, variant="train_last"),
                             entry("median", 5 * ms, ranks=2)]}
else:
    report = {"context": {"device_name": "Stand-in GPU", "torch_version": f"torch-call{r}"},
              "benchmarks": [{"name": "torch_step/model:cnn/mode:eager/batch:256", "real_time": 50.0},
                             {"name": "@PEER_CASE@", "real_time": ms, "time_unit": "ms", "energy_j_per_step": 0.5,
                              "max_memory_reserved": 2000 + r, "device_memory_used_bytes": "not a number"}]}
with open(path, "w") as f:
    json.dump(report, f)
'''.replace("@PEER_CASE@", PEER_CASE)

# The times of the main case. The peer drifts (1, 2, 4 ms, as a machine that
# slows down between rounds), and tr's per-round ratio is e^-0.1, e^0, e^0.1.
# By hand:
#   tr = 0.904837, 2, 4.420684; mean(tr) = 7.325521 / 3 = 2.441840; mean(peer) = 7 / 3 = 2.333333
#   R = mean(tr) / mean(peer) = 7.325521 / 7 = 1.046503
#   sd(peer) = sqrt(((1 - 7/3)^2 + (2 - 7/3)^2 + (4 - 7/3)^2) / 2) = sqrt(42 / 18) = 1.527525
#   d = -0.1, 0, 0.1: mean(d) = 0, sd(d) = sqrt((0.01 + 0 + 0.01) / 2) = 0.1
#   t_{0.975, 2} = 4.3027; half-width = 4.3027 * 0.1 / sqrt(3) = 0.248417
#   interval = exp(-0.248417) .. exp(0.248417) = 0.780035 .. 1.281994
# The drift moves R away from 1 but not the interval, which pairs each round.
PEER_MS = [1.0, 2.0, 4.0]
TR_MS = [0.9048374180359595, 2.0, 4.420683672302591]  # PEER_MS times e^-0.1, e^0, e^0.1


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_driver():
    spec = importlib.util.spec_from_file_location("interleave", DRIVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DriverCase(unittest.TestCase):
    """A temporary folder, the stand-in, and the driver run on it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.standin = os.path.join(self.dir, "standin.py")
        with open(self.standin, "w") as f:
            f.write(STANDIN)
        self.log = os.path.join(self.dir, "calls.log")
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def command(self, kind, times, *extra):
        args = [sys.executable, self.standin, kind, self.log, ",".join(map(str, times)), *extra]
        return " ".join(map(shlex.quote, args)) + " --json {json}"

    def drive(self, rounds=3, tr=None, peer=None, tr_case=TR_CASE, peer_case=PEER_CASE, extra=()):
        args = [sys.executable, DRIVER, "--rounds", str(rounds), "--out", self.out,
                "--tr", tr or self.command("tr", TR_MS), "--peer", peer or self.command("peer", PEER_MS),
                *(("--tr-case", tr_case) if tr_case else ()), "--peer-case", peer_case, "--figure", FIGURE, *extra]
        return subprocess.run(args, capture_output=True, text=True, timeout=120)

    def calls(self):
        return read(self.log).split() if os.path.exists(self.log) else []

    def assert_one_line_error(self, r, rc, *words):
        self.assertEqual(r.returncode, rc, r.stdout + r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("interleave: error: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])


class InterleaveTest(DriverCase):
    def test_runs_alternate_and_the_interval_pairs_the_rounds(self):
        r = self.drive()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), ["A", "B"] * 3)
        res = json.loads(read(os.path.join(self.out, "interleave.json")))
        self.assertEqual([x["tr"] for x in res["rounds"]], TR_MS)
        self.assertEqual([x["peer"] for x in res["rounds"]], PEER_MS)
        self.assertEqual([x["tr_throttled_repetitions"] for x in res["rounds"]], [0, 1, 0])  # the case's own
        # Each side's energy and memory per round, where its row has them as numbers; the peer's context.
        self.assertEqual([x["tr_energy_j_per_step"] for x in res["rounds"]], [0.25, 0.5, 0.75])
        self.assertEqual([x["tr_device_memory_peak_bytes"] for x in res["rounds"]], [1001, 1002, 1003])
        self.assertEqual([x["peer_max_memory_reserved"] for x in res["rounds"]], [2001, 2002, 2003])
        self.assertEqual(res["rounds"][0]["peer_energy_j_per_step"], 0.5)
        self.assertNotIn("peer_device_memory_used_bytes", res["rounds"][0])
        self.assertEqual(res["peer_context"]["torch_version"], "torch-call1")
        self.assertEqual(res["unit"], "ms")
        self.assertAlmostEqual(res["tr"]["mean"], 2.441840, places=6)
        self.assertAlmostEqual(res["peer"]["mean"], 2.333333, places=6)
        self.assertAlmostEqual(res["peer"]["std"], 1.527525, places=6)
        self.assertAlmostEqual(res["ratio"], 1.046503, places=6)
        self.assertAlmostEqual(res["log_ratio"]["mean"], 0.0, places=9)
        self.assertAlmostEqual(res["log_ratio"]["sd"], 0.1, places=9)
        self.assertEqual(res["t_quantile"], 4.3027)
        self.assertAlmostEqual(res["ci_low"], 0.780035, places=6)
        self.assertAlmostEqual(res["ci_high"], 1.281994, places=6)
        self.assertEqual(res["figure"], FIGURE)
        self.assertIn("--json {json}", res["commands"]["tr"])  # as given, not one round's path
        self.assertIn("--json {json}", res["commands"]["peer"])
        self.assertEqual(res["context"]["git_commit"], "commit-call1")  # the first round's
        self.assertRegex(res["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertTrue(os.path.exists(os.path.join(self.out, "tr_round3.json")))
        self.assertTrue(os.path.exists(os.path.join(self.out, "peer_round3.log")))
        for row in ("    1     0.9048     1.0000    0.905", "    3     4.4207     4.0000    1.105"):
            self.assertIn(row, r.stdout)  # each round printed: drift shows
        self.assertIn("tr/peer 1.047, 95 % interval 0.780 .. 1.282", r.stdout)

    def test_the_quantile_is_students_t_then_normal(self):
        driver = load_driver()
        self.assertEqual(driver.summary([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0])["t_quantile"], 3.1824)
        self.assertEqual(driver.summary([1.0 + i for i in range(31)], [1.0] * 31)["t_quantile"], 2.0423)
        self.assertEqual(driver.summary([1.0 + i for i in range(32)], [1.0] * 32)["t_quantile"], 1.96)

    def test_fewer_than_three_rounds_are_refused(self):
        r = self.drive(rounds=2)
        self.assert_one_line_error(r, 2, "--rounds 2")
        self.assertEqual(self.calls(), [])

    def test_bad_input_is_one_line_and_exit_2(self):
        cases = {"no {json}": dict(tr="true"), "not KEY=VALUE": dict(tr_case="model=cnn,batch"),
                 "given twice": dict(tr_case="batch=64,batch=256"), "rounds": dict(rounds="three")}
        for words, kw in cases.items():
            with self.subTest(words):
                self.assert_one_line_error(self.drive(**kw), 2)
        self.assertEqual(self.calls(), [])

    def test_a_failing_command_stops_the_rounds_and_is_named(self):
        peer = self.command("peer", PEER_MS, "--fail")
        r = self.drive(peer=peer)
        self.assert_one_line_error(r, 1, "round 1", "peer command exited 3", self.standin,
                                   os.path.join(self.out, "peer_round1.json"))
        self.assertEqual(self.calls(), ["A", "B"])

    def test_a_missing_case_names_the_file(self):
        r = self.drive(tr_case="model=cnn,mode=full-capture,batch=512")
        self.assert_one_line_error(r, 1, os.path.join(self.out, "tr_round1.json"), "batch=512")
        r = self.drive(peer_case="torch_step/model:cnn/mode:full-capture/batch:512")
        self.assert_one_line_error(r, 1, os.path.join(self.out, "peer_round1.json"), "batch:512")

    def test_a_run_that_writes_no_report_fails_even_after_an_earlier_one_did(self):
        self.assertEqual(self.drive().returncode, 0)
        r = self.drive(tr="true {json}")  # exits 0, writes nothing; round 1's old report must not count
        self.assert_one_line_error(r, 1, os.path.join(self.out, "tr_round1.json"), "cannot read the report")

    def test_history_gets_one_json_line_per_run(self):
        history = os.path.join(self.dir, "history.jsonl")
        for _ in range(2):
            self.assertEqual(self.drive(extra=("--history", history)).returncode, 0)
        lines = read(history).splitlines()
        self.assertEqual(len(lines), 2)
        # Each line names its run's first tr report: the stand-in's first call, then its fourth.
        for line, commit in zip(lines, ("commit-call1", "commit-call4")):
            h = json.loads(line)
            self.assertEqual(list(h), ["date", "commit", "machine", "figure", "tr", "peer", "ratio", "ci_low",
                                       "ci_high", "rounds", "source"])
            self.assertEqual((h["commit"], h["machine"], h["figure"], h["rounds"]), (commit, "Stand-in GPU", FIGURE, 3))
            self.assertAlmostEqual(h["tr"], 2.441840, places=6)  # the mean step times, in ms
            self.assertAlmostEqual(h["peer"], 2.333333, places=6)
            self.assertAlmostEqual(h["ratio"], 1.046503, places=6)
            self.assertAlmostEqual(h["ci_low"], 0.780035, places=6)
            self.assertAlmostEqual(h["ci_high"], 1.281994, places=6)
            self.assertEqual(h["source"], os.path.join("out", "interleave.json"))  # beside the history file


class OtherReportsTest(DriverCase):
    """The time-to-accuracy reports (seconds) and llm.c's (ms per micro-batch)."""

    def test_tta_against_the_torch_tta_peer_in_seconds(self):
        r = self.drive(tr=self.command("tta", TR_MS), peer=self.command("torch_tta", PEER_MS), tr_case=None,
                       peer_case="torch_tta", extra=("--tr-tta", "cnn"))
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(read(os.path.join(self.out, "interleave.json")))
        self.assertEqual(res["unit"], "s")
        self.assertEqual([x["tr"] for x in res["rounds"]], TR_MS)  # the means, not the medians
        self.assertEqual([x["peer"] for x in res["rounds"]], PEER_MS)
        self.assertAlmostEqual(res["ratio"], 1.046503, places=6)
        self.assertEqual(res["cases"]["tr"], {"tta": "cnn"})
        self.assertIn("tr_s", r.stdout)
        # Each side's runs: the mean energy over the seeds' epochs, and the memory.
        self.assertEqual({k: v for k, v in res["rounds"][0].items() if k.startswith(("tr_", "peer_"))},
                         {"tr_energy_j": 200.0, "tr_device_memory_peak_bytes": 20, "peer_energy_j": 400.0,
                          "peer_max_memory_reserved": 50})

    def test_a_seed_short_of_the_target_gives_no_time(self):
        r = self.drive(tr=self.command("tta", TR_MS, "--short"), peer=self.command("torch_tta", PEER_MS),
                       tr_case=None, peer_case="torch_tta", extra=("--tr-tta", "cnn"))
        self.assert_one_line_error(r, 1, "4 of 5 seeds reached the target")

    def test_the_tta_model_must_match(self):
        r = self.drive(tr=self.command("tta", TR_MS), peer=self.command("torch_tta", PEER_MS), tr_case=None,
                       peer_case="torch_tta", extra=("--tr-tta", "mlp"))
        self.assert_one_line_error(r, 1, "no tta block of model mlp")

    def test_llmc_gives_the_median_of_one_micro_batch(self):
        r = self.drive(peer=self.command("llmc", PEER_MS), peer_case="llmc/batch:4")
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(read(os.path.join(self.out, "interleave.json")))
        self.assertEqual([x["peer"] for x in res["rounds"]], PEER_MS)
        self.assertEqual(res["peer_context"], {"peer": "llm.c train_gpt2cu", "gpu": "Stand-in GPU"})
        self.assertEqual(res["rounds"][0]["peer_device_memory_used_max_bytes"], 70)
        r = self.drive(peer=self.command("llmc", PEER_MS, "--oom"), peer_case="llmc/batch:4")
        self.assert_one_line_error(r, 1, "micro-batch 4 did not run once and well")
        r = self.drive(peer=self.command("llmc", PEER_MS), peer_case="llmc/batch:16")
        self.assert_one_line_error(r, 1, "micro-batch 16")

    def test_units_must_agree_and_one_tr_case_is_given(self):
        r = self.drive(tr_case=None, extra=("--tr-tta", "cnn"))  # seconds against the peer's ms
        self.assert_one_line_error(r, 2, "ratio would mean nothing")
        r = self.drive(extra=("--tr-tta", "cnn"))  # both --tr-case and --tr-tta
        self.assert_one_line_error(r, 2, "not allowed with")
        r = self.drive(tr_case=None)  # neither
        self.assert_one_line_error(r, 2, "one of the arguments")
        self.assertEqual(self.calls(), [])


if __name__ == "__main__":
    unittest.main()
