#pragma once
// Where the tools and tr_tests itself are: beside this test executable
// (build/bin, or a packed copy on a GPU machine, whose build path does not
// exist there), else the build's bin directory.
#include <filesystem>
#include <string>
#include <system_error>

namespace tr::testing {

inline std::string bin_dir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(TR_BIN_DIR) : self.parent_path().string();
}

}  // namespace tr::testing
