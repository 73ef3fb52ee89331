#pragma once
// Note [streams inside a graph]: a graph runs on its own stream (its origin),
// but some nodes name a side stream (weight gradients on COMP_2, gradient
// buckets on UPDATE). StreamSchedule orders them with events created before
// any capture (DeviceContext::stream_wait):
//  - a side node first waits for the origin's work so far (its inputs), and
//    for the work so far of every other side stream (a bucket all-reduce reads
//    weight gradients that COMP_2 wrote);
//  - an origin node that reads what a side stream wrote waits for that stream;
//  - an origin node holding a collective waits for every side stream that ran
//    one (Note [one collective at a time]);
//  - at the end the origin joins every side stream it forked (join), except
//    where a step graph leaves DEEP_FWD_BWD's COMP_2 open for a later wait
//    (join_except; Note [the deep weight gradients finish beside the first
//    layer's backward], graph_runner.h).
// The same code orders eager launches and stream capture, so both modes see the
// same dependencies. The memory plan keeps a side node's tensors alive until
// the join (memory_plan.cpp, side_streams_joined_by), so reuse cannot race
// with a side stream.
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
  // The same but for `open`, whose work the caller orders later (Note [the
  // deep weight gradients finish beside the first layer's backward],
  // graph_runner.h). Returns whether `open` had work left unjoined.
  bool join_except(StreamKind open);

 private:
  void wait(StreamKind waiter, StreamKind on);

  DeviceContext& ctx_;
  StreamKind origin_;
  std::array<bool, kStreamKindCount> used_{};
  // seen_[a][b]: stream a has waited for all work submitted to b so far.
  std::array<std::array<bool, kStreamKindCount>, kStreamKindCount> seen_{};
  std::array<bool, kStreamKindCount> side_collective_{};         // ran a collective the origin has not waited for
  std::vector<std::pair<const void*, StreamKind>> side_writes_;  // outputs of side nodes, not yet joined
};

}  // namespace tr
