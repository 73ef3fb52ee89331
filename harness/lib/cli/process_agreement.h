#pragma once
// Note [processes agree]
// Under mpirun or srun every process parses its own command line and reads
// its own data. Processes started differently (MPMD launches such as
// `mpirun -np 1 tr-train --seed 1 : -np 1 tr-train --seed 2`, a TR_*
// variable set for some processes, a data file that differs between nodes)
// would train apart without a word, and rank 0's result would silently change,
// or meet in different collectives and wait for the watchdog. So before the
// first step the processes compare what decides the result: the tool and its
// build, every flag given with its value, every TR_* environment variable,
// and a digest of the data each read. Epoch and step counts follow from these,
// so they agree by construction. A difference names the setting and the
// processes on every process (they all see the same lists) and exits 2.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tr {

class CliArgs;
class World;

struct RunSetting {
  std::string name;   // "--seed", "TR_X", "data", "build"
  std::string value;  // "(not given)" where a process lacks it
};

// The tool, its build, the flags in `args` and the TR_* environment, plus any
// `extra` settings (a data digest).
std::vector<RunSetting> run_settings(const std::string& tool, const CliArgs& args,
                                     const std::vector<RunSetting>& extra = {});

// Compares `mine` across the world's processes; throws UserError naming the
// first differing settings and which processes hold which value.
void check_processes_agree(World& world, const std::vector<RunSetting>& mine, std::chrono::milliseconds timeout);

// The comparison alone (testable without a world): "" when every process's
// list is the same, else the message.
std::string disagreement(const std::vector<std::vector<RunSetting>>& per_process);

}  // namespace tr
