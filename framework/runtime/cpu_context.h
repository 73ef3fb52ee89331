#pragma once
// The CPU rank: a host arena and plain host staging buffers; every launch runs
// to completion before it returns, so stream order is program order.
#include <vector>

#include "framework/runtime/device_context.h"

namespace tr {

class CpuContext : public DeviceContext {
 public:
  CpuContext(int rank, int ranks, Communicator* comm = nullptr);
  ~CpuContext() override;

  Backend backend() const override { return Backend::Cpu; }
  int64_t prepare_workspace(const CompiledModel&, const std::array<VariantDims, kVariantCount>&) override { return 0; }
  void allocate(const ContextSpec& spec) override;
  void upload(int64_t offset, const void* src, size_t bytes) override;
  void download(int64_t offset, void* dst, size_t bytes) const override;
  void stream_wait(StreamKind, StreamKind) override {}
  void record_transfer_done(int) override {}
  void wait_transfer_done(int) override {}
  void synchronize() override {}
  // Launches run to completion, so the host clock times the stream.
  void mark_time(StreamKind, int slot) override;
  double elapsed_ms(int from, int to) const override;

 private:
  Communicator* comm_ = nullptr;
  std::vector<uint8_t> staging_img_[2];
  std::vector<int32_t> staging_lbl_[2];
  std::array<double, kTimeSlots> marks_ms_{};
};

}  // namespace tr
