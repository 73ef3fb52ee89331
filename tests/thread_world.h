#pragma once
// A World whose "processes" are threads of the test binary (Note [processes
// and ranks]): the multi-process code paths (ProcessComm, the collective
// sequence check across processes, the metrics gathered across processes) run
// without MPI, so CI can check them under ASan and TSan too. Each thread
// makes its ThreadWorld from one shared ThreadWorldHub.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/comm/world.h"
#include "framework/core/error.h"

namespace tr::testing {

// What the P threads share: one exchange at a time, every thread posting its
// bytes and leaving with everyone's.
class ThreadWorldHub {
 public:
  explicit ThreadWorldHub(int processes)
      : posted_(static_cast<size_t>(processes)), here_(static_cast<size_t>(processes), false) {}
  int processes() const { return int(posted_.size()); }

  std::vector<std::vector<std::byte>> exchange(int p, std::vector<std::byte> mine, const std::string& what,
                                               std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t gen = generation_;
    posted_[size_t(p)] = std::move(mine);
    here_[size_t(p)] = true;
    if (++arrived_ == processes()) {
      done_ = posted_;  // the last to arrive publishes this round
      arrived_ = 0;
      std::fill(here_.begin(), here_.end(), false);
      ++generation_;
      cv_.notify_all();
      return done_;
    }
    // Nobody starts the next round before every thread has left this one (it
    // needs all of them), so done_ still holds this round when a waiter wakes.
    if (!cv_.wait_for(lock, timeout, [&] { return generation_ != gen; })) {
      // As the MPI world says it (framework/comm/mpi_world_mpi.cpp): who did not come.
      std::string missing;
      for (int q = 0; q < processes(); ++q)
        if (!here_[size_t(q)]) missing += cat(missing.empty() ? "" : "; ", "process ", q, " did not arrive");
      throw Fault(cat("watchdog: process ", p, " of ", processes(), " waited ", timeout.count(), " ms in ", what,
                      " for the other processes: ", missing));
    }
    return done_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::byte>> posted_, done_;
  std::vector<bool> here_;  // this round
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

class ThreadWorld final : public World {
 public:
  // Every "process" on one host, or on the hosts named (one per process): a
  // process's index on its host counts the processes before it on the same
  // host, as MPI's shared-memory split numbers them.
  ThreadWorld(std::shared_ptr<ThreadWorldHub> hub, int process, std::vector<std::string> hosts = {})
      : hub_(std::move(hub)), p_(process), hosts_(std::move(hosts)) {
    if (hosts_.empty()) hosts_.assign(static_cast<size_t>(hub_->processes()), "thread-host");
    TR_CHECK(int(hosts_.size()) == hub_->processes(), "one host name per process");
    for (int q = 0; q < p_; ++q) node_process_ += hosts_[size_t(q)] == hosts_[size_t(p_)];
  }

  int process() const override { return p_; }
  int processes() const override { return hub_->processes(); }
  int node_process() const override { return node_process_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::string library() const override { return "test threads"; }

  void barrier(const std::string& what, ms timeout) override { hub_->exchange(p_, {}, what, timeout); }
  void broadcast(void* data, size_t bytes, int root, const std::string& what, ms timeout) override {
    const auto all = hub_->exchange(p_, bytes_of(data, bytes), what, timeout);
    std::memcpy(data, all[size_t(root)].data(), bytes);
  }
  std::vector<std::byte> allgather(const void* mine, size_t bytes, const std::string& what, ms timeout) override {
    const auto all = hub_->exchange(p_, bytes_of(mine, bytes), what, timeout);
    std::vector<std::byte> out;
    for (const auto& b : all) {
      TR_CHECK(b.size() == bytes, what, ": processes posted ", b.size(), " and ", bytes, " bytes");
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  }
  void alltoall(const void* send, void* recv, size_t bytes, const std::string& what, ms timeout) override {
    const auto all = hub_->exchange(p_, bytes_of(send, bytes * size_t(processes())), what, timeout);
    for (int q = 0; q < processes(); ++q) {
      TR_CHECK(all[size_t(q)].size() == bytes * size_t(processes()), what, ": process ", q, " posted other sizes");
      std::memcpy(static_cast<std::byte*>(recv) + size_t(q) * bytes, all[size_t(q)].data() + size_t(p_) * bytes, bytes);
    }
  }
  std::unique_ptr<World> first(int) override { throw Error("ThreadWorld::first: not used by the tests"); }
  void fail(int, ms) override {}
  void finish() override {}

 private:
  static std::vector<std::byte> bytes_of(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    return std::vector<std::byte>(b, b + n);
  }
  std::shared_ptr<ThreadWorldHub> hub_;
  int p_;
  std::vector<std::string> hosts_;
  int node_process_ = 0;
};

}  // namespace tr::testing
