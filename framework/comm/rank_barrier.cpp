#include "framework/comm/rank_barrier.h"

#include "framework/core/error.h"

namespace tr {

RankBarrier::RankBarrier(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks), timeout_(timeout), here_(static_cast<size_t>(ranks), false) {
  TR_CHECK(ranks >= 1, "barrier needs ranks");
}

void RankBarrier::arrive_and_wait(int rank, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!aborted_.empty()) throw Fault(cat("rank ", rank, ": ", what, ": ", aborted_));
  const uint64_t gen = generation_;
  here_[static_cast<size_t>(rank)] = true;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    std::fill(here_.begin(), here_.end(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  const bool done = cv_.wait_for(lock, timeout_, [&] { return generation_ != gen || !aborted_.empty(); });
  if (!aborted_.empty() && generation_ == gen) throw Fault(cat("rank ", rank, ": ", what, ": ", aborted_));
  if (!done) {
    std::string missing;
    for (int r = 0; r < ranks_; ++r) {
      if (here_[static_cast<size_t>(r)]) continue;
      if (!missing.empty()) missing += ',';
      missing += std::to_string(r);
    }
    aborted_ = cat("watchdog: rank(s) ", missing, " did not reach ", what, " within ", timeout_.count(), " ms");
    cv_.notify_all();
    throw Fault(cat("rank ", rank, ": ", aborted_));
  }
}

void RankBarrier::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.empty()) aborted_ = why;
  cv_.notify_all();
}

}  // namespace tr
