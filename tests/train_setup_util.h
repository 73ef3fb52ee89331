#pragma once
// parse_train_setup over a command line written as one string, for the tests
// of what the training flags resolve to.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/lib/cli/process_launch.h"
#include "harness/lib/cli/train_flags.h"

namespace tr::testing {

// The words of `line` (flags only, split at spaces) after "tr-train", with or
// without the model's recipe as the defaults.
inline TrainSetup setup_of(const std::string& line, bool recipe, World* world = nullptr) {
  std::vector<std::string> words{"tr-train"};
  for (size_t at = 0; at < line.size();) {
    const size_t end = std::min(line.find(' ', at), line.size());
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  std::vector<std::string> values = train_value_flags();
  for (const auto& f : process_value_flags()) values.push_back(f);
  const CliArgs a(int(argv.size()), argv.data(), values, train_bool_flags());
  return parse_train_setup(a, recipe, world);
}

}  // namespace tr::testing
