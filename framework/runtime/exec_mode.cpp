#include "framework/runtime/exec_mode.h"

#include "framework/core/error.h"

namespace tr {

std::string mode_name(ExecMode m) {
  switch (m) {
    case ExecMode::Eager: return "eager";
    case ExecMode::PartialCapture: return "partial-capture";
    case ExecMode::FullCapture: return "full-capture";
  }
  return "?";
}

ExecMode parse_mode(const std::string& s) {
  if (s == "eager") return ExecMode::Eager;
  if (s == "partial-capture" || s == "partial") return ExecMode::PartialCapture;
  if (s == "full-capture" || s == "full") return ExecMode::FullCapture;
  throw UserError(cat("unknown mode '", s, "' (expected eager, partial-capture or full-capture)"));
}

bool is_captured(ExecMode m, bool fwd_bwd_graph) {
  return m == ExecMode::FullCapture || (m == ExecMode::PartialCapture && fwd_bwd_graph);
}

}  // namespace tr
