#pragma once
// Where a run executes: host threads (the CPU reference) or CUDA devices.
namespace tr {

enum class Backend { Cpu, Cuda };

}  // namespace tr
