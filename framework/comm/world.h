#pragma once
// The processes of one run. Note [processes and ranks]: a run has R ranks (one
// per GPU, or per CPU rank thread). Launched plainly, one process holds all R
// as threads and there is no World. Launched by mpirun or srun, P processes
// each hold L = R / P consecutive ranks as threads: process p holds the global
// ranks p*L .. p*L + L-1 (L is --gpus-per-process, 1 by default). Everything a
// kernel, a communicator or the data sharding sees is the global rank; only
// the containers of one process (its contexts, its captured executables) are
// indexed by the local rank, rank - p*L.
//
// Every collective here waits at most `timeout` and then throws an Error
// naming what it waited for: a stalled or dead process becomes an error on the
// others instead of a hang (the tools then end the whole job, see finish()).
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tr {

class World {
 public:
  using ms = std::chrono::milliseconds;
  virtual ~World() = default;

  virtual int process() const = 0;  // this process's index, 0 .. processes()-1
  virtual int processes() const = 0;
  virtual int node_process() const = 0;                       // index among the processes of this host (picks the GPU)
  virtual const std::vector<std::string>& hosts() const = 0;  // per process
  virtual std::string library() const = 0;                    // "Open MPI v4.1.4, ..."
  // "processes" (one host) or "nodes" (several hosts).
  std::string launch_kind() const;
  // Which launcher started the processes: "mpirun", "srun" or "pmi" (another
  // PMI launcher), as launcher_name() read it before MPI started.
  const std::string& launcher() const { return launcher_; }

  virtual void barrier(const std::string& what, ms timeout) = 0;
  virtual void broadcast(void* data, size_t bytes, int root, const std::string& what, ms timeout) = 0;
  // Every process contributes `bytes`; the result is processes() * bytes, in process order.
  virtual std::vector<std::byte> allgather(const void* mine, size_t bytes, const std::string& what, ms timeout) = 0;
  // send holds processes() blocks of `bytes`, block q for process q; recv
  // receives process q's block for this process at q * bytes.
  virtual void alltoall(const void* send, void* recv, size_t bytes, const std::string& what, ms timeout) = 0;
  // The first n processes as a world of their own (tr-bench's smaller rank
  // counts); the others get nullptr. Collective over this world.
  virtual std::unique_ptr<World> first(int n) = 0;

  // Ends the whole job after a failure with `code`. If every process failed
  // (they meet within `grace`), each exits normally with the code after
  // printing its own error; otherwise the job is aborted, so that no process
  // is left waiting for this one.
  [[noreturn]] virtual void fail(int code, ms grace) = 0;
  // A normal end (MPI_Finalize).
  virtual void finish() = 0;

  // Variable-length allgather built on allgather(): each process's string.
  std::vector<std::string> allgather_strings(const std::string& mine, const std::string& what, ms timeout);

 protected:
  std::string launcher_ = "pmi";
};

// The MPI world when this process was started by mpirun or srun (their
// environment variables say so), else nullptr: a plain launch runs as one
// process. A launcher's environment in a build without MPI is an error unless
// it started one process only.
std::unique_ptr<World> join_world(int* argc, char*** argv);
// Which launcher's variables are set ("" when none): OMPI_COMM_WORLD_SIZE,
// PMIX_RANK, PMI_SIZE, or SLURM_STEP_NUM_TASKS above 1 (a batch script's own
// step has 1 task and is a plain launch). For messages and tests.
std::string launcher_in_environment();
// The launcher those variables name: "mpirun" (Open MPI's OMPI_COMM_WORLD_SIZE),
// "srun" (a Slurm step of more than one task, or PMI variables inside a Slurm
// step), "pmi" (PMI variables from another launcher), "" for none.
std::string launcher_name();

}  // namespace tr
