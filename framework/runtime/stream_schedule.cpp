#include "framework/runtime/stream_schedule.h"

#include <algorithm>

namespace tr {

void StreamSchedule::wait(StreamKind waiter, StreamKind on) {
  if (seen_[size_t(waiter)][size_t(on)]) return;
  ctx_.stream_wait(waiter, on);
  seen_[size_t(waiter)][size_t(on)] = true;
}

void StreamSchedule::before(const PreparedNode& p, StreamKind s) {
  if (s != origin_) {
    wait(s, origin_);
    for (int t = 0; t < kStreamKindCount; ++t)
      if (t != int(s) && t != int(origin_) && used_[size_t(t)]) wait(s, StreamKind(t));
    used_[size_t(s)] = true;
    return;
  }
  // An origin node reading a side stream's output waits for that stream.
  for (const TensorRef& in : p.inputs()) {
    for (auto it = side_writes_.begin(); it != side_writes_.end();) {
      if (it->first == in.data) {
        wait(origin_, it->second);
        const StreamKind joined = it->second;
        side_writes_.erase(
            std::remove_if(side_writes_.begin(), side_writes_.end(), [&](const auto& w) { return w.second == joined; }),
            side_writes_.end());
        it = side_writes_.begin();
      } else {
        ++it;
      }
    }
  }
  // Note [one collective at a time]: never beside a side stream's collective.
  if (p.node().collective)
    for (int t = 0; t < kStreamKindCount; ++t)
      if (side_collective_[size_t(t)]) {
        wait(origin_, StreamKind(t));
        side_collective_[size_t(t)] = false;
      }
}

void StreamSchedule::after(const PreparedNode& p, StreamKind s) {
  // New work on s: no stream has seen it yet.
  for (auto& row : seen_) row[size_t(s)] = false;
  if (s == origin_) return;
  if (p.node().collective) side_collective_[size_t(s)] = true;
  for (const TensorRef& out : p.outputs()) side_writes_.push_back({out.data, s});
}

void StreamSchedule::join() { join_except(StreamKind::COUNT); }

bool StreamSchedule::join_except(StreamKind open) {
  bool left_open = false;
  for (int i = 0; i < kStreamKindCount; ++i) {
    if (!used_[size_t(i)]) continue;
    if (StreamKind(i) == open) left_open = true;
    else ctx_.stream_wait(origin_, static_cast<StreamKind>(i));
  }
  used_.fill(false);
  for (auto& row : seen_) row.fill(false);
  side_collective_.fill(false);
  side_writes_.clear();
  return left_open;
}

}  // namespace tr
