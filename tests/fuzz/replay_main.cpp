// Replays a fuzz target's inputs without libFuzzer (Note [fuzzing]): every
// file named, or found in a directory named, goes once through the target's
// LLVMFuzzerTestOneInput, in name order. ctest runs each target over its seed
// corpus (fuzz.replay.<name>), so an input that once crashed a parser stays a
// test in every build, the sanitizer builds included. A target aborts on a
// finding; an unreadable path or an empty corpus is an error here.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& p) {
  if (!std::filesystem::is_directory(p)) return {p};
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(p))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
    for (const auto& path : inputs_of(argv[i])) {
      std::ifstream f(path, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (!f.good() && !f.eof()) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.c_str());
        return 2;
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "%s: no inputs found\n", argv[0]);
    return 2;
  }
  std::printf("replayed %zu inputs\n", replayed);
  return 0;
}
