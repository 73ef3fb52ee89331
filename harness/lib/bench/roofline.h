#pragma once
// Note [roofline]: how far an op is from what the H200 can do. An op that
// does F floating-point operations and moves B bytes (every input read and
// every output written once) in t seconds achieves F/t FLOP/s and B/t bytes/s.
// The hardware bounds it by min(peak FLOP/s, (F/B) x peak bandwidth): compute-
// bound above the ridge point F/B = peak FLOP/s / peak bandwidth, memory-bound
// below. `of_roofline` is the achieved rate over that bound (1 = at the limit).
// Peaks of one H200 SXM: dense fp16 tensor cores 989 TFLOP/s, fp32 without
// tensor cores 67 TFLOP/s, HBM3e 4.8 TB/s, and 50 MB of L2.
//
// The HBM roofline bounds an op whose bytes come from HBM. A benchmark that
// replays an op whose inputs and outputs fit in L2 reads them from L2 (tr_bench_ops
// measured cnn's maxpool_fwd at b256, 32 MB, at 5.6 TB/s): such an op is
// `l2_resident`, and the fractions of HBM's bounds are not reported for it,
// since they would read above 1.
#include <map>
#include <optional>
#include <string>

#include "framework/core/dtype.h"

namespace tr::bench {

struct Peaks {
  double flops;     // FLOP/s
  double bytes;     // bytes/s (HBM)
  double l2_bytes;  // L2 capacity
};
Peaks h200_peaks(DType compute);  // f16: tensor cores; anything else: fp32 CUDA cores
// The peaks of the GPU CUDA names `device_name` (a substring match, as
// tensor_peak_flops in model_flops.h matches it) for a run computing in
// `compute`: 16-bit, the dense tensor peak (tensor_peak_flops); anything else,
// fp32 without tensor cores (tr's fp32 GEMMs and convolutions refuse TF32).
// nullopt for a GPU not in the table (roofline.cpp); tr-bench asks only on CUDA.
std::optional<Peaks> device_peaks(const std::string& device_name, DType compute);

struct Roofline {
  double tflops = 0;           // achieved TFLOP/s (0 when the op has no FLOP count)
  double gbps = 0;             // achieved GB/s
  double intensity = 0;        // FLOP per byte
  double of_peak_flops = 0;    // achieved / peak FLOP/s
  double of_peak_bytes = 0;    // achieved / peak bandwidth
  double of_roofline = 0;      // achieved / min(peak FLOP/s, intensity x peak bandwidth)
  bool compute_bound = false;  // intensity above the ridge point
  bool l2_resident = false;    // the bytes fit in L2: the of_* fractions do not apply
};
// flops may be 0 (a data-movement op): then the bound is the bandwidth alone.
Roofline roofline(double flops, double bytes, double seconds, const Peaks& p);

// As benchmark counters: flop, bytes, TFLOP/s, GB/s, intensity, compute_bound,
// l2_resident, and unless l2_resident: of_peak_flops, of_peak_bw, of_roofline.
std::map<std::string, double> roofline_counters(double flops, double bytes, const Roofline& r);

}  // namespace tr::bench
