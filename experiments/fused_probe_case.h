#pragma once
// What the two fused-convolution probes (conv_bn_fused_probe.cu,
// conv_bn_bwd_fused_probe.cu) share around their cases: which paths run,
// which path checks which, the counters of a launch's geometry, and the end
// of a case (fail on a mismatch, else time the path's chain), and each case's
// check made once.
//   path 0  tr's chain today      path 1  the fused kernel + finalize_sums
//   path 2  cuDNN alone           path 3  the fused kernel's convolution alone
//   path 4  the fused kernel alone, sums in fixed point
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/conv3x3_fused_cuda.h"
#include "experiments/cudnn_probe_env.h"
#include "experiments/probe_check.h"

namespace tr::probe {

constexpr int kChainsPerGraph = 8;

// The check runs the reference and the fused path of a case's pair.
inline int reference_path(int path) { return path == 2 || path == 3 ? 2 : 0; }
inline int fused_path(int path) { return path == 0 ? 1 : path == 2 ? 3 : path; }

// Args {shape, batch, path, minb}: paths 0 and 2 once, the fused paths with
// one and with two blocks per SM, at batch 256 and 1024.
inline void fused_probe_args(benchmark::internal::Benchmark* b, int shapes) {
  for (int shape = 0; shape < shapes; ++shape)
    for (int batch : {256, 1024})
      for (int path = 0; path < 5; ++path)
        for (int minb : {1, 2})
          if (minb == 1 || (path != 0 && path != 2)) b->Args({shape, batch, path, minb});
  b->ArgNames({"shape", "batch", "path", "minb"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

// What a case's check found: whether the fused path matches, and the
// counters that say by how much.
struct CheckResult {
  bool ok = false;
  std::vector<std::pair<std::string, double>> counters;
};

// check() the first time case `key` comes, its result every time after:
// Google Benchmark calls a case's function several times while it settles
// the iteration count, and the check's downloads and host loops (up to
// 100 MB a case) are most of a call's time.
inline const CheckResult& checked_once(const std::string& key, const std::function<CheckResult()>& check) {
  static std::map<std::string, CheckResult> done;
  auto it = done.find(key);
  if (it == done.end()) it = done.emplace(key, check()).first;
  return it->second;
}

// A case in the log: "HxHxC->K batch N path P, M block(s) per SM".
inline std::string case_key(const cuda::fused3x3::FusedShape& s, int path) {
  char key[128];
  std::snprintf(key, sizeof key, "%dx%dx%d->%d batch %d path %d, %d block(s) per SM", s.H, s.H, s.C, s.K, s.N, path,
                s.minb);
  return key;
}

// "[ tag ] <case_key>, R r, B blocks: matches|MISMATCH (detail)" for the log.
inline void print_case(const char* tag, const std::string& key, const cuda::fused3x3::FusedShape& s, bool ok,
                       const char* detail) {
  std::printf("[ %s ] %s, R %d, %u blocks: %s (%s)\n", tag, key.c_str(), s.R,
              s.row_blocks() * unsigned(s.K / cuda::fused3x3::kKT), ok ? "matches" : "MISMATCH", detail);
}

// The geometry's counters; then a mismatch fails the case, else chain(i)
// (i < kChainsPerGraph, i % 2 the fixed-point parity) is timed.
inline void finish_case(benchmark::State& state, const cuda::fused3x3::FusedShape& s, const CheckResult& check,
                        const cudnn_graph::ProbeEnv& pe, const std::function<void(int)>& chain) {
  for (const auto& [name, value] : check.counters) state.counters[name] = value;
  state.counters["rows_per_block"] = s.R;
  state.counters["blocks"] = double(s.row_blocks()) * (s.K / cuda::fused3x3::kKT);
  state.counters["smem_kb"] = double(s.smem()) / 1024;
  if (!check.ok) {
    state.SkipWithError("the fused kernel does not match the chain it replaces");
    return;
  }
  time_chains(state, pe.stream, pe.e0, pe.e1, kChainsPerGraph, chain);
}

}  // namespace tr::probe
