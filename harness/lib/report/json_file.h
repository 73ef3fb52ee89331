#pragma once
// Reading a JSON document from a file the user named (a report, a plan file):
// the one place that turns every way such a file can be wrong into a one-line
// UserError naming the file, and, where the document itself is wrong, the JSON
// path ("benchmarks[3].real_time").
//
// Refused: a path that does not exist or is not a regular file (a directory,
// a FIFO, a device), text that is not JSON, a number out of a double's range
// (1e999, a 400-digit integer) and a key given twice in one object, which
// nlohmann/json would otherwise settle silently by keeping the last.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tr::bench {

// `what` names the kind of file in errors: "report 'x.json': ...".
nlohmann::json read_json_file(const std::string& path, const char* what);

// The whole text of a file the user named, with read_json_file's refusals of
// the path (a JSON Lines file is read this way, then parsed line by line).
std::string read_user_file(const std::string& path, const char* what);

// The same checks on text already read; `name` opens each error ("report 'x.json'").
nlohmann::json parse_json_text(std::string_view text, const std::string& name);

}  // namespace tr::bench
