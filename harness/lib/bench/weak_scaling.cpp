#include "harness/lib/bench/weak_scaling.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tr::bench {
namespace {

using Key = std::tuple<std::string, std::string, std::string, int64_t>;  // model, mode, variant, per-rank batch

Key key_of(const BenchCase& c) { return {c.model, c.mode, c.variant, c.batch / c.ranks}; }

}  // namespace

void add_weak_scaling(BenchReport& r) {
  std::map<Key, double> one_rank;  // samples/s of the 1-rank case
  for (const BenchCase& c : r.cases)
    if (c.ranks == 1 && c.counters.count("samples_per_second"))
      one_rank[key_of(c)] = c.counters.at("samples_per_second");
  std::set<Key> used;
  for (BenchCase& c : r.cases) {
    if (c.ranks <= 1 || c.batch % c.ranks != 0 || !c.counters.count("samples_per_second")) continue;
    const auto it = one_rank.find(key_of(c));
    if (it == one_rank.end() || it->second <= 0) continue;
    c.counters["weak_scaling_efficiency"] = c.counters.at("samples_per_second") / (c.ranks * it->second);
    used.insert(it->first);
  }
  for (BenchCase& c : r.cases)
    if (c.ranks == 1 && used.count(key_of(c))) c.counters["weak_scaling_efficiency"] = 1.0;
}

void print_weak_scaling(const BenchReport& r, std::FILE* out) {
  std::map<Key, std::map<int, double>> rows;
  std::vector<Key> order;  // rows in the order the run measured them
  std::set<int> ranks;
  for (const BenchCase& c : r.cases) {
    const auto it = c.counters.find("weak_scaling_efficiency");
    if (it == c.counters.end()) continue;
    if (!rows.count(key_of(c))) order.push_back(key_of(c));
    rows[key_of(c)][c.ranks] = it->second;
    ranks.insert(c.ranks);
  }
  if (rows.empty()) return;
  const char* unit = r.context.device_kind == "cuda" ? "gpus" : "ranks";
  std::fprintf(out, "weak scaling efficiency (samples/s at N %s / (N x samples/s at 1), same batch per %s):\n", unit,
               r.context.device_kind == "cuda" ? "GPU" : "rank");
  std::fprintf(out, "%-8s %-16s %-11s %9s", "model", "mode", "variant", "batch/N");
  for (int n : ranks)
    std::fprintf(out, " %7s", (std::to_string(n) + (r.context.device_kind == "cuda" ? "gpu" : "r")).c_str());
  std::fprintf(out, "\n");
  for (const Key& k : order) {
    const auto& by_ranks = rows.at(k);
    std::fprintf(out, "%-8s %-16s %-11s %9lld", std::get<0>(k).c_str(), std::get<1>(k).c_str(), std::get<2>(k).c_str(),
                 static_cast<long long>(std::get<3>(k)));
    for (int n : ranks) {
      const auto it = by_ranks.find(n);
      if (it == by_ranks.end()) {
        std::fprintf(out, " %7s", "-");
      } else {
        std::fprintf(out, " %7.3f", it->second);
      }
    }
    std::fprintf(out, "\n");
  }
}

}  // namespace tr::bench
