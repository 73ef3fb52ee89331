#include "harness/lib/bench/cupti_probe.h"

namespace tr::bench {

#ifndef TR_HAVE_CUDA
namespace {
class NoCupti final : public CuptiProbe {
 public:
  void start(int, bool) override {}
  void record() override {}
  CuptiCounts stop() override { return {}; }
  const std::string& note() const override { return note_; }

 private:
  std::string note_ = "CUPTI unavailable: built without CUDA";
};
}  // namespace

std::unique_ptr<CuptiProbe> CuptiProbe::create() { return std::make_unique<NoCupti>(); }
#endif

}  // namespace tr::bench
