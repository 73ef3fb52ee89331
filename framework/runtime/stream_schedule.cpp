#include "framework/runtime/stream_schedule.h"

#include <algorithm>

namespace tr {

void StreamSchedule::before(const PreparedNode& p, StreamKind s) {
  if (s != origin_) {
    if (!synced_[static_cast<size_t>(s)]) {
      ctx_.stream_wait(s, origin_);
      synced_[static_cast<size_t>(s)] = true;
    }
    used_[static_cast<size_t>(s)] = true;
    return;
  }
  // An origin node reading a side stream's output waits for that stream.
  for (const TensorRef& in : p.inputs()) {
    for (auto it = side_writes_.begin(); it != side_writes_.end();) {
      if (it->first == in.data) {
        ctx_.stream_wait(origin_, it->second);
        const StreamKind joined = it->second;
        side_writes_.erase(std::remove_if(side_writes_.begin(), side_writes_.end(),
                                          [&](const auto& w) { return w.second == joined; }),
                           side_writes_.end());
        it = side_writes_.begin();
      } else {
        ++it;
      }
    }
  }
}

void StreamSchedule::after(const PreparedNode& p, StreamKind s) {
  if (s == origin_) {
    synced_.fill(false);  // new origin work: side streams must wait again before their next node
    return;
  }
  for (const TensorRef& out : p.outputs()) side_writes_.push_back({out.data, s});
}

void StreamSchedule::join() {
  for (int i = 0; i < kStreamKindCount; ++i)
    if (used_[static_cast<size_t>(i)]) ctx_.stream_wait(origin_, static_cast<StreamKind>(i));
  used_.fill(false);
  synced_.fill(false);
  side_writes_.clear();
}

}  // namespace tr
