// Fuzzes the IDX reader (datasets/idx_reader.h). The reader takes a path, so
// each input is written to an in-memory file (memfd) read through
// /proc/self/fd. The first byte picks the expectation (ndim 1..4, fixed 28x28
// items or any) and whether the rest is written gzip-compressed, so the
// payload checks are reached through zlib too; the gzip seeds exercise
// corrupt and cut-off streams. Bad files must end in a tr::UserError;
// anything else is a finding.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "datasets/idx_reader.h"
#include "framework/core/error.h"

namespace {

// One memfd for the whole run, rewritten per input.
int memfd() {
  static const int fd = memfd_create("tr_fuzz_idx", 0);
  if (fd < 0) std::abort();
  return fd;
}

std::string write_input(const uint8_t* data, size_t size, bool gzip) {
  const int fd = memfd();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (ftruncate(fd, 0) != 0) std::abort();
  if (gzip) {
    gzFile gz = gzopen(path.c_str(), "wb1");
    if (!gz || (size > 0 && gzwrite(gz, data, unsigned(size)) != int(size)) || gzclose(gz) != Z_OK) std::abort();
  } else if (size > 0 && pwrite(fd, data, size, 0) != ssize_t(size)) {
    std::abort();
  }
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const size_t ndim = 1 + (mode & 3);
  const bool fixed_items = (mode & 4) != 0;  // items of 28x28 (or 28 for ndim 2), like images
  const bool gzip = (mode & 8) != 0;
  tr::data::IdxExpectation expect{.dims = std::vector<int64_t>(ndim, tr::data::kAnyDim), .item_noun = "images"};
  if (fixed_items)
    for (size_t i = 1; i < ndim; ++i) expect.dims[i] = 28;
  const std::string path = write_input(data + 1, size - 1, gzip);
  try {
    const tr::data::IdxArray a = tr::data::read_idx_u8(path, expect);
    if (int64_t(a.data.size()) != a.item_count() * a.item_bytes()) std::abort();
  } catch (const tr::UserError&) {}
  return 0;
}
