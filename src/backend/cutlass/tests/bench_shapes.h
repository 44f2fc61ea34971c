// The GEMMs with epilogues the CUTLASS benchmark times (bench_test.cc) and whose kernels the
// precompile step compiles beforehand (precompile_test.cc): BERT-base (batch 32 x sequence 128
// = 4096 rows) and ResNet-50's 1x1 convolutions at batch 32, fp16.
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
      {"bert_qkv", 4096, 2304, 768, "", false},
      {"bert_attn_out+res", 4096, 768, 768, "", true},
      {"bert_ffn1+gelu", 4096, 3072, 768, "R.nn.gelu", false},
      {"bert_ffn2+res", 4096, 768, 3072, "", true},
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
