// GEMM kernel classes, configurations and their units (see gemm_kernel.h).
#include "gemm_kernel.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "device_code.h"
#include "partita/support/error.h"

namespace partita::backend::cutlass {

std::string dtype_tag(DataType t) {
  if (t == DataType::Float(16)) return "f16";
  if (t == DataType::BFloat16()) return "bf16";
  if (t == DataType::Float(32)) return "f32";
  if (t == DataType::Int(8)) return "i8";
  if (t == DataType::Int(32)) return "i32";
  return t.str();
}

std::string cutlass_element(DataType t) {
  if (t == DataType::Float(16)) return "cutlass::half_t";
  if (t == DataType::BFloat16()) return "cutlass::bfloat16_t";
  if (t == DataType::Float(32)) return "float";  // read as tf32 by the tensor cores
  if (t == DataType::Int(8)) return "int8_t";
  if (t == DataType::Int(32)) return "int32_t";
  return "";
}

std::string GemmEpilogue::id() const {
  static const char* const kActs[] = {"", "relu", "gelu", "gelutanh", "silu"};
  static const char* const kModes[] = {"", "addpre", "add", "mul"};
  if (act < 0 || act > 4 || post_act < 0 || post_act > 4 || residual_mode < 0 || residual_mode > 3)
    throw_error("ValueError", "cutlass: epilogue codes out of range (act " + std::to_string(act) + ", residual " +
                                  std::to_string(residual_mode) + ", post " + std::to_string(post_act) + ")");
  std::string s;
  auto part = [&s](const std::string& p) {
    if (!p.empty()) s += (s.empty() ? "" : "_") + p;
  };
  part(bias ? "bias" : "");
  part(kActs[act]);
  part(kModes[residual_mode]);
  part(post_act ? std::string("post") + kActs[post_act] : "");
  return s.empty() ? "plain" : s;
}

std::string GemmClass::id() const {
  return dtype_tag(in) + (b_k_major ? "_bk" : "_bn") + (has_c() ? "_c_" : "_nc_") + dtype_tag(out) + "_" +
         epilogue.id();
}

std::string GemmConfig::unit_id() const {
  return std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" + std::to_string(tile_k) + "_" +
         std::to_string(cluster_m) + "x" + std::to_string(cluster_n) + (pingpong ? "_pp" : stream_k ? "_sk" : "_coop");
}

std::string GemmConfig::id() const { return unit_id() + (stream_k && splits > 1 ? std::to_string(splits) : ""); }

GemmConfig GemmConfig::parse(const std::string& id) {
  GemmConfig k;
  char sched[8] = {0};
  bool ok = std::sscanf(id.c_str(), "%dx%dx%d_%dx%d_%7s", &k.tile_m, &k.tile_n, &k.tile_k, &k.cluster_m,
                        &k.cluster_n, sched) == 6;
  std::string s(sched);
  k.pingpong = s == "pp";
  k.stream_k = s.rfind("sk", 0) == 0;
  if (k.stream_k && s.size() > 2) k.splits = std::atoi(s.c_str() + 2);
  if (!ok || (!k.pingpong && !k.stream_k && s != "coop") || k.splits < 1 || id != k.id())
    throw_error("ValueError", "cutlass: '" + id + "' is not a GEMM configuration (MxNxK_CMxCN_coop|pp|sk|sk<splits>)");
  return k;
}

namespace {

// The K extent of a tile: 128 bytes of the operand's elements (one TMA swizzle row).
int tile_k_for(DataType in) { return 1024 / in.bits(); }

}  // namespace

GemmConfig default_config(const GemmClass& c, int /*sm*/) {
  GemmConfig k;
  k.tile_k = tile_k_for(c.in);
  return k;
}

std::vector<GemmConfig> candidate_configs(const GemmClass& c, int sm) {
  std::vector<GemmConfig> out{default_config(c, sm)};
  int tk = tile_k_for(c.in);
  // 128x192: BERT-like widths (multiples of 768) in whole tiles and waves that fill the 132 SMs
  // (4096 x 2304: 384 tiles, 2.9 waves, against 576 tiles, 4.4 waves of 128x128). Few
  // candidates: each is a compile of ~1 minute per epilogue kind. (Measured with the old run-time
  // epilogue: 128x256 and a 2x1 cluster within a few % of the default; 64x128 ping-pong slower
  // except at M = 256.)
  out.push_back({128, 192, tk, 1, 1, false});
  // 128x96: whole waves where 128x192 leaves a partial one (ViT-B's 6304 x 768 rows: 200 tiles
  // of 128x192 = 1.5 waves, 400 of 128x96 = 3.03).
  out.push_back({128, 96, tk, 1, 1, false});
  // A costly activation (erf / tanh / exp per element: ~25 instructions) is worth hiding: the
  // ping-pong schedule runs one warp group's epilogue while the other multiplies (the
  // cooperative one runs them in turn: +11 us on 4096 x 3072 with gelu, against +1 with relu).
  auto heavy = [](int a) { return a == 2 || a == 3 || a == 4; };
  if (heavy(c.epilogue.act) || heavy(c.epilogue.post_act)) out.push_back({128, 128, tk, 1, 1, true});
  // Problems of few rows (batch-1 BERT / ViT: 128 / 197 rows, a classifier at M = 1 .. 32) have
  // 6-18 tiles of 128x128 for 132 SMs, each a long K loop on one SM: 64x64 ping-pong tiles are
  // 2-4 times as many, each a quarter of the work (measured 2026-12-01: 128x128 at 0.39-0.60 of
  // cuBLASLt there). Stream-K (GemmConfig::stream_k, CUTLASS's heuristic decomposition) was
  // measured too and was slower than the 128x128 kernel on every shape, so it is no candidate.
  out.push_back({64, 64, tk, 1, 1, true});
  // Split-K (GemmConfig::splits: 128x64 tiles, each tile's K split 2-12 ways, all on one unit)
  // was measured on the same problems (H100, 2026-12-07) and lost to the 64x64 ping-pong tiles on
  // every one (e.g. BERT b1 FFN2: 12.5 us at best against 7.9), so it is no candidate.
  return out;
}

std::string gemm_symbol(const GemmClass& c, const GemmConfig& k) { return "pt_gemm_" + c.id() + "_" + k.unit_id(); }

std::vector<std::pair<std::string, std::string>> gemm_units(const GemmClass& c, const std::vector<GemmConfig>& ks) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const GemmConfig& k : ks)
    if (seen.insert(gemm_symbol(c, k)).second) out.emplace_back(gemm_symbol(c, k), gemm_unit_source(c, k));
  return out;
}

