#include "harness/lib/bench/side_streams.h"

#include "framework/core/error.h"

namespace tr {

SideStreams side_streams_flag(const CliArgs& a) {
  const bool on = a.flag("--side-streams"), off = a.flag("--no-side-streams");
  TR_USER_CHECK(!(on && off), "give --side-streams or --no-side-streams, not both");
  return on ? SideStreams::On : off ? SideStreams::Off : SideStreams::Auto;
}

const char* side_streams_name(SideStreams s) {
  return s == SideStreams::On ? "on" : s == SideStreams::Off ? "off" : "auto";
}

bool use_side_streams(SideStreams s, Backend backend, const ModelEntry& e, int64_t batch_per_gpu) {
  if (s != SideStreams::Auto) return s == SideStreams::On;
  return backend == Backend::Cuda && batch_per_gpu <= e.side_streams_max_batch;
}

}  // namespace tr
