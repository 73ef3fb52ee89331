#pragma once
// Note [settings, not flags]
// The framework knows settings (the batch, the ranks, the width), not any
// tool's flags: a message names one with setting("batch"), which writes
// "{batch}". Each tool maps the settings it has to its own flags when it
// prints an error (harness/lib/cli/setting_flags.h), so "use a smaller {batch}"
// reads "use a smaller --batch" from tr-train; another caller sees the
// setting's name. tests/framework_settings.py keeps flags out of framework/.
#include <string>
#include <string_view>

namespace tr {

std::string setting(std::string_view name);

}  // namespace tr
