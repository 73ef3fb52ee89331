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
  CliArgs(int argc, char** argv, const std::vector<std::string>& value_flags,
          const std::vector<std::string>& bool_flags);

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::string str(const std::string& flag, const std::string& def) const;
  int64_t integer(const std::string& flag, int64_t def, int64_t lo, int64_t hi) const;
  double real(const std::string& flag, double def, double lo, double hi) const;
  bool flag(const std::string& flag) const { return has(flag); }
  const std::vector<std::string>& positional() const { return positional_; }
  // Every flag given, with its value ("1" for a boolean flag).
  const std::map<std::string, std::string>& given() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The items of a list flag's value: "8,16" -> {"8", "16"}. A list names the
// cases a tool sweeps, so an empty item (a leading, trailing or doubled comma)
// or an item given twice is a UserError naming the flag and the item, before
// any case runs: a repeated case would run twice and then collide in the report.
std::vector<std::string> list_items(const std::string& flag, const std::string& value);

// Refuses a repeat among a list's items once each is resolved to one spelling
// (a parsed number, a canonical name: "8" and "08", "partial" and
// "partial-capture" are one item each), for a spelled-apart repeat that
// list_items cannot see. `why` ends the message where a repeat needs it
// explained (" (all includes it)").
void check_distinct(const std::string& flag, const std::vector<std::string>& items, const std::string& why = "");

// Parses a whole string as an integer / real; nullopt when it is not one.
std::optional<int64_t> parse_int(const std::string& s);
std::optional<double> parse_real(const std::string& s);

}  // namespace tr
