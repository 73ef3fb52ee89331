// CUPTI probe through dlopen (see cupti_probe.h).
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "harness/lib/bench/busy_fraction.h"
#include "harness/lib/bench/cupti_probe.h"

namespace tr::bench {
namespace {

struct Api {
  void* lib = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;

  bool load(std::string* why) {
    for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) {
      *why = "CUPTI unavailable: libcupti.so not found (add its folder to LD_LIBRARY_PATH)";
      return false;
    }
    bool ok = true;
    auto sym = [&](auto& f, const char* n) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lib, n));
      ok = ok && f != nullptr;
    };
    sym(subscribe, "cuptiSubscribe");
    sym(unsubscribe, "cuptiUnsubscribe");
    sym(enable_domain, "cuptiEnableDomain");
    sym(activity_enable, "cuptiActivityEnable");
    sym(activity_disable, "cuptiActivityDisable");
    sym(register_callbacks, "cuptiActivityRegisterCallbacks");
    sym(flush_all, "cuptiActivityFlushAll");
    sym(next_record, "cuptiActivityGetNextRecord");
    sym(result_string, "cuptiGetResultString");
    if (!ok) *why = "CUPTI unavailable: libcupti.so lacks expected symbols";
    return ok;
  }
};

// CUPTI's callbacks are plain functions; they reach the probe through these.
struct Shared {
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;         // kernel [start, end) ns
  std::map<std::string, std::pair<int64_t, uint64_t>> by_name;  // mangled name -> (count, ns)
  struct Raw {
    uint64_t start, end;
    uint32_t stream;
    const std::string* mangled;  // a key of by_name
  };
  std::vector<Raw> records;  // when keep_records
  bool keep_records = false;
  int64_t kernel_launches = 0, graph_launches = 0, memcpy_async = 0;
  bool recording = false;
  uint32_t device = 0;  // kernel records of this device only
};
Shared& shared() {
  static Shared s;
  return s;
}
// Names of the memset and memcpy records in a kernel trace (not kernels: they
// count in neither the busy fraction nor the kernel totals).
const std::string kMemsetName = "[memset]";
const std::string kMemcpyName = "[memcpy]";
thread_local int api_depth = 0;  // > 0 inside a runtime call: its driver calls are not counted again

const Api* g_api = nullptr;

// "_ZN2tr12_GLOBAL__N_18bn_statsILi8EEEvPK6__halfPfiii" -> "tr::bn_stats<8>"
std::string readable_kernel_name(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : mangled;
  std::free(d);
  for (const std::string noise : {"(anonymous namespace)::", "void "})
    for (size_t at; (at = s.find(noise)) != std::string::npos;) s.erase(at, noise.size());
  // Drop the argument list (the last top-level parenthesis group).
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0 && i > 0) {
      s.resize(i);
      break;
    }
  }
  return s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = kBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> local;
  std::vector<uint32_t> devices, streams;
  std::vector<std::string> names;                        // copied: the record's name lives in the buffer freed below
  std::vector<std::pair<Shared::Raw, uint32_t>> memops;  // (record, device): traced only
  while (g_api->next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel9*>(rec);
      local.emplace_back(k->start, k->end);
      devices.push_back(k->deviceId);
      streams.push_back(k->streamId);
      names.emplace_back(k->name ? k->name : "?");
    }
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      memops.push_back({{m->start, m->end, m->streamId, &kMemsetName}, m->deviceId});
    }
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      memops.push_back({{m->start, m->end, m->streamId, &kMemcpyName}, m->deviceId});
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(shared().mu);
  if (!shared().recording) return;
  for (const auto& [raw, device] : memops)
    if (shared().keep_records && device == shared().device) shared().records.push_back(raw);
  for (size_t i = 0; i < local.size(); ++i) {
    if (devices[i] != shared().device) continue;
    shared().intervals.push_back(local[i]);
    auto it = shared().by_name.try_emplace(names[i]).first;
    ++it->second.first;
    it->second.second += local[i].second - local[i].first;
    if (shared().keep_records) shared().records.push_back({local[i].first, local[i].second, streams[i], &it->first});
  }
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  Shared& s = shared();
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      ++api_depth;
      switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: ++s.kernel_launches; break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: ++s.graph_launches; break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: ++s.memcpy_async; break;
        default: break;
      }
    } else {
      --api_depth;
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER || api_depth > 0) return;
  switch (id) {  // libraries (cuDNN, cuBLAS) that call the driver directly
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: ++s.kernel_launches; break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: ++s.graph_launches; break;
    default: break;
  }
}

