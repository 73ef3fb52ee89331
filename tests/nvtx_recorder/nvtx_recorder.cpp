// A test-only NVTX injection library: loaded by the NVTX runtime through
// NVTX_INJECTION64_PATH, it records every domain range push/pop (with the
// registered string's text) to the file named by TR_NVTX_LOG, one line each:
//   push <thread> <domain> <name>
//   pop <thread> <domain>
// so a CPU-only CI test can assert the range names and their nesting without
// Nsight Systems.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex g_mu;
std::FILE* g_log = nullptr;

struct Domain {
  std::string name;
};

unsigned long thread_tag() {
  return static_cast<unsigned long>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name ? name : ""});
}

nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(strdup(s ? s : ""));
}

const char* domain_name(nvtxDomainHandle_t d) { return d ? reinterpret_cast<Domain*>(d)->name.c_str() : "(default)"; }

int NVTX_API push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const char* text = "?";
  if (a && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) text = reinterpret_cast<const char*>(a->message.registered);
  if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) text = a->message.ascii;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_log) std::fprintf(g_log, "push %lu %s %s\n", thread_tag(), domain_name(d), text);
  return 0;
}

int NVTX_API pop(nvtxDomainHandle_t d) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_log) std::fprintf(g_log, "pop %lu %s\n", thread_tag(), domain_name(d));
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* path = std::getenv("TR_NVTX_LOG");
  if (!path) return 0;
  g_log = std::fopen(path, "w");
  if (!g_log) return 0;
  std::setvbuf(g_log, nullptr, _IOLBF, 0);
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!cb) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  auto set = [&](unsigned id, auto fn) {
    if (id < size) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  };
  set(NVTX_CBID_CORE2_DomainCreateA, domain_create);
  set(NVTX_CBID_CORE2_DomainRegisterStringA, register_string);
  set(NVTX_CBID_CORE2_DomainRangePushEx, push_ex);
  set(NVTX_CBID_CORE2_DomainRangePop, pop);
  return 1;
}
