#include "framework/runtime/cpu_context.h"

#include <chrono>

#include <cstdlib>
#include <cstring>

#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/core/setting.h"

namespace tr {

CpuContext::CpuContext(int rank, int ranks, Communicator* comm) : DeviceContext(rank, ranks, 0), comm_(comm) {}

void CpuContext::allocate(const ContextSpec& spec) {
  TR_CHECK(!base_, "arena allocated twice");
  TR_CHECK(spec.arena_bytes > 0 && spec.arena_bytes % kArenaAlign == 0, "bad arena size ", spec.arena_bytes);
  spec_ = spec;
  // A batch the host cannot hold is the user's to change: one line with the
  // bytes wanted and available, before malloc (Linux overcommits: a too-large
  // arena could be granted and the process killed while zeroing it).
  const int64_t available = host_available_bytes();
  auto too_big = [&] {
    return UserError(cat("rank ", spec.rank, ": this model and batch need an arena of ",
                         bytes_and_gib(spec.arena_bytes), " of host memory but ",
                         available < 0 ? "an unknown amount" : bytes_and_gib(available),
                         " is available; use a smaller ", setting("batch"), " or fewer ", setting("ranks")));
  };
  if (available >= 0 && spec.arena_bytes > available) throw too_big();
  base_ = static_cast<std::byte*>(std::aligned_alloc(kArenaAlign, static_cast<size_t>(spec.arena_bytes)));
  if (!base_) throw too_big();
  // Zero once: region padding must read as zero forever (casts, NaN checks, all-reduces walk it).
  std::memset(base_, 0, static_cast<size_t>(spec.arena_bytes));
  for (int s = 0; s < 2; ++s) {
    staging_img_[s].assign(static_cast<size_t>(spec.staging_image_bytes), 0);
    staging_lbl_[s].assign(static_cast<size_t>(spec.staging_label_count), 0);
    staging_images_[s] = staging_img_[s].data();
    staging_labels_[s] = staging_lbl_[s].data();
    staging_[s] = HostBatch{staging_images_[s], staging_labels_[s]};
  }
  for (auto& e : envs_) {
    e.scalars = scalars();
    e.comm = comm_;
    e.staging = staging_.data();
    e.rank = spec.rank;
    e.ranks = spec.ranks;
  }
}

CpuContext::~CpuContext() { std::free(base_); }

void CpuContext::upload(int64_t offset, const void* src, size_t bytes) {
  TR_CHECK(offset >= 0 && offset + int64_t(bytes) <= spec_.arena_bytes, "upload out of the arena");
  std::memcpy(base_ + offset, src, bytes);
}

void CpuContext::download(int64_t offset, void* dst, size_t bytes) const {
  TR_CHECK(offset >= 0 && offset + int64_t(bytes) <= spec_.arena_bytes, "download out of the arena");
  std::memcpy(dst, base_ + offset, bytes);
}

void CpuContext::mark_time(StreamKind, int slot) {
  TR_CHECK(slot >= 0 && slot < kTimeSlots, "time slot ", slot, " out of range");
  marks_ms_[static_cast<size_t>(slot)] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double CpuContext::elapsed_ms(int from, int to) const {
  TR_CHECK(from >= 0 && from < kTimeSlots && to >= 0 && to < kTimeSlots, "time slots out of range");
  return marks_ms_[static_cast<size_t>(to)] - marks_ms_[static_cast<size_t>(from)];
}

}  // namespace tr
