#!/usr/bin/env python3
"""peers/gpu_samples.py, the peers' machine counters, without a GPU: they
mirror tr-bench's (tests/machine_state_test.cpp holds the same cases), and
without NVML the sampler says why instead of inventing a sample.

  python3 tests/gpu_samples_test.py [-v]
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "peers"))
import gpu_samples  # noqa: E402


def rep(joules, sm, temp, reasons, seconds=1.0, steps=5):
    end = {"energy_mj": 0.0, "sm_mhz": sm, "mem_mhz": 2619, "temperature_c": temp, "reasons": reasons}
    return {"energy_j": joules, "seconds": seconds, "steps": steps, "end": end}


class GpuSamplesTest(unittest.TestCase):
    def test_repetitions_become_counters(self):
        # 3 repetitions of 5 steps at batch 8; the second ran power-capped while idle-flagged.
        reps = [rep(10, 1980, 40, 0), rep(12, 1755, 44, 0x4 | 0x1), rep(11, 1980, 42, 0x1)]
        k = gpu_samples.counters(reps, 8)
        self.assertAlmostEqual(k["energy_j_per_step"], 11.0 / 5)
        self.assertAlmostEqual(k["power_w"], 11.0)
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
        window = rep(250, 1500, 50, 0x4, seconds=0.64, steps=1250)
        k = gpu_samples.counters([short, short], 256, energy_window=window)
        self.assertAlmostEqual(k["energy_j_per_step"], 250.0 / 1250)
        self.assertAlmostEqual(k["power_w"], 250 / 0.64)
        self.assertAlmostEqual(k["samples_per_joule"], 256.0 * 1250 / 250)
        self.assertEqual(k["energy_window_steps"], 1250)
        # Its clocks and throttling are not a repetition's.
        self.assertEqual((k["sm_clock_mhz_min"], k["throttled_repetitions"]), (1980, 0))
        own = gpu_samples.counters([rep(300, 1980, 40, 0, steps=30)], 256, energy_window=window)
        self.assertAlmostEqual(own["energy_j_per_step"], 10.0)
        self.assertNotIn("energy_window_steps", own)
        window["energy_j"] = 0
        self.assertNotIn("energy_j_per_step", gpu_samples.counters([short], 256, energy_window=window))

    def test_window_length(self):
        self.assertEqual(gpu_samples.energy_window_steps(0.5), 1250)
        self.assertEqual(gpu_samples.energy_window_steps(2000), 1)
        self.assertEqual(gpu_samples.energy_window_steps(0), 1)

    def test_without_nvml_the_sampler_says_why(self):
        s = gpu_samples.Sampler("00000000:00:00.0")
        if s.available():
            self.skipTest("libnvidia-ml.so.1 is present here")
        self.assertIn("libnvidia-ml.so.1", s.why_not)
        self.assertIsNone(s.sample())


if __name__ == "__main__":
    unittest.main()
