// The GEMMs with epilogues the CUTLASS benchmark times (bench_test.cc) and whose kernels the
// precompile step compiles beforehand (precompile_test.cc), fp16, at batch 32 and batch 1:
// BERT-base (sequence 128: 4096 / 128 rows; QKV, attention output + residual, FFN1 + gelu and
// + gelu_tanh, FFN2 + residual), ViT-B/16's MLP (197 tokens: 6304 / 197 rows), ResNet-50's classifier
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
      // GELU's tanh form, cuBLASLt's GELU epilogue (PyTorch's tests compare cuBLASLt's fused
      // addmm + GELU with gelu(approximate="tanh")): the like-for-like comparison.
      {"bert_b32_ffn1+gelu_tanh", 4096, 3072, 768, "R.nn.gelu_tanh", false},
      {"bert_b1_ffn1+gelu_tanh", 128, 3072, 768, "R.nn.gelu_tanh", false},
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

inline bool bench_post_relu(const BenchShape& s) {
  return s.residual && std::string(s.name).find("relu") != std::string::npos;
}

/// The benchmark's module: one function per shape, `s<i>`, computing matmul + bias [+ act]
/// [+ residual [+ relu]]; the residual is a parameter only where it is used.
inline std::string bench_module_text() {
  std::string t = "@I.ir_module\nclass Module:\n";
  for (size_t i = 0; i < bench_shapes().size(); ++i) {
    const BenchShape& s = bench_shapes()[i];
    std::string M = std::to_string(s.m), N = std::to_string(s.n), K = std::to_string(s.k);
    auto ty = [](const std::string& shape) { return "R.Tensor((" + shape + "), dtype=\"float16\")"; };
    std::string out = ty(M + ", " + N);
    t += "    @R.function\n    def s" + std::to_string(i) + "(x: " + ty(M + ", " + K) + ", w: " + ty(K + ", " + N) +
         ", b: " + ty(N + ",") + (s.residual ? ", r: " + out : "") + ") -> " + out + ":\n        with R.dataflow():\n";
    t += "            m: " + out + " = R.matmul(x, w, out_dtype=\"void\")\n";
    t += "            a: " + out + " = R.add(m, b)\n";
    std::string last = "a";
    if (*s.act) {
      t += "            h: " + out + " = " + s.act + "(a)\n";
      last = "h";
    }
    if (s.residual) {
      t += "            o: " + out + " = R.add(" + last + ", r)\n";
      last = "o";
      if (bench_post_relu(s)) {
        t += "            p: " + out + " = R.nn.relu(o)\n";
        last = "p";
      }
    }
    t += "            R.output(" + last + ")\n        return " + last + "\n";
  }
  return t;
}

}  // namespace partita::cutlass_test
