#include "framework/comm/process_comm.h"

#include <algorithm>
#include <cstring>

#include "framework/comm/rank_order_sum.h"
#include "framework/core/error.h"

namespace tr {
namespace {

// What every process posts first: its element count and type, so that a
// process that posted another collective is refused by name before any values
// move (the exchange's block sizes follow from them).
struct PostedShape {
  int64_t elems = 0;
  int64_t dtype = 0;
};

}  // namespace

ProcessComm::ProcessComm(World& world, int local_ranks, std::chrono::milliseconds watchdog)
    : world_(world),
      barrier_(local_ranks, watchdog),
      watchdog_(watchdog),
      first_rank_(world.process() * local_ranks),
      posted_(static_cast<size_t>(local_ranks)),
      posted_elems_(static_cast<size_t>(local_ranks)),
      posted_dtype_(static_cast<size_t>(local_ranks)),
      calls_(static_cast<size_t>(local_ranks), 0) {}

void ProcessComm::allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void*) {
  check_cpu_allreduce_dtype(dtype);
  const int local = rank - first_rank_;
  const int L = barrier_.ranks();
  TR_CHECK(local >= 0 && local < L, "rank ", rank, " is not held by process ", world_.process());
  const std::string what = cat("all-reduce #", calls_[size_t(local)], " (", elems, " ", dtype_name(dtype), ")");
  posted_[static_cast<size_t>(local)] = data;
  posted_elems_[static_cast<size_t>(local)] = elems;
  posted_dtype_[static_cast<size_t>(local)] = dtype;
  barrier_.arrive_and_wait(local, what);  // every local rank posted
  if (local == 0) {
    try {
      reduce_across_processes(elems, dtype, op, what);
    } catch (const std::exception& e) {
      barrier_.abort(e.what());  // release the other local ranks with the cause
      throw;
    }
  }
  barrier_.arrive_and_wait(local, what);  // the sums are here
  std::memcpy(data, all_.data(), size_t(elems) * dtype_size(dtype));
  barrier_.arrive_and_wait(local, what);  // everyone copied: the buffers are reusable
  ++calls_[size_t(local)];
}

// Local rank 0's part: the processes compare what they posted (allgather),
// the local ranks' values go to the owners of their chunks (alltoall), each
// owner sums its chunk, and the sums come back to every process (allgather)
// into all_.
void ProcessComm::reduce_across_processes(int64_t elems, DType dtype, ReduceOp op, const std::string& what) {
  const int L = barrier_.ranks();
  for (int l = 1; l < L; ++l)
    TR_CHECK(posted_elems_[size_t(l)] == elems && posted_dtype_[size_t(l)] == dtype, "collective mismatch at ", what,
             ": rank ", first_rank_ + l, " posted ", posted_elems_[size_t(l)], " ",
             dtype_name(posted_dtype_[size_t(l)]), " elements, rank ", first_rank_, " posted ", elems, " ",
             dtype_name(dtype));
  const int P = world_.processes(), me = world_.process();
  const PostedShape mine{elems, int64_t(dtype)};
  const auto shapes = world_.allgather(&mine, sizeof mine, what + " (sizes)", watchdog_);
  for (int q = 0; q < P; ++q) {
    PostedShape theirs;
    std::memcpy(&theirs, shapes.data() + size_t(q) * sizeof theirs, sizeof theirs);
    TR_CHECK(theirs.elems == elems && theirs.dtype == mine.dtype, "collective mismatch at ", what, ": process ", q,
             " (rank ", q * L, ") posted ", theirs.elems, " ", dtype_name(DType(theirs.dtype)), " elements, process ",
             me, " (rank ", first_rank_, ") posted ", elems, " ", dtype_name(dtype));
  }
  const size_t esize = dtype_size(dtype);
  const int64_t chunk = (elems + P - 1) / P;
  const size_t block = size_t(L * chunk) * esize;  // L x chunk values for one owner
  send_.assign(block * size_t(P), 0);
  recv_.resize(send_.size());
  for (int q = 0; q < P; ++q) {
    const int64_t lo = std::min(elems, chunk * q), hi = std::min(elems, lo + chunk);
    for (int l = 0; l < L; ++l)
      std::memcpy(send_.data() + size_t(q) * block + size_t(l * chunk) * esize,
                  static_cast<const unsigned char*>(posted_[size_t(l)]) + size_t(lo) * esize, size_t(hi - lo) * esize);
  }
  world_.alltoall(send_.data(), recv_.data(), block, what, watchdog_);
  // This process's chunk: every element summed in global rank order (process
  // q's ranks are q*L .. q*L + L-1).
  const int64_t lo = std::min(elems, chunk * me), n = std::min(elems, lo + chunk) - lo;
  mine_.assign(size_t(chunk) * esize, 0);
  dispatch_allreduce_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const auto value = [&](int r, int64_t i) {
      const int q = r / L, l = r % L;
      return element_at<T>(recv_.data() + size_t(q) * block, l * chunk + i);
    };
    sum_in_rank_order<T>(P * L, 0, n, op == ReduceOp::Average, value, mine_.data());
  });
  const auto all = world_.allgather(mine_.data(), mine_.size(), what + " (sums)", watchdog_);
  all_.assign(all.size(), 0);
  std::memcpy(all_.data(), all.data(), all.size());
}

}  // namespace tr
