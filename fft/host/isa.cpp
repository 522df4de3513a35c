#include "isa.hpp"

#include <cstdlib>
#include <cstring>

namespace gpuconv::fft::host {

namespace {

host_isa cpu_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return host_isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return host_isa::avx2;
#endif
  return host_isa::baseline;
}

const char* isa_request() { return std::getenv("GPUCONV_CPU_ISA"); }

}  // namespace

host_isa selected_host_isa() {
  static const host_isa isa = [] {
    const host_isa cpu = cpu_isa();
    const char* e = isa_request();
    host_isa asked = cpu;
    if (e != nullptr && std::strcmp(e, "avx2") == 0) asked = host_isa::avx2;
    if (e != nullptr && std::strcmp(e, "baseline") == 0) asked = host_isa::baseline;
    return asked < cpu ? asked : cpu;
  }();
  return isa;
}

bool selected_host_vnni() {
  static const bool on = [] {
    if (selected_host_isa() != host_isa::avx512) return false;
    const char* e = isa_request();
    if (e != nullptr && std::strcmp(e, "avx512") == 0) return false;
#if defined(__x86_64__)
    return bool(__builtin_cpu_supports("avx512vnni"));
#else
    return false;
#endif
  }();
  return on;
}

const char* host_isa_name(host_isa isa) {
  switch (isa) {
    case host_isa::avx512: return "avx512";
    case host_isa::avx2: return "avx2";
    default: return "baseline";
  }
}

}  // namespace gpuconv::fft::host
