#include "harness/lib/cli/cli_args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "framework/core/error.h"

namespace tr {

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_real(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> list_items(const std::string& flag, const std::string& value) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    const size_t comma = value.find(',', begin);
    const size_t end = comma == std::string::npos ? value.size() : comma;
    TR_USER_CHECK(end > begin, flag, ": empty item in '", value, "'");
    items.push_back(value.substr(begin, end - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  check_distinct(flag, items);
  return items;
}

void check_distinct(const std::string& flag, const std::vector<std::string>& items, const std::string& why) {
  std::set<std::string> seen;
  for (const std::string& item : items)
    TR_USER_CHECK(seen.insert(item).second, flag, ": ", item, " is given twice", why);
}

CliArgs::CliArgs(int argc, char** argv, const std::vector<std::string>& value_flags,
                 const std::vector<std::string>& bool_flags) {
  auto is_in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (is_in(bool_flags, name)) {
      TR_USER_CHECK(!inline_value, name, " takes no value");
      values_[name] = std::string("1");  // not = "1": GCC 12 -O3 -Wrestrict false positive
    } else if (is_in(value_flags, name)) {
      if (!inline_value) {
        TR_USER_CHECK(i + 1 < argc, name, " needs a value");
        value = argv[++i];
      }
      TR_USER_CHECK(!value.empty(), name, " needs a non-empty value");
      TR_USER_CHECK(values_.count(name) == 0, name, " given twice");
      values_[name] = value;
    } else {
      throw UserError(cat("unknown flag ", name, " (see --help)"));
    }
  }
}

std::string CliArgs::str(const std::string& flag, const std::string& def) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? def : it->second;
}

int64_t CliArgs::integer(const std::string& flag, int64_t def, int64_t lo, int64_t hi) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const auto v = parse_int(it->second);
  TR_USER_CHECK(v.has_value(), flag, " expects an integer, got '", it->second, "'");
  TR_USER_CHECK(*v >= lo && *v <= hi, flag, " must be in [", lo, ", ", hi, "], got ", *v);
  return *v;
}

double CliArgs::real(const std::string& flag, double def, double lo, double hi) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const auto v = parse_real(it->second);
  TR_USER_CHECK(v.has_value(), flag, " expects a number, got '", it->second, "'");
  TR_USER_CHECK(*v >= lo && *v <= hi, flag, " must be in [", lo, ", ", hi, "], got ", *v);
  return *v;
}

}  // namespace tr
