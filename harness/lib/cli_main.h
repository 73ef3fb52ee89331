#pragma once
// The exit-code contract of every tr tool: a UserError (bad flags, files,
// values) prints one line and exits 2; any other failure exits 1.
//
// Under mpirun or srun (Note [processes and ranks]) run_cli_world joins the
// MPI world first. Only process 0 writes to stdout (one table, one report);
// every process prints its own errors, tagged with its number. A failure ends
// the whole job within a couple of seconds: normally when every process
// failed (a mismatch all of them saw), by aborting the job otherwise, so no
// process waits for a dead one.
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "framework/comm/world.h"
#include "framework/core/error.h"

namespace tr {

template <typename Fn>
int run_cli(const char* tool, Fn&& fn) {
  try {
    return fn();
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return 1;
  }
}

// fn(World*): the world, or null for a plain launch.
template <typename Fn>
int run_cli_world(const char* tool, int* argc, char*** argv, Fn&& fn) {
  std::unique_ptr<World> world;
  int code = run_cli(tool, [&] {
    world = join_world(argc, argv);
    return 0;
  });
  if (code != 0) return code;
  std::string name = tool;
  if (world) {
    name = cat(tool, " [process ", world->process(), " of ", world->processes(), "]");
    if (world->process() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
      std::fprintf(stderr, "%s: could not silence stdout\n", name.c_str());
  }
  code = run_cli(name.c_str(), [&] { return fn(world.get()); });
  std::fflush(stdout);
  std::fflush(stderr);
  if (world && code != 0) world->fail(code, std::chrono::seconds(2));
  return code;  // the world ends here (MPI_Finalize)
}

}  // namespace tr
