#pragma once
// Looking at and reading a data file the user named, the same way for every
// reader (IDX images, token shards, text corpora): only a regular file is ever
// opened, since opening a FIFO blocks until a writer comes. A symbolic link is
// followed; a loop of them, or a path that cannot be looked up, is named as
// such rather than called missing. Every refusal is a tr::UserError of one
// line, "<path>: <what is wrong>", where `expected` ("an IDX file") says what
// the caller wanted.
#include <string>

namespace tr::data {

enum class PathKind { Missing, Regular, Directory };

// What `path` names, from its metadata alone; anything other than a regular
// file, a directory or nothing (a FIFO, a socket, a device) is refused.
PathKind path_kind(const std::string& path, const std::string& expected);

// The whole content of the regular file `path`: refused when it is missing,
// a directory or any other kind of file, or cannot be opened or read.
std::string read_regular_file(const std::string& path, const std::string& expected);

}  // namespace tr::data
