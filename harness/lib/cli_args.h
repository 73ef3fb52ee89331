#pragma once
// A small command-line parser shared by tr-train and tr-bench: `--flag value`,
// `--flag=value` and boolean `--flag`. Every flag must be declared; an unknown
// flag, a missing value or a value of the wrong type is a UserError naming it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tr {

class CliArgs {
 public:
  // `value_flags` take a value; `bool_flags` do not.
  CliArgs(int argc, char** argv, const std::vector<std::string>& value_flags, const std::vector<std::string>& bool_flags);

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::string str(const std::string& flag, const std::string& def) const;
  int64_t integer(const std::string& flag, int64_t def, int64_t lo, int64_t hi) const;
  double real(const std::string& flag, double def, double lo, double hi) const;
  bool flag(const std::string& flag) const { return has(flag); }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Parses a whole string as an integer / real; nullopt when it is not one.
std::optional<int64_t> parse_int(const std::string& s);
std::optional<double> parse_real(const std::string& s);

}  // namespace tr
