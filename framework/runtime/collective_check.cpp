#include "framework/runtime/collective_check.h"

#include <cstring>

#include "framework/core/error.h"
#include "framework/core/fnv1a.h"

namespace tr {

std::string CollectiveSig::str() const {
  return cat(graph_name(gid), "/", range_op_name(op), "(", elems, " ", dtype_name(dtype), ")");
}

uint64_t hash_sequence(const std::vector<CollectiveSig>& seq) {
  Fnv1a f;  // over the fields
  f.u64(seq.size());
  for (const CollectiveSig& s : seq) {
    f.u64(static_cast<uint64_t>(s.gid));
    f.u64(static_cast<uint64_t>(s.op));
    f.u64(static_cast<uint64_t>(s.elems));
    f.u64(static_cast<uint64_t>(s.dtype));
  }
  return f.h;
}

void verify_collective_sequences(const std::vector<std::vector<CollectiveSig>>& seqs) {
  if (seqs.size() < 2) return;
  const uint64_t h0 = hash_sequence(seqs[0]);
  for (size_t r = 1; r < seqs.size(); ++r) {
    if (hash_sequence(seqs[r]) == h0) continue;
    const auto& a = seqs[0];
    const auto& b = seqs[r];
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    const std::string ra = i < a.size() ? a[i].str() : "(end)";
    const std::string rb = i < b.size() ? b[i].str() : "(end)";
    throw Error(cat("collective sequence mismatch: rank ", r, " differs from rank 0 at collective #", i,
                    ": rank 0 has ", ra, ", rank ", r, " has ", rb, " (", a.size(), " vs ", b.size(), " collectives)"));
  }
}

void verify_collective_sequences(const std::vector<CollectiveSig>& mine, World& world, int local_ranks,
                                 std::chrono::milliseconds timeout) {
  // Four int64 per collective: graph, op, element count, dtype.
  std::vector<int64_t> words;
  for (const CollectiveSig& s : mine)
    for (int64_t w : {int64_t(s.gid), int64_t(s.op), s.elems, int64_t(s.dtype)}) words.push_back(w);
  const std::string bytes(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int64_t));
  const auto all = world.allgather_strings(bytes, "the collective sequences", timeout);
  std::vector<std::vector<CollectiveSig>> seqs;
  for (const std::string& b : all) {
    std::vector<int64_t> w(b.size() / sizeof(int64_t));
    std::memcpy(w.data(), b.data(), w.size() * sizeof(int64_t));
    std::vector<CollectiveSig> seq;
    for (size_t i = 0; i + 3 < w.size(); i += 4)
      seq.push_back(
          {static_cast<GraphId>(w[i]), static_cast<RangeOp>(w[i + 1]), w[i + 2], static_cast<DType>(w[i + 3])});
    for (int l = 0; l < local_ranks; ++l) seqs.push_back(seq);  // process p's ranks p*L .. p*L + L-1
  }
  verify_collective_sequences(seqs);
}

}  // namespace tr
