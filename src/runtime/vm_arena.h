// The VM's per-device memory plan (internal to the runtime library). A function's intermediates
// on the VM's device whose shapes are static are placed, when the VM is made, in one arena per
// run (runtime/memory_plan.h: buffers whose lifetimes overlap never share bytes), so a run on
// the GPU makes one device allocation instead of one per tensor, and a captured CUDA Graph keeps
// one buffer. Lifetimes come from the bytecode: a buffer lives from the instruction writing it
// to the last instruction that reads any register aliasing it (views, tuples, moves, calls that
// may return an argument). Buffers that can escape the run (returned, directly or through an
// alias) are left to the allocator.
#pragma once

#include <cstdint>
#include <vector>

#include "partita/runtime/executable.h"

namespace partita::runtime {

struct FunctionArena {
  /// Per instruction, per output: the byte offset in the arena, or -1 (allocated on its own).
  std::vector<std::vector<int64_t>> offsets;
  size_t bytes = 0;  // the arena's size; 0: nothing planned
  int64_t planned = 0;
};

/// Plans `f`'s outputs that `out_devices` puts on `device` (per instruction, per output; the
/// VM's resolution of TensorSpec::device). `may_alias_input[k]` says that kernel k's result may
/// be its input itself (the device copy, when the input is already there). Functions with a
/// backward jump get no plan. `alignment` is each buffer's (CUDA's 256 bytes).
FunctionArena plan_function_arena(const VMFunction& f, const std::vector<std::vector<Device>>& out_devices,
                                  Device device, const std::vector<bool>& may_alias_input,
                                  size_t alignment = 256);

}  // namespace partita::runtime
