#include "framework/comm/world.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

#include "framework/core/error.h"

namespace tr {

std::string World::launch_kind() const {
  const std::set<std::string> distinct(hosts().begin(), hosts().end());
  return distinct.size() > 1 ? "nodes" : "processes";
}

std::vector<std::string> World::allgather_strings(const std::string& mine, const std::string& what, ms timeout) {
  // Two rounds: the lengths, then every string padded to the longest.
  const uint64_t len = mine.size();
  const auto lens_raw = allgather(&len, sizeof len, what + " (lengths)", timeout);
  std::vector<uint64_t> lens(static_cast<size_t>(processes()));
  std::memcpy(lens.data(), lens_raw.data(), lens_raw.size());
  uint64_t longest = 1;
  for (uint64_t l : lens) longest = std::max(longest, l);
  std::string padded = mine;
  padded.resize(longest, '\0');
  const auto all = allgather(padded.data(), longest, what, timeout);
  std::vector<std::string> out;
  for (int p = 0; p < processes(); ++p)
    out.emplace_back(reinterpret_cast<const char*>(all.data()) + p * longest, lens[static_cast<size_t>(p)]);
  return out;
}

std::string launcher_in_environment() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return v;
  // A Slurm batch script's own step has one task: a tool started there without
  // srun is a plain launch, not a world of one.
  if (const char* n = std::getenv("SLURM_STEP_NUM_TASKS"); n && std::strcmp(n, "1") != 0) return "SLURM_STEP_NUM_TASKS";
  return "";
}

std::string launcher_name() {
  const std::string var = launcher_in_environment();
  if (var.empty()) return "";
  if (var == "OMPI_COMM_WORLD_SIZE") return "mpirun";
  if (var == "SLURM_STEP_NUM_TASKS" || std::getenv("SLURM_STEP_ID")) return "srun";
  return "pmi";
}

#ifndef TR_HAVE_MPI
std::unique_ptr<World> join_world(int*, char***) {
  const std::string var = launcher_in_environment();
  if (var.empty()) return nullptr;
  // One process under a launcher is the same as a plain launch.
  for (const char* size : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* s = std::getenv(size); s && std::strcmp(s, "1") != 0)
      throw UserError(cat("started by a launcher with ", size, "=", s,
                          " but this build of tr has no MPI (install libopenmpi-dev and configure with -DTR_MPI=ON)"));
  return nullptr;
}
#endif

}  // namespace tr
