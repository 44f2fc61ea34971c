// The GEMMs with epilogues the CUTLASS benchmark times (bench_test.cc) and whose kernels the
// precompile step compiles beforehand (precompile_test.cc), fp16, at batch 32 and batch 1:
// BERT-base (sequence 128: 4096 / 128 rows; QKV, attention output + residual, FFN1 + gelu,
// FFN2 + residual), ViT-B/16's MLP (197 tokens: 6304 / 197 rows), ResNet-50's classifier
// (2048 -> 1000) and two of its 1x1 convolutions at batch 32 (as GEMMs over N*H*W rows).
#pragma once

#include <string>
#include <vector>

#include "../gemm_kernel.h"

namespace partita::cutlass_test {

struct BenchShape {
  const char* name;
  int64_t m, n, k;
  const char* act;  // "" or an activation op
  bool residual;    // + r (same shape) after the activation; with "relu" in the name, relu after
};

inline const std::vector<BenchShape>& bench_shapes() {
  static const std::vector<BenchShape> s = {
      {"bert_b32_qkv", 4096, 2304, 768, "", false},
      {"bert_b32_attn_out+res", 4096, 768, 768, "", true},
      {"bert_b32_ffn1+gelu", 4096, 3072, 768, "R.nn.gelu", false},
      {"bert_b32_ffn2+res", 4096, 768, 3072, "", true},
      {"bert_b1_qkv", 128, 2304, 768, "", false},
      {"bert_b1_attn_out+res", 128, 768, 768, "", true},
      {"bert_b1_ffn1+gelu", 128, 3072, 768, "R.nn.gelu", false},
      {"bert_b1_ffn2+res", 128, 768, 3072, "", true},
      {"vit_b32_fc1+gelu", 6304, 3072, 768, "R.nn.gelu", false},
      {"vit_b32_fc2+res", 6304, 768, 3072, "", true},
      {"vit_b1_fc1+gelu", 197, 3072, 768, "R.nn.gelu", false},
      {"vit_b1_fc2+res", 197, 768, 3072, "", true},
      {"resnet50_fc_b32", 32, 1000, 2048, "", false},
      {"resnet50_fc_b1", 1, 1000, 2048, "", false},
      {"resnet_1x1_64to256+relu", 100352, 256, 64, "R.nn.relu", false},
      {"resnet_1x1_128to512+res+relu", 25088, 512, 128, "", true},
  };
  return s;
}

/// The kernel class of a shape's module: fp16, the weight (K, N), bias, its epilogue.
inline backend::cutlass::GemmClass bench_class(const BenchShape& s) {
  backend::cutlass::GemmClass c{DataType::Float(16), DataType::Float(16), false, {}};
  c.epilogue.bias = true;
  c.epilogue.act = std::string(s.act) == "R.nn.gelu" ? 2 : std::string(s.act) == "R.nn.relu" ? 1 : 0;
  c.epilogue.residual_mode = s.residual ? 2 : 0;
  c.epilogue.post_act = s.residual && std::string(s.name).find("relu") != std::string::npos ? 1 : 0;
  return c;
}

}  // namespace partita::cutlass_test
