#pragma once
// Reports are never half-written: the text goes to a temporary file beside the
// target (same directory, so the same file system), is flushed to disk, and is
// renamed over the target in one step. A run killed mid-write leaves the old
// file as it was (and at most a stray "<path>.tmp.<pid>").
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tr {

// Writes `text` to `path` atomically; a UserError naming the path when the
// directory is not writable or the disk is full. `after_chunk` (tests) runs
// after every chunk of the temporary file is written, with the bytes so far.
void write_file_atomically(const std::string& path, std::string_view text,
                           const std::function<void(size_t)>& after_chunk = {});

// Whether write_file_atomically(path, ...) could start: the same UserError now,
// before a long run, where the directory is missing or not writable or `path`
// is a directory. Creates and removes the temporary file; `path` is untouched.
void check_writable(const std::string& path);

}  // namespace tr
