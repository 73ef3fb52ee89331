#include "harness/lib/cli/process_agreement.h"

#include <algorithm>
#include <map>
#include <set>

#include "framework/comm/world.h"
#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "tr_git_commit.h"  // build/generated, cmake/git_commit.cmake

extern char** environ;

namespace tr {

namespace {

constexpr const char* kNotGiven = "(not given)";

// One setting per line, name and value split by a unit separator; newlines in
// values are escaped so that each line stays one setting.
std::string encode(const std::vector<RunSetting>& settings) {
  std::string out;
  for (const RunSetting& s : settings) {
    std::string v;
    for (char c : s.value) v += c == '\n' ? std::string("\\n") : std::string(1, c);
    out += s.name + '\x1f' + v + '\n';
  }
  return out;
}

std::vector<RunSetting> decode(const std::string& text) {
  std::vector<RunSetting> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const size_t sep = line.find('\x1f');
    TR_CHECK(sep != std::string::npos, "a setting line without its separator");
    out.push_back({line.substr(0, sep), line.substr(sep + 1)});
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

std::string quoted(const std::string& v) { return v == kNotGiven ? v : "'" + v + "'"; }

}  // namespace

std::vector<RunSetting> run_settings(const std::string& tool, const CliArgs& args,
                                     const std::vector<RunSetting>& extra) {
  std::vector<RunSetting> out;
  out.push_back({"tool", tool});
  out.push_back({"build", TR_GIT_COMMIT});
  for (const auto& [flag, value] : args.given()) out.push_back({flag, value});
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (kv.rfind("TR_", 0) == 0 && eq != std::string::npos) out.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::string disagreement(const std::vector<std::vector<RunSetting>>& per_process) {
  // name -> value per process (kNotGiven where a process lacks it)
  std::map<std::string, std::vector<std::string>> table;
  const size_t n = per_process.size();
  for (size_t p = 0; p < n; ++p)
    for (const RunSetting& s : per_process[p]) {
      auto& row = table.try_emplace(s.name, n, kNotGiven).first->second;
      row[p] = s.value;
    }
  std::vector<std::string> differences;
  for (const auto& [name, values] : table) {
    if (std::set<std::string>(values.begin(), values.end()).size() == 1) continue;
    // "--seed is '1' on process 0 and '2' on processes 1, 3"
    std::map<std::string, std::vector<size_t>> holders;
    for (size_t p = 0; p < n; ++p) holders[values[p]].push_back(p);
    auto list = [](const std::vector<size_t>& ps) {
      std::string s = ps.size() > 1 ? "es " : " ";
      for (size_t i = 0; i < ps.size(); ++i) s += cat(i ? ", " : "", ps[i]);
      return s;
    };
    std::string text = name + " is " + quoted(values[0]) + " on process" + list(holders[values[0]]);
    for (const auto& [v, ps] : holders)
      if (v != values[0]) text += " but " + quoted(v) + " on process" + list(ps);
    differences.push_back(text);
  }
  if (differences.empty()) return "";
  std::string msg = "the processes were started differently: ";
  const size_t shown = std::min<size_t>(differences.size(), 3);
  for (size_t i = 0; i < shown; ++i) msg += (i ? "; " : "") + differences[i];
  if (differences.size() > shown) msg += cat("; and ", differences.size() - shown, " more setting(s)");
  return msg + ". Every process of a run must have the same flags, TR_* environment and data";
}

void check_processes_agree(World& world, const std::vector<RunSetting>& mine, std::chrono::milliseconds timeout) {
  const std::vector<std::string> all = world.allgather_strings(encode(mine), "the run's settings", timeout);
  std::vector<std::vector<RunSetting>> per_process;
  for (const std::string& text : all) per_process.push_back(decode(text));
  if (const std::string msg = disagreement(per_process); !msg.empty()) throw UserError(msg);
}

}  // namespace tr
