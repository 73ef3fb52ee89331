#pragma once
// Command lines from fuzz input: the bytes split on NUL or newline into
// arguments (argv[0] is the program), kept alive with a char* array the
// parsers take as argv. A seed file is one argument per line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tr::fuzz {

struct Argv {
  std::vector<std::string> args;
  std::vector<char*> ptrs;

  Argv(const uint8_t* data, size_t size, const char* program) {
    args.emplace_back(program);
    std::string cur;
    for (size_t i = 0; i < size; ++i) {
      const char c = char(data[i]);
      if (c == '\0' || c == '\n') {
        args.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) args.push_back(cur);
  }

  // Appends arguments after the fuzzed ones (e.g. --synthetic).
  void append(const std::vector<std::string>& more) { args.insert(args.end(), more.begin(), more.end()); }

  int argc() const { return int(args.size()); }
  char** argv() {
    ptrs.clear();
    for (auto& a : args) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    return ptrs.data();
  }
};

}  // namespace tr::fuzz
