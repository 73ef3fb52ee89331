#pragma once
// DeviceContext (docs/design.md, "Vocabulary"): everything one rank owns — one arena allocation
// (device memory on CUDA, host memory on the CPU), streams and events, library
// handles, host staging buffers for input batches — all created before the
// first step. ptr_at(offset) = base + offset, and base never changes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "framework/core/backend.h"
#include "framework/graph/graph_id.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/variant.h"
#include "framework/ops/conv_plans/conv_plan_book.h"
#include "framework/ops/op_call.h"
#include "framework/ops/train_scalars.h"

namespace tr {

// How a rank picks library algorithms (cuDNN convolutions) and launches its
// own kernels.
struct AlgoChoice {
  bool deterministic = true;  // only algorithms that give the same bits on every run
  // Time the heuristics' plan against cuDNN's engine configs once per shape
  // (before any capture; Note [timed convolution plans]) instead of taking the
  // heuristics' first: faster where an engine config wins, but two processes
  // may pick differently, so runs are reproducible bit for bit within a rank's
  // plans only.
  bool benchmark = false;
  // Programmatic dependent launch of our kernels (Note [programmatic dependent
  // launch], framework/ops/kernels/kernel_launch_cuda.h); false: --no-pdl.
  bool programmatic_launch = true;
  // f16 3x3 filter gradients on tr's tensor-core kernel where it takes the
  // shape (ConvPlanCache::Options::tc_filter); false: --cudnn-filter-grad.
  bool tc_filter = true;
  // A captured graph's memset nodes run as kernel nodes (Note [memset nodes],
  // framework/runtime/memset_nodes_cuda.h); false: --keep-memset-nodes.
  bool memset_kernels = true;
  // Per-channel sums finished behind a grid barrier, and a BatchNorm's phases
  // in one cooperative kernel, where the grid fits (Note [one kernel per
  // BatchNorm], framework/ops/kernels/bn_train_cuda.h): fewer kernels, the same bits,
  // but slower on the H200; true: --grid-sync.
  bool grid_sync = false;
  // The convolution choices shared by the process's ranks and sessions, and
  // kept in a --conv-plans file (Note [convolution plan books],
  // framework/ops/conv_plans/conv_plan_book.h); null: each rank's cache chooses alone.
  std::shared_ptr<ConvPlanBook> conv_plans;
};

struct ContextSpec {
  int rank = 0;        // global (Note [processes and ranks], framework/comm/world.h)
  int ranks = 1;       // global
  int local_rank = 0;  // index among this process's ranks
  int device = 0;      // CUDA device ordinal
  int64_t arena_bytes = 0;
  int64_t scalars_offset = 0;
  int64_t workspace_offset = 0;
  int64_t workspace_bytes = 0;
  int64_t staging_image_bytes = 0;  // per buffer: max_batch * H0 * W0 * C
  int64_t staging_label_count = 0;  // per buffer: max_batch
  bool deterministic = true;
  int64_t watchdog_ms = 120000;  // host waits on device work longer than this are an error
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  virtual Backend backend() const = 0;
  // Phase 1 (before planning): choose library algorithms for every shape the
  // model uses and report the scratch they need. Phase 2: allocate the arena
  // (scratch included) and staging buffers; nothing is allocated after this.
  virtual int64_t prepare_workspace(const CompiledModel& m, const std::array<VariantDims, kVariantCount>& dims) = 0;
  virtual void allocate(const ContextSpec& spec) = 0;
  int rank() const { return spec_.rank; }
  int local_rank() const { return spec_.local_rank; }
  int ranks() const { return spec_.ranks; }
  const ContextSpec& spec() const { return spec_; }
  std::byte* base() const { return base_; }
  void* ptr_at(int64_t offset) const { return base_ + offset; }
  TrainScalars* scalars() const { return reinterpret_cast<TrainScalars*>(base_ + spec_.scalars_offset); }
  // The environment kernels see when launched on stream `s`.
  const ExecEnv& env(StreamKind s) const { return envs_[static_cast<size_t>(s)]; }

  // Host staging buffers that TRANSFER_A/B copy from. Writable by the host only
  // while no transfer from that slot is in flight (see wait_transfer_done).
  uint8_t* staging_images(int slot) { return staging_images_[slot]; }
  int32_t* staging_labels(int slot) { return staging_labels_[slot]; }

  // Synchronous host <-> arena copies (setup, readback, tests).
  virtual void upload(int64_t offset, const void* src, size_t bytes) = 0;
  virtual void download(int64_t offset, void* dst, size_t bytes) const = 0;

  // Cross-stream order without blocking the host: `waiter` waits for all work
  // submitted so far on `on`. No-ops where execution is sequential (CPU).
  virtual void stream_wait(StreamKind waiter, StreamKind on) = 0;
  virtual void record_transfer_done(int slot) = 0;
  virtual void wait_transfer_done(int slot) = 0;  // host blocks
  virtual void synchronize() = 0;                 // host blocks on every stream
  // Interval timing for measurements (tr-bench), never in a capture: mark_time
  // stamps slot i when stream s reaches it; after synchronize(), elapsed_ms(i, j)
  // is the time from mark i to mark j.
  static constexpr int kTimeSlots = 4;
  virtual void mark_time(StreamKind s, int slot) = 0;
  virtual double elapsed_ms(int from, int to) const = 0;
  // Binds the calling thread to this rank's device (rank threads call it first).
  virtual void make_current() const {}

 protected:
  DeviceContext(int rank, int ranks, int device) {
    spec_.rank = rank;
    spec_.ranks = ranks;
    spec_.device = device;
  }

  ContextSpec spec_;
  std::byte* base_ = nullptr;
  std::array<ExecEnv, kStreamKindCount> envs_{};
  std::array<HostBatch, 2> staging_{};
  std::array<uint8_t*, 2> staging_images_{};
  std::array<int32_t*, 2> staging_labels_{};
};

}  // namespace tr
