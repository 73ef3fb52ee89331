#pragma once
// Reports are never half-written: the text goes to a temporary file beside the
// target (same directory, so the same file system), is flushed to disk, and is
// renamed over the target in one step. A run killed mid-write leaves the old
// file as it was (and at most a stray "<path>.tmp.<pid>").
//
// Note [output paths]: every file tr writes (JSON and HTML reports, MLLOG, the
// kernel trace, the convolution plans file) goes through this file, under one
// policy. Renaming over a path replaces whatever the path names, so the path
// is checked first; each refusal is a UserError (exit 2) of one line that
// names the path and says what it is.
//   * A new name, or an existing regular file the user may write: written.
//     Replacing a file keeps its permission bits (a new file gets 0666 less
//     the umask, as a shell redirection would). The writer becomes its owner,
//     and other hard links to it keep the old text, as with any save by rename.
//   * A symbolic link is followed: its target is written (the temporary file
//     sits beside the target, so the rename stays on one file system) and the
//     link itself stays, so `--json latest.json` with latest.json ->
//     runs/x.json rewrites runs/x.json. A dangling link is refused, as GNU cp
//     refuses to write through one: its target may be anywhere, and a typo in
//     it would otherwise create a file nobody looks for.
//   * A directory, FIFO, socket, character or block device is refused, before
//     anything is opened (opening a FIFO would block, and renaming over
//     /dev/null would replace it with a regular file).
//   * An existing file that is read-only is refused ("is read-only"), never
//     replaced: one the user may not write (access(2), which also sees a
//     read-only file system) or one with no write permission bit at all
//     (chmod a-w). The second test holds for root too, whom access() lets
//     write anything: a file made read-only on purpose stays so.
//   * A path that is also an input of the same run is refused (`tr-bench
//     report X.json -o X.json` would overwrite its own input): compared by
//     file identity (std::filesystem::equivalent), so another spelling or a
//     link to the input is caught too.
//   * A write past the file size limit (ulimit -f) fails like a full disk:
//     SIGXFSZ, whose default action kills the process silently (exit 153) and
//     leaves the temporary file behind, is ignored while a file is written,
//     so write() fails with EFBIG; the temporary file is removed and the
//     error names the file and the limit. It is ignored around the write, not
//     process-wide, so a tool's stdout redirected into a capped file still
//     behaves as it always did.
// check_writable applies the same policy up front, before a long run.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tr {

// Writes `text` to `path` atomically under Note [output paths]; a UserError
// naming the path when the policy refuses it, the directory is not writable,
// the disk is full or the file size limit is reached. `after_chunk` (tests)
// runs after every chunk of the temporary file is written, with the bytes so
// far.
void write_file_atomically(const std::string& path, std::string_view text,
                           const std::function<void(size_t)>& after_chunk = {});

// Whether write_file_atomically(path, ...) could start: the same UserError now,
// before a long run, where Note [output paths] refuses `path`, or where its
// directory is missing or not writable. `inputs` are the files the same run
// reads; `path` may be none of them. Creates and removes the temporary file;
// `path` is untouched.
void check_writable(const std::string& path, const std::vector<std::string>& inputs = {});

// Whether `a` and `b` name the same file: by identity where both exist (links
// and other spellings included), else by their absolute, normalised paths.
bool same_file(const std::string& a, const std::string& b);

}  // namespace tr
