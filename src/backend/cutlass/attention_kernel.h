// Attention kernels of the cutlass backend. On sm90, where it applies (sm90_attention_class),
// CUTLASS's Hopper FMHA (its example 88); otherwise, and for every call on older GPUs, CUTLASS's
// fused multi-head attention (the forward kernel of its example 41, `kernel_forward.h`, the
// kernel TVM's CUTLASS attention offload instantiates). The nvidia-cutlass wheel ships both
// beside the headers. One compilation unit per class: for example 41's kernel, dtype, the bound on the head dimension (64 or 128: the kernel keeps a query block's
// output in registers up to it) and whether it adds a bias. Its tiles are xformers' for sm80 and
// later (64 queries x 64 keys up to head dimension 64, 32 x 128 up to 128); the kernel runs on
// sm90 as it is (mma.sync, no TMA). Each unit is shared by every module and cached by its source
// hash (about 16 s of nvcc).
#pragma once

#include <optional>
#include <string>

#include "fused_op.h"
#include "partita/runtime/data_type.h"

namespace partita::backend::cutlass {

struct AttentionClass {
  DataType dtype;    // float16 or bfloat16
  int max_k = 64;    // 64 or 128: the head dimension's bound (sm90: the head dimension itself)
  bool bias = false;
  int queries = 64, keys = 64;  // the block's tile: multiples of 32, keys ≥ max_k
  // CUTLASS's Hopper FMHA (example 88: TMA loads, warp-group MMA, two consumer warp groups on
  // 128 queries) instead of example 41's kernel; `causal` compiles in the top-left mask.
  bool sm90 = false, causal = false;
  // The Hopper kernel's schedule: "cooperative" (one tile per CTA), "persistent" (CTAs walk the
  // tiles), "pingpong" (persistent, query loads apart, the two warp groups alternating).
  std::string schedule = "cooperative";
  std::string id() const;  // e.g. "f16_k64_bias" (with its tile when not the default, "..._q32x128"), "f16_d64_sm90"
};

/// Example 41's class for head dimensions up to `head_dim` (≤ 128), with the target's
/// `attention_tile` ("" for the default of the head dimension, else "<queries>x<keys>";
/// throws Error("ValueError") for a tile the kernel cannot take).
AttentionClass attention_class(DataType dtype, int64_t head_dim, bool bias, const std::string& tile = "");

/// The Hopper kernel's class for an attention call, where it applies: float16, no bias, no
/// mask or a top-left one over as many keys as queries, equal head dimensions of 64 or 128,
/// a static query length that is a multiple of 8 (its TMA rows), the default scale 1 / √D
/// (the kernel's own). Else nullopt: example 41's kernel runs it. `schedule` and `tile` are the
/// target's attention_schedule and attention_tile ("" for the defaults: cooperative, 128 queries
/// x 64 keys for head dimension 64, x 128 for 128; a tile other than 128x64 and 128x128 is
/// example 41's, and gives nullopt; a schedule other than cooperative, persistent and pingpong
/// throws Error("ValueError")).
std::optional<AttentionClass> sm90_attention_class(const AttentionCall& a, const std::string& schedule = "",
                                                   const std::string& tile = "");

/// The class that runs `a` for a target of architecture `sm` with its attention options:
/// `kernel` "sm80" keeps example 41's kernel everywhere, else the Hopper kernel where
/// sm90_attention_class gives one.
AttentionClass choose_attention_class(const AttentionCall& a, int64_t sm, const std::string& kernel,
                                      const std::string& tile, const std::string& schedule);

/// The C symbol of a unit's entry point: `pt_attention_<class>`.
std::string attention_symbol(const AttentionClass& c);
/// The whole source of the unit.
std::string attention_unit_source(const AttentionClass& c);

}  // namespace partita::backend::cutlass
