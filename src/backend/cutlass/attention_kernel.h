// Attention kernels of the cutlass backend: CUTLASS's fused multi-head attention (the forward
// kernel of its example 41, `kernel_forward.h`, which the nvidia-cutlass wheel ships with the
// headers — the kernel TVM's CUTLASS attention offload instantiates), one compilation unit per
// class: dtype, the bound on the head dimension (64 or 128: the kernel keeps a query block's
// output in registers up to it) and whether it adds a bias. Its tiles are xformers' for sm80 and
// later (64 queries x 64 keys up to head dimension 64, 32 x 128 up to 128); the kernel runs on
// sm90 as it is (mma.sync, no TMA). Each unit is shared by every module and cached by its source
// hash (about 16 s of nvcc).
#pragma once

#include <string>

#include "partita/runtime/data_type.h"

namespace partita::backend::cutlass {

struct AttentionClass {
  DataType dtype;    // float16 or bfloat16
  int max_k = 64;    // 64 or 128: the head dimension's bound
  bool bias = false;
  int queries = 64, keys = 64;  // the block's tile: multiples of 32, keys ≥ max_k
  std::string id() const;       // e.g. "f16_k64_bias" (with its tile when not the default, "..._q32x128")
};

/// The class that runs a head dimension (query / key and value) of `head_dim` (≤ 128), with the
/// target's `attention_tile` ("" for the default of the head dimension, else "<queries>x<keys>";
/// throws Error("ValueError") for a tile the kernel cannot take).
AttentionClass attention_class(DataType dtype, int64_t head_dim, bool bias, const std::string& tile = "");
/// The C symbol of a unit's entry point: `pt_attention_<class>`.
std::string attention_symbol(const AttentionClass& c);
/// The whole source of the unit.
std::string attention_unit_source(const AttentionClass& c);

}  // namespace partita::backend::cutlass
