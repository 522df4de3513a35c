// The x86-64 level the CPU backend's vector code runs at: the highest the CPU has (AVX-512,
// AVX2 + FMA, or the baseline), or a lower one where the environment variable
// GPUCONV_CPU_ISA asks for it ("avx2" or "baseline"; "avx512" or unset: the CPU's; "avx512" also
// turns off the separable method's uint8 fixed point on AVX-512 VNNI, conv/separable_vnni.hpp), so that
// the AVX2 and baseline paths can be tested and timed on a machine with AVX-512. A level the
// CPU lacks is never chosen; any other value is ignored. Read once per process.
#pragma once

namespace gpuconv::fft::host {

enum class host_isa { baseline, avx2, avx512 };

host_isa selected_host_isa();
// AVX-512 VNNI where the selected level is AVX-512, the CPU has it and GPUCONV_CPU_ISA is not
// "avx512" (the separable method's uint8 fixed point, conv/separable_vnni.hpp)
bool selected_host_vnni();
const char* host_isa_name(host_isa isa);

}  // namespace gpuconv::fft::host
