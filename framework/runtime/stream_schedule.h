#pragma once
// Note [streams inside a graph]: a graph runs on its own stream (its origin),
// but some nodes name a side stream (weight gradients on COMP_2). StreamSchedule
// orders them with events created before any capture (DeviceContext::stream_wait):
//  - a side node first waits for the origin's work so far (its inputs);
//  - an origin node that reads what a side stream wrote waits for that stream;
//  - at the end the origin joins every side stream it forked.
// The same code orders eager launches and stream capture, so both modes see the
// same dependencies. The memory plan keeps a side node's tensors alive until
// the join (memory_plan.cpp), so reuse cannot race with a side stream.
#include <array>
#include <vector>

#include "framework/runtime/prepared_node.h"

namespace tr {

class StreamSchedule {
 public:
  StreamSchedule(DeviceContext& ctx, StreamKind origin) : ctx_(ctx), origin_(origin) {}
  // Call before running node p (launched on stream s).
  void before(const PreparedNode& p, StreamKind s);
  // Call after running it.
  void after(const PreparedNode& p, StreamKind s);
  // Origin waits for every side stream used.
  void join();

 private:
  DeviceContext& ctx_;
  StreamKind origin_;
  std::array<bool, kStreamKindCount> used_{};
  std::array<bool, kStreamKindCount> synced_{};  // side stream has seen all origin work so far
  std::vector<std::pair<const void*, StreamKind>> side_writes_;  // outputs of side nodes, not yet joined
};

}  // namespace tr
