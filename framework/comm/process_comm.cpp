#include "framework/comm/process_comm.h"

#include <algorithm>
#include <cstring>

#include "framework/core/error.h"

namespace tr {

ProcessComm::ProcessComm(World& world, int local_ranks, std::chrono::milliseconds watchdog)
    : world_(world),
      barrier_(local_ranks, watchdog),
      watchdog_(watchdog),
      first_rank_(world.process() * local_ranks),
      posted_(static_cast<size_t>(local_ranks)),
      posted_elems_(static_cast<size_t>(local_ranks)),
      calls_(static_cast<size_t>(local_ranks), 0) {}

void ProcessComm::allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void*) {
  TR_CHECK(dtype == DType::F32, "CPU all-reduce supports f32 buffers, got ", dtype_name(dtype));
  const int local = rank - first_rank_;
  const int L = barrier_.ranks();
  TR_CHECK(local >= 0 && local < L, "rank ", rank, " is not held by process ", world_.process());
  const std::string what = cat("all-reduce #", calls_[size_t(local)], " (", elems, " f32)");
  posted_[static_cast<size_t>(local)] = static_cast<float*>(data);
  posted_elems_[static_cast<size_t>(local)] = elems;
  barrier_.arrive_and_wait(local, what);  // every local rank posted
  if (local == 0) {
    try {
      for (int l = 1; l < L; ++l)
        TR_CHECK(posted_elems_[size_t(l)] == elems, "collective mismatch at ", what, ": rank ", first_rank_ + l,
                 " posted ", posted_elems_[size_t(l)], " elements, rank ", first_rank_, " posted ", elems);
      // Every process must post the same size: the element count rides along
      // as the first float pair of each block (checked by the owner).
      const int P = world_.processes();
      const int64_t chunk = (elems + P - 1) / P;
      const size_t block = size_t(2 + L * chunk);  // [elems as 2 floats][L x chunk values]
      send_.assign(block * size_t(P), 0.f);
      recv_.resize(send_.size());
      for (int q = 0; q < P; ++q) {
        float* b = send_.data() + size_t(q) * block;
        std::memcpy(b, &elems, sizeof elems);
        const int64_t lo = std::min(elems, chunk * q), hi = std::min(elems, lo + chunk);
        for (int l = 0; l < L; ++l)
          std::copy(posted_[size_t(l)] + lo, posted_[size_t(l)] + hi, b + 2 + l * chunk);
      }
      world_.alltoall(send_.data(), recv_.data(), block * sizeof(float), what, watchdog_);
      // This process's chunk: every element summed in global rank order
      // (process q's ranks are q*L .. q*L + L-1).
      const int me = world_.process();
      const int64_t lo = std::min(elems, chunk * me), n = std::min(elems, lo + chunk) - lo;
      mine_.assign(size_t(chunk), 0.f);
      for (int q = 0; q < P; ++q) {
        int64_t theirs = 0;
        std::memcpy(&theirs, recv_.data() + size_t(q) * block, sizeof theirs);
        TR_CHECK(theirs == elems, "collective mismatch at ", what, ": process ", q, " (rank ", q * L, ") posted ",
                 theirs, " elements, process ", me, " (rank ", first_rank_, ") posted ", elems);
      }
      const float scale = static_cast<float>(P * L);
      for (int64_t i = 0; i < n; ++i) {
        float s = recv_[2 + size_t(i)];  // process 0, local rank 0
        for (int q = 0; q < P; ++q)
          for (int l = (q == 0 ? 1 : 0); l < L; ++l) s += recv_[size_t(q) * block + 2 + size_t(l * chunk + i)];
        mine_[size_t(i)] = op == ReduceOp::Average ? s / scale : s;
      }
      const auto all = world_.allgather(mine_.data(), size_t(chunk) * sizeof(float), what + " (sums)", watchdog_);
      all_.resize(size_t(chunk * P));
      std::memcpy(all_.data(), all.data(), all.size());
    } catch (const std::exception& e) {
      barrier_.abort(e.what());  // release the other local ranks with the cause
      throw;
    }
  }
  barrier_.arrive_and_wait(local, what);  // the sums are here
  std::memcpy(data, all_.data(), size_t(elems) * sizeof(float));
  barrier_.arrive_and_wait(local, what);  // everyone copied: the buffers are reusable
  ++calls_[size_t(local)];
}

}  // namespace tr