class Cupti final : public CuptiProbe {
 public:
  Cupti() {
    if (!api_.load(&note_)) return;
    g_api = &api_;
    const CUptiResult r = api_.subscribe(&sub_, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr);
    if (r != CUPTI_SUCCESS) {
      const char* msg = nullptr;
      api_.result_string(r, &msg);
      note_ = std::string("CUPTI unavailable: ") + (msg ? msg : "cuptiSubscribe failed") +
              (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? " (another profiler holds CUPTI)" : "") +
              "; launch cross-check and GPU busy time are not reported";
      sub_ = nullptr;
      return;
    }
    api_.enable_domain(1, sub_, CUPTI_CB_DOMAIN_RUNTIME_API);
    api_.enable_domain(1, sub_, CUPTI_CB_DOMAIN_DRIVER_API);
    api_.register_callbacks(buffer_requested, buffer_completed);
    ok_ = true;
  }
  ~Cupti() override {
    if (sub_) api_.unsubscribe(sub_);
  }
  void start(int device, bool keep_records) override {
    if (!ok_) return;
    Shared& s = shared();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.device = static_cast<uint32_t>(device);
      s.recording = false;
      s.keep_records = keep_records;
    }
    api_.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (keep_records) {
      api_.activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
      api_.activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    }
  }
  void record() override {
    if (!ok_) return;
    api_.flush_all(1);  // the warm-up's records arrive now and are dropped (recording is off)
    Shared& s = shared();
    std::lock_guard<std::mutex> lock(s.mu);
    s.intervals.clear();
    s.records.clear();
    s.by_name.clear();
    s.kernel_launches = s.graph_launches = s.memcpy_async = 0;
    s.recording = true;
  }
  CuptiCounts stop() override {
    CuptiCounts c;
    if (!ok_) return c;
    api_.flush_all(1);
    Shared& s = shared();
    api_.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (s.keep_records) {
      api_.activity_disable(CUPTI_ACTIVITY_KIND_MEMSET);
      api_.activity_disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    }
    std::lock_guard<std::mutex> lock(s.mu);
    s.recording = false;
    c.valid = true;
    c.kernel_launches = s.kernel_launches;
    c.graph_launches = s.graph_launches;
    c.memcpy_async = s.memcpy_async;
    c.kernels_executed = static_cast<int64_t>(s.intervals.size());
    const KernelCoverage cov = kernel_coverage(s.intervals);
    c.kernel_ms_sum = cov.sum_ms;
    c.kernel_ms_union = cov.union_ms;
    c.kernel_ms_span = cov.span_ms;
    // Kernels that differ only in their template arguments' values stay apart;
    // the same function under two mangled names would merge here.
    std::map<std::string, KernelTotal> merged;
    for (const auto& [mangled, t] : s.by_name) {
      KernelTotal& k = merged[readable_kernel_name(mangled)];
      k.count += t.first;
      k.ms += double(t.second) * 1e-6;
    }
    for (auto& [name, k] : merged) {
      k.name = name;
      c.kernels.push_back(k);
    }
    std::sort(c.kernels.begin(), c.kernels.end(),
              [](const KernelTotal& a, const KernelTotal& b) { return a.ms > b.ms; });
    std::map<const std::string*, std::string> readable;
    for (const Shared::Raw& r : s.records) {
      auto [it, fresh] = readable.try_emplace(r.mangled);
      if (fresh) it->second = readable_kernel_name(*r.mangled);
      c.records.push_back({it->second, r.stream, r.start, r.end});
    }
    std::sort(c.records.begin(), c.records.end(),
              [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
    s.records.clear();
    return c;
  }
  const std::string& note() const override { return note_; }

 private:
  Api api_;
  CUpti_SubscriberHandle sub_ = nullptr;
  bool ok_ = false;
  std::string note_;
};

}  // namespace

std::unique_ptr<CuptiProbe> CuptiProbe::create() { return std::make_unique<Cupti>(); }

}  // namespace tr::bench
