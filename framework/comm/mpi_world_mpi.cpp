// The World of an mpirun / srun launch (Note [processes and ranks]). Every
// collective is the non-blocking MPI call polled against a deadline, so a
// process that stalls or dies turns into a Fault on the others.
//
// Note [watchdog inquiry]
// A collective that times out cannot say by itself who is missing. So the
// process whose deadline passed asks every other process, on a communicator
// of its own, where it is; every process answers such questions while it
// waits in any collective. After a short grace the question has its answers:
// a process that answered from the same collective arrived; one that answered
// from another collective is named with it (a different epoch count, a
// different sequence of calls); one that did not answer is named as stalled
// in its own work, stopped, or dead.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "framework/comm/world.h"
#include "framework/core/error.h"
#include "framework/core/log.h"

namespace tr {
namespace {

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(cat("MPI: ", what, ": ", std::string(msg, static_cast<size_t>(len))));
}

class MpiWorld final : public World {
 public:
  // Takes ownership of `comm` unless it is MPI_COMM_WORLD (then `top` ends MPI).
  MpiWorld(MPI_Comm comm, bool top, std::string launcher) : comm_(comm), top_(top) {
    launcher_ = std::move(launcher);
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &process_), "Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &processes_), "Comm_size");
    // A communicator of its own for fail(): a failing process must not meet
    // the others inside a collective they posted on comm_.
    check_mpi(MPI_Comm_dup(comm_, &fail_comm_), "Comm_dup");
    check_mpi(MPI_Comm_dup(comm_, &inquiry_comm_), "Comm_dup (inquiries)");
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, process_, MPI_INFO_NULL, &node), "Comm_split_type");
    check_mpi(MPI_Comm_rank(node, &node_process_), "Comm_rank (node)");
    MPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    check_mpi(MPI_Get_processor_name(name, &len), "Get_processor_name");
    hosts_ = allgather_strings(std::string(name, static_cast<size_t>(len)), "host names", ms(120000));
  }
  ~MpiWorld() override {
    if (fail_comm_ != MPI_COMM_NULL) MPI_Comm_free(&fail_comm_);
    if (inquiry_comm_ != MPI_COMM_NULL) MPI_Comm_free(&inquiry_comm_);
    if (!top_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (top_) finish();
  }

  int process() const override { return process_; }
  int processes() const override { return processes_; }
  int node_process() const override { return node_process_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::string library() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    std::string s(v, static_cast<size_t>(len));
    return s.substr(0, s.find_first_of("\n,"));
  }

  void barrier(const std::string& what, ms timeout) override {
    MPI_Request r;
    begin(what);
    check_mpi(MPI_Ibarrier(comm_, &r), what);
    wait(r, what, timeout);
  }
  void broadcast(void* data, size_t bytes, int root, const std::string& what, ms timeout) override {
    MPI_Request r;
    begin(what);
    check_mpi(MPI_Ibcast(data, count(bytes), MPI_BYTE, root, comm_, &r), what);
    wait(r, what, timeout);
  }
  std::vector<std::byte> allgather(const void* mine, size_t bytes, const std::string& what, ms timeout) override {
    std::vector<std::byte> all(bytes * static_cast<size_t>(processes_));
    MPI_Request r;
    begin(what);
    check_mpi(MPI_Iallgather(mine, count(bytes), MPI_BYTE, all.data(), count(bytes), MPI_BYTE, comm_, &r), what);
    wait(r, what, timeout);
    return all;
  }
  void alltoall(const void* send, void* recv, size_t bytes, const std::string& what, ms timeout) override {
    MPI_Request r;
    begin(what);
    check_mpi(MPI_Ialltoall(send, count(bytes), MPI_BYTE, recv, count(bytes), MPI_BYTE, comm_, &r), what);
    wait(r, what, timeout);
  }
  std::unique_ptr<World> first(int n) override {
    TR_CHECK(n >= 1 && n <= processes_, "first(", n, ") of ", processes_, " processes");
    MPI_Comm sub = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, process_ < n ? 0 : MPI_UNDEFINED, process_, &sub), "Comm_split");
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiWorld>(sub, false, launcher_);
  }

  void fail(int code, ms grace) override {
    MPI_Request r;
    if (MPI_Ibarrier(fail_comm_, &r) == MPI_SUCCESS) {
      const auto deadline = std::chrono::steady_clock::now() + grace;
      int done = 0;
      while (MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (done) return;  // every process failed and printed its error: end normally
    }
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);  // some process is still running: end the job
    std::_Exit(code);                 // not reached: MPI_Abort does not return
  }
  void finish() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

 private:
  static int count(size_t bytes) {
    TR_CHECK(bytes <= size_t(INT32_MAX), "an MPI message of ", bytes, " bytes is larger than MPI's int count");
    return static_cast<int>(bytes);
  }
  void begin(const std::string& what) {
    ++collectives_;
    current_ = what;
  }
  void wait(MPI_Request& r, const std::string& what, ms timeout) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + timeout;
    int done = 0;
    for (int spins = 0;; ++spins) {
      check_mpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      answer_inquiries();
      if (std::chrono::steady_clock::now() >= deadline)
        throw Fault(cat("watchdog: process ", process_, " of ", processes_, " waited ", timeout.count(), " ms in ",
                        what, " (collective #", collectives_,
                        ") for the other processes: ", inquire(std::min(timeout, ms(1000)))));
      // Spin briefly (a step's all-reduce is short), then stop burning a core.
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Where this process is, for another's watchdog (Note [watchdog inquiry]).
  struct Whereabouts {
    uint64_t collective = 0;
    char what[120] = {};
  };
  static constexpr int kInquiryTag = 1, kAnswerTag = 2;

  void answer_inquiries() {
    int flag = 0;
    MPI_Status st;
    while (MPI_Iprobe(MPI_ANY_SOURCE, kInquiryTag, inquiry_comm_, &flag, &st) == MPI_SUCCESS && flag) {
      char question = 0;
      if (MPI_Recv(&question, 1, MPI_BYTE, st.MPI_SOURCE, kInquiryTag, inquiry_comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return;
      Whereabouts w;
      w.collective = collectives_;
      std::snprintf(w.what, sizeof w.what, "%s", current_.c_str());
      MPI_Send(&w, sizeof w, MPI_BYTE, st.MPI_SOURCE, kAnswerTag, inquiry_comm_);  // small: sent eagerly
    }
  }

  // Asks every other process where it is and waits `grace` for the answers;
  // returns who is missing and who is elsewhere, in words.
  std::string inquire(ms grace) {
    const char question = 0;
    std::vector<MPI_Request> asked;
    for (int q = 0; q < processes_; ++q) {
      if (q == process_) continue;
      MPI_Request r;
      if (MPI_Isend(&question, 1, MPI_BYTE, q, kInquiryTag, inquiry_comm_, &r) == MPI_SUCCESS) asked.push_back(r);
    }
    std::vector<std::optional<Whereabouts>> answers(static_cast<size_t>(processes_));
    int answered = 0;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (answered < processes_ - 1 && std::chrono::steady_clock::now() < deadline) {
      answer_inquiries();  // the others may be asking at the same time
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, inquiry_comm_, &flag, &st) != MPI_SUCCESS) break;
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      Whereabouts w;
      if (MPI_Recv(&w, sizeof w, MPI_BYTE, st.MPI_SOURCE, kAnswerTag, inquiry_comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        break;
      w.what[sizeof w.what - 1] = 0;
      auto& slot = answers[static_cast<size_t>(st.MPI_SOURCE)];
      if (!slot) ++answered;
      slot = w;
    }
    for (MPI_Request& r : asked) MPI_Request_free(&r);  // a dead process never takes its question
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
    for (int q = 0; q < processes_; ++q) {
      if (q == process_) continue;
      const auto& a = answers[static_cast<size_t>(q)];
      if (!a)
        add(cat("process ", q, " did not answer within ", grace.count(),
                " ms (stalled in its own work, stopped, or dead)"));
      else if (a->collective != collectives_ || current_ != a->what)
        add(cat("process ", q, " is in ", a->what, " (collective #", a->collective, ")"));
    }
    return out.empty() ? "every process answered from this collective, which MPI did not complete" : out;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm fail_comm_ = MPI_COMM_NULL;
  MPI_Comm inquiry_comm_ = MPI_COMM_NULL;  // Note [watchdog inquiry]
  uint64_t collectives_ = 0;               // begun on this world
  std::string current_;                    // the latest one's name
  bool top_ = false;
  int process_ = 0, processes_ = 1, node_process_ = 0;
  std::vector<std::string> hosts_;
};

}  // namespace

std::unique_ptr<World> join_world(int* argc, char*** argv) {
  const std::string launcher = launcher_name();  // before MPI adds variables of its own
  if (launcher.empty()) return nullptr;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Serialized: the rank threads of one process take turns (only the first
    // local rank's thread calls MPI during a step, the main thread otherwise).
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw Error(cat("MPI provides thread level ", provided, ", tr needs MPI_THREAD_SERIALIZED"));
  }
  trace("MPI: joined the world");
  return std::make_unique<MpiWorld>(MPI_COMM_WORLD, true, launcher);
}

}  // namespace tr
