#pragma once
// The exit-code contract of every tr tool: a UserError (bad flags, files,
// values, a batch that does not fit) and a failed host allocation print one
// line and exit 2; a Fault (a stalled or dead peer) prints one line and exits
// 1; anything else is an internal error, exit 1.
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
#include <new>
#include <string>

#include "framework/comm/world.h"
#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "harness/lib/cli/setting_flags.h"

namespace tr {

template <typename Fn>
int run_cli(const char* tool, Fn&& fn) {
  try {
    return fn();
  } catch (const UserError& e) {  // the framework names settings; print their flags (Note [settings, not flags])
    std::fprintf(stderr, "%s: error: %s\n", tool, with_flags(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    // Too little host memory for what was asked (a batch, a dataset): the
    // user's to change, so exit 2 like any input that cannot be run.
    const int64_t available = host_available_bytes();
    std::fprintf(stderr,
                 "%s: error: out of host memory: an allocation failed with %s available; use a smaller --batch or "
                 "fewer --ranks\n",
                 tool, available < 0 ? "an unknown amount" : bytes_and_gib(available).c_str());
    return 2;
  } catch (const Fault& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, with_flags(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, with_flags(e.what()).c_str());
    return 1;
  }
}

// fn(World*): the world, or null for a plain launch.
template <typename Fn>
int run_cli_world(const char* tool, int* argc, char*** argv, Fn&& fn) {
  // Line by line even into a pipe: a launcher's pipe (srun, mpirun) would
  // otherwise hold the lines of a step that is cancelled or killed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
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