namespace {

// The fit of gemm_kernel.h's GELU: q's coefficients, highest power first (numpy polyfit,
// weighted to minimax, then rounded to float; max error 4.7e-6 of log2 Φ(-t) on [0, 6]).
constexpr float kGeluQ[] = {-1.83482655e-06f, 6.15986573e-05f, -0.000930528215f, 0.00850790646f,
                            -0.0539601073f,   0.262883157f,    -1.15125108f,     -0.999995291f};
constexpr float kGeluClamp = 6.f;
constexpr float kHalfOverLn2 = 0.72134752044448170f;  // 1 / (2 ln 2)

// A float literal that reads back as `v` ("6.0f", not "6f": that is no literal).
std::string float_literal(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(v));
  std::string s = b;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace

std::string gelu_erf_device_source() {
  std::string horner = float_literal(kGeluQ[0]);
  for (size_t i = 1; i < sizeof(kGeluQ) / sizeof(kGeluQ[0]); ++i)
    horner = "fmaf(" + horner + ", t, " + float_literal(kGeluQ[i]) + ")";
  return "static CUTLASS_DEVICE float pt_gelu_erf(float x) {\n"
         "  float a = fabsf(x), t = fminf(a, " + float_literal(kGeluClamp) + ");\n"
         "  float e = fmaf(-" + float_literal(kHalfOverLn2) + " * a, a, " + horner + ");\n"
         "  float h;  // Phi(-|x|)\n"
         "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(h) : \"f\"(e));\n"
         "  float xh = x * h;\n"
         "  return x >= 0.f ? x - xh : xh;\n"
         "}\n";
}

float gelu_erf_approx(float x) {
  float a = std::fabs(x), t = std::fmin(a, kGeluClamp);
  float q = kGeluQ[0];
  for (size_t i = 1; i < sizeof(kGeluQ) / sizeof(kGeluQ[0]); ++i) q = std::fma(q, t, kGeluQ[i]);
  float h = std::exp2(std::fma(-kHalfOverLn2 * a, a, q));
  float xh = x * h;
  return x >= 0.f ? x - xh : xh;
}

std::string gemm_unit_source(const GemmClass& c, const GemmConfig& k) {
  std::string in = cutlass_element(c.in), out = cutlass_element(c.out);
  if (in.empty() || out.empty())
    throw_error("ValueError", "cutlass: no CUTLASS element type for " + c.in.str() + " -> " + c.out.str());
  auto n = [](int v) { return "cute::_" + std::to_string(v); };
  std::string s = "// CUTLASS GEMM unit " + gemm_symbol(c, k) + " (generated by Partita's cutlass backend)\n";
  s += kGemmUnitIncludes;
  s += kGemmAbi;
  s += "#define PT_ELEMENT_AB " + in + "\n";
  s += "#define PT_ELEMENT_D " + out + "\n";
  s += "#define PT_ELEMENT_C " + out + "\n";
  s += std::string("#define PT_B_K_MAJOR ") + (c.b_k_major ? "1" : "0") + "\n";
  s += std::string("#define PT_LAYOUT_B cutlass::layout::") + (c.b_k_major ? "ColumnMajor" : "RowMajor") + "\n";
  s += "#define PT_TILE cute::Shape<" + n(k.tile_m) + ", " + n(k.tile_n) + ", " + n(k.tile_k) + ">\n";
  s += "#define PT_CLUSTER cute::Shape<" + n(k.cluster_m) + ", " + n(k.cluster_n) + ", cute::_1>\n";
  s += std::string("#define PT_KERNEL_SCHEDULE cutlass::gemm::") +
       (k.pingpong ? "KernelTmaWarpSpecializedPingpong" : "KernelTmaWarpSpecializedCooperative") + "\n";
  s += std::string("#define PT_EPILOGUE_SCHEDULE cutlass::epilogue::") +
       (k.pingpong ? "TmaWarpSpecialized" : "TmaWarpSpecializedCooperative") + "\n";
  s += "#define PT_ENTRY " + gemm_symbol(c, k) + "\n";
  s += std::string("#define PT_HAS_C ") + (c.has_c() ? "1" : "0") + "\n";
  s += "#define PT_EPI_ID \"" + c.epilogue.id() + "\"\n";
  s += std::string("#define PT_BIAS ") + (c.epilogue.bias ? "1" : "0") + "\n";
  s += "#define PT_ACT " + std::to_string(c.epilogue.act) + "\n";
  s += "#define PT_C_MODE " + std::to_string(c.epilogue.residual_mode) + "\n";
  s += "#define PT_POST_ACT " + std::to_string(c.epilogue.post_act) + "\n";
  s += std::string("#define PT_STREAM_K ") + (k.stream_k ? "1" : "0") + "\n";
  s += gelu_erf_device_source();
  s += kGemmUnitBodyHead;
  s += std::string("using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, "
                   "CollectiveEpilogue") +
       (k.stream_k ? ", cutlass::gemm::StreamKScheduler" : "") + ">;\n";
  s += kGemmUnitBodyTail;
  return s;
}

}  // namespace partita::backend::cutlass
