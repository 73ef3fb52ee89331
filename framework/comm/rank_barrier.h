#pragma once
// A reusable barrier for the rank threads of one process, with a watchdog: a
// rank that waits longer than the timeout gets an Error naming the collective
// and the ranks that never arrived, instead of hanging forever. Any rank's
// failure (abort) releases every waiter with an error too.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tr {

class RankBarrier {
 public:
  RankBarrier(int ranks, std::chrono::milliseconds timeout);
  // Blocks until all ranks arrived. `what` names the collective for errors.
  void arrive_and_wait(int rank, const std::string& what);
  // Wakes every waiter with an error (a rank failed; nobody should hang).
  void abort(const std::string& why);
  int ranks() const { return ranks_; }

 private:
  int ranks_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<bool> here_;
  std::string aborted_;
};

}  // namespace tr
