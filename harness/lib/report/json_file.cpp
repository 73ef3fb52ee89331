#include "harness/lib/report/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "framework/core/error.h"

namespace tr::bench {

namespace {

using json = nlohmann::json;

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

// "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ...",
// cut to a line's length (a 400-digit number is quoted whole by the parser).
std::string without_tag(const std::string& what) {
  std::string s = what;
  const auto close = s.find("] ");
  if (s.rfind("[json.exception", 0) == 0 && close != std::string::npos) s = s.substr(close + 2);
  constexpr size_t kMax = 160;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

struct DuplicateKey {
  std::string path;
};

// Follows the parser's events to know where it is, and stops at the first key
// that its object already holds. Arrays count their finished elements, so the
// element being parsed is at index `index`.
class KeyTracker {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({true, {}, "", 0}); break;
      case json::parse_event_t::array_start: frames_.push_back({false, {}, "", 0}); break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) throw DuplicateKey{path()};
        break;
      }
      case json::parse_event_t::value: finish_element(); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        finish_element();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // objects: the key being parsed
    size_t index;     // arrays: the element being parsed
  };
  void finish_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) p += f.object ? (p.empty() ? "" : ".") + f.key : cat("[", f.index, "]");
    return p;
  }
  std::vector<Frame> frames_;
};

}  // namespace

json read_json_file(const std::string& path, const char* what) {
  return parse_json_text(read_user_file(path, what), cat(what, " '", path, "'"));
}

std::string read_user_file(const std::string& path, const char* what) {
  namespace fs = std::filesystem;
  const std::string name = cat(what, " '", path, "'");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw UserError(one_line(cat(name, ": no such file")));
  if (ec) throw UserError(one_line(cat(name, ": ", ec.message())));
  if (st.type() == fs::file_type::directory) throw UserError(one_line(cat(name, ": is a directory, not a file")));
  if (st.type() != fs::file_type::regular) throw UserError(one_line(cat(name, ": not a regular file")));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(one_line(cat(name, ": cannot open (", std::strerror(errno), ")")));
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) throw UserError(one_line(cat(name, ": cannot read (", std::strerror(errno), ")")));
  return text.str();
}

json parse_json_text(std::string_view text, const std::string& name) {
  try {
    return json::parse(text, KeyTracker{});
  } catch (const DuplicateKey& d) {
    throw UserError(one_line(cat(name, ": key '", d.path, "' appears twice; a report names each key once")));
  } catch (const json::out_of_range& e) {  // 406: a number beyond a double's range
    throw UserError(one_line(cat(name, ": a number is out of range (", without_tag(e.what()), ")")));
  } catch (const json::exception& e) {
    throw UserError(one_line(cat(name, ": not valid JSON (", without_tag(e.what()), ")")));
  }
}

}  // namespace tr::bench
