#pragma once
// `--conv-plans FILE` (tr-train, tr-bench): the convolution plan book of Note
// [convolution plan books] (framework/ops/conv_plans/conv_plan_book.h) on disk, so that
// timed plans can be replayed by later processes. The file is JSON:
//   {"format": "tr-conv-plans", "version": 1,
//    "place": {"device": "NVIDIA H200", "compute_capability": "9.0",
//              "cudnn_version": 91900, "deterministic": true},
//    "plans": [{"dir": "fwd", "dtype": "f16", "n": 256, "h": 28, "w": 28,
//               "c": 32, "k": 64, "r": 3, "stride": 1, "pad": 1,
//               "legacy_algo": 1, "candidate": 3, "engine": 67,
//               "ms": 0.0114, "legacy_ms": 0.0172}, ...]}
// "candidate" -1 (and "engine" -1) keeps the heuristic's legacy algorithm;
// "ms" and "legacy_ms" are -1 where nothing was timed. The plans are written in
// key order, so the same choices make the same file. Reading is strict: an
// unknown field, a missing one, a bad value or a key listed twice is a
// UserError that names the file and the entry.
#include <memory>
#include <string>
#include <string_view>

#include "framework/core/backend.h"
#include "framework/ops/conv_plans/conv_plan_book.h"

namespace tr {

class World;

// The book as the file's text (book.source() is not part of it).
std::string conv_plans_json(const ConvPlanBook& book);
// Adds the entries and the place of `text` to `book` (which names the file in
// every error); a UserError for anything that is not such a file.
void read_conv_plans_json(std::string_view text, ConvPlanBook& book);

// The book every convolution plan cache of a run shares (the CPU has none:
// null). Without `file`: Record with `benchmark`, else Observe. With `file`:
// Record with `benchmark` (reading the file first when it exists, and
// checking now that it can be written), else Replay, which needs the file.
std::shared_ptr<ConvPlanBook> open_conv_plans(const std::string& file, bool benchmark, Backend backend);

// One line for the tools: how the plans were chosen, how many shapes ran on
// cuDNN, and the digest, e.g. "convolution plans: replayed from p.json (21 in
// the file), 21 shape(s) on cuDNN, digest 1f0e...".
std::string conv_plans_summary(const ConvPlanBook& book);

// Writes the book to its file (atomically) when it has a file, recorded
// something since the last save, and this process is the world's first (or
// there is no world): under mpirun every process times its own keys, and only
// the first one's choices are kept.
void save_conv_plans(ConvPlanBook* book, const World* world);

}  // namespace tr
