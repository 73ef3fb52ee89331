#pragma once
// The three ways the harness runs the same compiled graph (docs/design.md, "The three modes and their equivalence").
#include <string>

namespace tr {

enum class ExecMode {
  Eager,           // every node launched one by one, every step
  PartialCapture,  // forward/backward graphs captured; the rest eager
  FullCapture,     // every graph captured; a step is only graph launches
};

std::string mode_name(ExecMode m);
ExecMode parse_mode(const std::string& s);  // throws UserError
bool is_captured(ExecMode m, bool fwd_bwd_graph);

}  // namespace tr
