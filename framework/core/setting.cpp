#include "framework/core/setting.h"

namespace tr {

std::string setting(std::string_view name) {
  std::string s;
  s.reserve(name.size() + 2);
  s += '{';
  s += name;
  s += '}';
  return s;
}

}  // namespace tr
