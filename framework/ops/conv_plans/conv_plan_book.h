#pragma once
// Note [convolution plan books]
// --cudnn-benchmark times cuDNN's engine configs for each convolution key
// (Note [timed convolution plans], conv_plan_cache_cuda.h). Timing is noisy:
// two processes may keep different plans for the same key and then train to
// different bits and run at different speeds. A ConvPlanBook holds one choice
// per key for every ConvPlanCache of a process (all its ranks, and all the
// sessions of a tr-bench run), and `--conv-plans FILE` keeps it on disk
// (harness/lib/cli/conv_plans_file.h), so that later processes run the same plans.
// How the caches use it:
//   Observe  the heuristic's plans (neither flag): a cache records what the
//            heuristic chose; the book decides nothing. Its digest names the
//            plans in the report.
//   Record   --cudnn-benchmark, with or without --conv-plans FILE: a key in the
//            book takes its recorded choice; a key that is not is timed and
//            recorded. The first rank to record a key wins, and the others take
//            its choice. FILE, if named, is then rewritten.
//   Replay   --conv-plans FILE without --cudnn-benchmark: a key in the book
//            takes its recorded choice; a key that is not is an error that
//            names it, so a replayed run never times anything.
// Under a launcher (mpirun, srun) each process holds a book of its own. In
// Record mode the first process prepares its plans first and the others take
// its book before they prepare theirs (share_first_process_plans), so every
// process runs the first one's timed plans, as rank threads of one process do.
// A choice is the algorithm the legacy heuristic picked, plus the engine
// candidate that replaced it, if one did. The candidate is its position in
// conv_engine_plans' list, stored with cuDNN's global engine index so that a
// replay can check it. The heuristic and the list depend on the GPU, the cuDNN
// version and whether determinism was asked for. So a Record or Replay book is
// bound to the place it was made (ConvPlanPlace) and refuses any other.
// Host-only and thread-safe: rank threads share one book.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "framework/ops/conv_plans/conv_key.h"

namespace tr {

class World;  // framework/comm/world.h

struct ConvPlanChoice {
  int legacy_algo = -1;    // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t the heuristic chose
  int candidate = -1;      // the engine candidate that replaced it; -1: the legacy plan runs
  int64_t engine = -1;     // cuDNN's global engine index of that candidate (-1 with none)
  float time_ms = -1.f;    // timed: the kept plan's ms per execution; -1 when not timed
  float legacy_ms = -1.f;  // timed: the legacy plan's
  // The same plan (the times aside).
  bool same_plan(const ConvPlanChoice& o) const {
    return legacy_algo == o.legacy_algo && candidate == o.candidate && engine == o.engine;
  }
  std::string str() const;
};

// Where a book's choices hold: the GPU, the cuDNN version, the determinism.
struct ConvPlanPlace {
  std::string device;  // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int64_t cudnn_version = 0;  // cudnnGetVersion(), e.g. 91900
  bool deterministic = true;
  bool operator==(const ConvPlanPlace&) const = default;
  std::string str() const;
};

enum class ConvPlanUse : uint8_t { Observe, Record, Replay };
std::string_view conv_plan_use_name(ConvPlanUse u);

class ConvPlanBook {
 public:
  // source: the file it comes from or goes to, for messages ("" for none).
  explicit ConvPlanBook(ConvPlanUse use, std::string source = "");
  ConvPlanBook(const ConvPlanBook&) = delete;
  ConvPlanBook& operator=(const ConvPlanBook&) = delete;

  ConvPlanUse use() const { return use_; }
  const std::string& source() const { return source_; }
  // Whether a recorded choice decides a key's plan (Record, Replay).
  bool decides() const { return use_ != ConvPlanUse::Observe; }

  // A cache binds the book to the place it runs in before it uses or records
  // anything. The first place binds an unbound book. After that, in Record and
  // Replay, another place is a UserError naming both places and the source.
  // Observe just keeps the first place.
  void bind(const ConvPlanPlace& here);
  std::optional<ConvPlanPlace> place() const;

  // The recorded choice for `key`, if any. A found key counts as used.
  std::optional<ConvPlanChoice> find(const ConvKey& key);
  // Records `choice` for `key` unless the key already has one, and returns the
  // one that is kept. The key counts as used.
  ConvPlanChoice record(const ConvKey& key, const ConvPlanChoice& choice);
  // For the file's reader: an entry that is not yet used. A key given twice
  // is a UserError.
  void add_loaded(const ConvKey& key, const ConvPlanChoice& choice);

  // The place and every entry as bytes, for another process's adopt().
  std::string pack() const;
  // Binds to the packed place (a UserError where it differs) and takes every
  // packed entry, in place of this book's own for the same key; not yet used.
  void adopt(const std::string& packed);

  // Every entry, in key order.
  std::vector<std::pair<ConvKey, ConvPlanChoice>> entries() const;
  size_t size() const;
  size_t used() const;
  // Choices recorded since the book was made, loaded or last saved: whether
  // its file is worth rewriting. mark_saved() says it was just written.
  size_t unsaved() const;
  void mark_saved();
  // FNV-1a over the used keys and their plans (not their times), in key order,
  // as 16 hex digits; "" when no key was used. Two runs with the same digest
  // ran the same convolution plans.
  std::string digest() const;

 private:
  const ConvPlanUse use_;
  const std::string source_;
  mutable std::mutex mu_;
  std::optional<ConvPlanPlace> place_;
  std::map<ConvKey, ConvPlanChoice> choices_;
  std::set<ConvKey> used_;
  size_t unsaved_ = 0;
};

// Runs `prepare` (which makes this process's plans, recording into `book`)
// so that every process of `world` ends with the first process's choices:
// process 0 prepares first, then its book goes to the others, which adopt it
// and prepare. Each waits at most `timeout` for process 0's book.
void share_first_process_plans(ConvPlanBook& book, World& world, std::chrono::milliseconds timeout,
                               const std::function<void()>& prepare);

}  // namespace tr
