#include "framework/comm/shared_memory_comm.h"

#include <algorithm>
#include <cstring>

#include "framework/core/error.h"

namespace tr {

SharedMemoryComm::SharedMemoryComm(int ranks, std::chrono::milliseconds watchdog)
    : barrier_(ranks, watchdog), posted_(static_cast<size_t>(ranks)), posted_elems_(static_cast<size_t>(ranks)), calls_(static_cast<size_t>(ranks), 0) {}

void SharedMemoryComm::allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void*) {
  TR_CHECK(dtype == DType::F32, "CPU all-reduce supports f32 buffers, got ", dtype_name(dtype));
  const std::string what = cat("all-reduce #", calls_[static_cast<size_t>(rank)], " (", elems, " f32)");
  posted_[static_cast<size_t>(rank)] = static_cast<float*>(data);
  posted_elems_[static_cast<size_t>(rank)] = elems;
  barrier_.arrive_and_wait(rank, what);  // every rank posted
  if (rank == 0) {
    for (int r = 1; r < ranks(); ++r)
      if (posted_elems_[static_cast<size_t>(r)] != elems)
        barrier_.abort(cat("collective mismatch at ", what, ": rank ", r, " posted ", posted_elems_[size_t(r)],
                           " elements, rank 0 posted ", elems));
  }
  barrier_.arrive_and_wait(rank, what);  // sizes checked
  // Each rank sums a contiguous chunk, every element in rank order.
  if (rank == 0) sum_.resize(static_cast<size_t>(std::max<int64_t>(elems, 1)));
  barrier_.arrive_and_wait(rank, what);
  const int64_t chunk = (elems + ranks() - 1) / ranks();
  const int64_t lo = std::min(elems, chunk * rank), hi = std::min(elems, lo + chunk);
  for (int64_t i = lo; i < hi; ++i) {
    float s = posted_[0][i];
    for (int r = 1; r < ranks(); ++r) s += posted_[static_cast<size_t>(r)][i];
    sum_[static_cast<size_t>(i)] = op == ReduceOp::Average ? s / static_cast<float>(ranks()) : s;
  }
  barrier_.arrive_and_wait(rank, what);  // sums complete
  std::memcpy(data, sum_.data(), static_cast<size_t>(elems) * sizeof(float));
  barrier_.arrive_and_wait(rank, what);  // everyone copied: sum_ reusable
  ++calls_[static_cast<size_t>(rank)];
}

}  // namespace tr
