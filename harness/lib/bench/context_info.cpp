#include "harness/lib/bench/context_info.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/lib/bench/nvml.h"
#include "tr_git_commit.h"  // build/generated, cmake/git_commit.cmake

namespace tr::bench {
namespace {

std::string cpu_model(double* mhz) {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model.empty()) model = val;
    if (key == "cpu MHz" && *mhz == 0) *mhz = std::atof(val.c_str());
  }
  return model.empty() ? "unknown CPU" : model;
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  std::string s = buf;  // +hhmm -> +hh:mm as Google Benchmark writes it
  if (s.size() > 5) s.insert(s.size() - 2, 1, ':');
  return s;
}

}  // namespace

BenchContext collect_context(Backend b, const std::string& command_line, World* world) {
  BenchContext c;
  c.date = iso_now();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  c.host_name = host;
  std::error_code ec;
  c.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  c.num_cpus = static_cast<int>(std::thread::hardware_concurrency());
#ifdef NDEBUG
  c.build_type = "release";
#else
  c.build_type = "debug";
#endif
  c.git_commit = TR_GIT_COMMIT;  // tr_git_commit.h, written at build time
  c.command_line = command_line;
  const std::string cpu = cpu_model(&c.mhz_per_cpu);
  if (b == Backend::Cuda) {
    c.device_kind = "cuda";
    fill_cuda_context(c);
    // Note [machine state]: the first GPU's clocks, limits and modes ("unavailable" and why without NVML).
    c.gpu_state = Nvml::get().state(cuda_pci_bus_id(0));
  } else {
    c.device_kind = "cpu";
    c.device_name = cpu;
    c.driver_version = c.cuda_runtime_version = c.cudnn_version = c.nccl_version = "none";
    c.gpu_state = {{"nvml", "cpu"}};
  }
  c.hosts = c.host_name;
  if (world) {
    c.launch = world->launch_kind();
    c.processes = world->processes();
    c.mpi_version = world->library();
    c.launcher = world->launcher();
    c.hosts.clear();
    for (const std::string& h : world->hosts()) c.hosts += (c.hosts.empty() ? "" : ",") + h;
  }
  return c;
}

#ifndef TR_HAVE_CUDA
void fill_cuda_context(BenchContext& c) {
  c.device_name = "none";
  c.driver_version = c.cuda_runtime_version = c.cudnn_version = c.nccl_version = "none";
}
#endif

}  // namespace tr::bench
