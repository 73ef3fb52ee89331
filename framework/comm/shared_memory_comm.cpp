#include "framework/comm/shared_memory_comm.h"

#include <algorithm>
#include <cstring>

#include "framework/comm/rank_order_sum.h"
#include "framework/core/error.h"

namespace tr {

SharedMemoryComm::SharedMemoryComm(int ranks, std::chrono::milliseconds watchdog)
    : barrier_(ranks, watchdog),
      posted_(static_cast<size_t>(ranks)),
      posted_elems_(static_cast<size_t>(ranks)),
      posted_dtype_(static_cast<size_t>(ranks)),
      calls_(static_cast<size_t>(ranks), 0) {}

void SharedMemoryComm::allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void*) {
  check_cpu_allreduce_dtype(dtype);
  const size_t me = static_cast<size_t>(rank);
  const std::string what = cat("all-reduce #", calls_[me], " (", elems, " ", dtype_name(dtype), ")");
  posted_[me] = data;
  posted_elems_[me] = elems;
  posted_dtype_[me] = dtype;
  barrier_.arrive_and_wait(rank, what);  // every rank posted
  if (rank == 0) {
    for (int r = 1; r < ranks(); ++r)
      if (posted_elems_[size_t(r)] != elems || posted_dtype_[size_t(r)] != dtype)
        barrier_.abort(cat("collective mismatch at ", what, ": rank ", r, " posted ", posted_elems_[size_t(r)], " ",
                           dtype_name(posted_dtype_[size_t(r)]), " elements, rank 0 posted ", elems, " ",
                           dtype_name(dtype)));
  }
  barrier_.arrive_and_wait(rank, what);  // sizes checked
  const size_t bytes = static_cast<size_t>(elems) * dtype_size(dtype);
  if (rank == 0) sum_.resize(std::max<size_t>(bytes, 1));
  barrier_.arrive_and_wait(rank, what);
  // Each rank sums a contiguous chunk, every element in rank order.
  const int64_t chunk = (elems + ranks() - 1) / ranks();
  const int64_t lo = std::min(elems, chunk * rank), hi = std::min(elems, lo + chunk);
  dispatch_allreduce_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const auto value = [&](int r, int64_t i) { return element_at<T>(posted_[size_t(r)], i); };
    sum_in_rank_order<T>(ranks(), lo, hi, op == ReduceOp::Average, value, sum_.data());
  });
  barrier_.arrive_and_wait(rank, what);  // sums complete
  std::memcpy(data, sum_.data(), bytes);
  barrier_.arrive_and_wait(rank, what);  // everyone copied: sum_ reusable
  ++calls_[me];
}

}  // namespace tr
