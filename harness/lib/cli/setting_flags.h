#pragma once
// Note [settings, not flags] (framework/core/error.h) on the tools' side: a
// framework message names a setting as "{batch}"; the tools print it as the
// flag that sets it.
#include <string>
#include <string_view>

namespace tr {

// The message with every setting the tools have replaced by its flags
// ("{batch}" -> "--batch", "{conv_plans}" -> "--cudnn-benchmark --conv-plans");
// a name the table lacks stays as it is.
std::string with_flags(std::string_view message);

}  // namespace tr
