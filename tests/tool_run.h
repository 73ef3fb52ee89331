#pragma once
// Runs a built tool (tr-train, tr-bench, tr-data) the way a user does and
// keeps its exit code, stdout and stderr, for the CLI tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/bin_dir.h"

namespace tr::testing {

struct ToolResult {
  int code = -1;
  std::string out, err;
};

// `args` starts with the tool's name: "tr-data check DIR".
inline ToolResult run_tool(const std::string& args) {
  // ctest runs test cases as parallel processes: one stderr file per call.
  static int calls = 0;
  const std::string err_file =
      ::testing::TempDir() + "tr_cli_stderr_" + std::to_string(getpid()) + "_" + std::to_string(calls++) + ".txt";
  const std::string cmd = bin_dir() + "/" + args + " 2>" + err_file;
  ToolResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_file);
  r.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return r;
}

// The tool exits 2 with one line on stderr that holds `needle`.
inline void expect_tool_user_error(const std::string& args, const std::string& needle) {
  const ToolResult r = run_tool(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << " printed: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
}

}  // namespace tr::testing
