#!/usr/bin/env python3
"""peers/gpu_samples.py, the peers' machine counters, without a GPU: they
mirror tr-bench's (tests/machine_state_test.cpp holds the same cases), and
without NVML the sampler says why instead of inventing a sample.

  python3 tests/gpu_samples_test.py [-v]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PEERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "peers")
sys.path.insert(0, PEERS)
import gpu_samples  # noqa: E402


def rep(joules, sm, temp, reasons, seconds=2.5, steps=5):  # 2.5 s: past MIN_ENERGY_WINDOW_S
    end = {"energy_mj": 0.0, "sm_mhz": sm, "mem_mhz": 2619, "temperature_c": temp, "reasons": reasons}
    return {"energy_j": joules, "seconds": seconds, "steps": steps, "end": end}


class GpuSamplesTest(unittest.TestCase):
    def test_repetitions_become_counters(self):
        # 3 repetitions of 5 steps at batch 8; the second ran power-capped while idle-flagged.
        reps = [rep(10, 1980, 40, 0), rep(12, 1755, 44, 0x4 | 0x1), rep(11, 1980, 42, 0x1)]
        k = gpu_samples.counters(reps, 8)
        self.assertAlmostEqual(k["energy_j_per_step"], 11.0 / 5)
        self.assertAlmostEqual(k["power_w"], 11.0 / 2.5)
        self.assertAlmostEqual(k["samples_per_joule"], 8.0 * 5 * 3 / 33)
        self.assertNotIn("tokens_per_joule", k)
        self.assertEqual((k["sm_clock_mhz_min"], k["mem_clock_mhz_min"], k["temperature_c_max"]), (1755, 2619, 44))
        self.assertEqual((k["throttled_repetitions"], k["throttle_reasons"]), (1, 0x4))
        self.assertAlmostEqual(gpu_samples.counters(reps, 8, 1024)["tokens_per_joule"], 8.0 * 5 * 3 * 1024 / 33)
        self.assertEqual(gpu_samples.counters([], 8), {})

    def test_short_or_still_windows_give_no_energy(self):
        still = gpu_samples.counters([rep(0, 1980, 40, 0)], 8)
        self.assertNotIn("energy_j_per_step", still)
        self.assertEqual(still["sm_clock_mhz_min"], 1980)
        mixed = [rep(10, 1980, 40, 0), rep(12, 1980, 40, 0, seconds=gpu_samples.MIN_ENERGY_WINDOW_S / 2)]
        self.assertAlmostEqual(gpu_samples.counters(mixed, 8)["energy_j_per_step"], 10.0 / 5)

    def test_an_energy_window_stands_in_for_short_repetitions(self):
        short = rep(0.02, 1980, 40, 0, seconds=0.015, steps=30)
        window = rep(1000, 1500, 50, 0x4, seconds=2.56, steps=5000)
        k = gpu_samples.counters([short, short], 256, energy_window=window)
        self.assertAlmostEqual(k["energy_j_per_step"], 1000.0 / 5000)
        self.assertAlmostEqual(k["power_w"], 1000 / 2.56)
        self.assertAlmostEqual(k["samples_per_joule"], 256.0 * 5000 / 1000)
        self.assertEqual(k["energy_window_steps"], 5000)
        # Its clocks and throttling are not a repetition's.
        self.assertEqual((k["sm_clock_mhz_min"], k["throttled_repetitions"]), (1980, 0))
        own = gpu_samples.counters([rep(300, 1980, 40, 0, steps=30)], 256, energy_window=window)
        self.assertAlmostEqual(own["energy_j_per_step"], 10.0)
        self.assertNotIn("energy_window_steps", own)
        window["energy_j"] = 0
        self.assertNotIn("energy_j_per_step", gpu_samples.counters([short], 256, energy_window=window))

    def test_window_length(self):
        self.assertEqual(gpu_samples.energy_window_steps(0.5), 5000)
        self.assertEqual(gpu_samples.energy_window_steps(8000), 1)
        self.assertEqual(gpu_samples.energy_window_steps(0), 1)

    def test_a_watched_window_interpolates_the_counter_at_its_ends(self):
        # 300 W for 4 s, sampled every 0.4 s; the window 1.0 .. 3.4 s holds 6 steps of batch 4 x 1024.
        samples = [{"t": i * 0.4, "energy_mj": 300e3 * i * 0.4, "sm_mhz": 1980 - (i == 5) * 200, "mem_mhz": 2619,
                    "temperature_c": 40 + i, "reasons": 0x4 if i == 9 else 0x1, "memory_used_bytes": 1000 + i}
                   for i in range(11)]
        k = gpu_samples.watched_window(samples, 1.0, 3.4, 6, 4, 1024)
        self.assertAlmostEqual(k["energy_j_per_step"], 2.4 * 300 / 6)
        self.assertAlmostEqual(k["power_w"], 300)
        self.assertAlmostEqual(k["tokens_per_joule"], 6 * 4 * 1024 / 720)
        self.assertEqual((k["sm_clock_mhz_min"], k["temperature_c_max"]), (1780, 48))  # samples 1.2 .. 3.2 s
        self.assertEqual(k["throttled_repetitions"], 0)  # the power cap at 3.6 s is outside
        self.assertEqual(k["device_memory_used_max_bytes"], 1010)  # over the whole run
        self.assertEqual(gpu_samples.watched_window(samples, 1.0, 3.8, 7, 4)["throttled_repetitions"], 1)
        # Too short a window gives no energy; no samples give nothing at all.
        self.assertNotIn("energy_j_per_step", gpu_samples.watched_window(samples, 1.0, 2.2, 3, 4))
        self.assertEqual(gpu_samples.watched_window([], 1.0, 3.4, 6, 4), {})

    def test_without_nvml_the_sampler_says_why(self):
        s = gpu_samples.Sampler("00000000:00:00.0")
        if s.available():
            self.skipTest("libnvidia-ml.so.1 is present here")
        self.assertIn("libnvidia-ml.so.1", s.why_not)
        self.assertIsNone(s.sample())


class GpuWatchTest(unittest.TestCase):
    def test_the_command_passes_through_with_its_lines_timed_and_its_status(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "watch.json")
            r = subprocess.run([sys.executable, os.path.join(PEERS, "gpu_watch.py"), "--out", out, "--",
                                "sh", "-c", "echo one; echo two >&2; sleep 0.1; echo three; exit 3"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 3)
            self.assertEqual(r.stdout.split(), ["one", "two", "three"])
            w = json.load(open(out))
            self.assertEqual(w["exit_code"], 3)
            self.assertEqual(len(w["line_times"]), 3)
            self.assertGreaterEqual(w["line_times"][2] - w["line_times"][1], 0.1)
            if not w["samples"]:  # no GPU here: the reason is given, not an empty silence
                self.assertTrue(w["why_not"])

    def test_nothing_to_run_is_a_usage_error(self):
        r = subprocess.run([sys.executable, os.path.join(PEERS, "gpu_watch.py"), "--out", "/dev/null"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)


if __name__ == "__main__":
    unittest.main()
