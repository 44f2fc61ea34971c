// matmul and conv2d: a shared-memory tiled GEMM (64 x 64 tiles, 16-deep slices, 4 x 4
// accumulators per thread) whose operand loads are inline evaluations, so transposes, pads and
// elementwise producers fuse into the loads and the epilogue into the stores. conv2d is an
// implicit GEMM per group (M = output channels of the group, N = images x output pixels,
// K = input channels of the group x kernel window); convolutions with few output channels per
// group (depthwise) run directly, one thread per output pixel and group. 16-bit products take
// tensor cores (WMMA). Small problems (batch 1: fewer regular tiles than the GPU has SMs) take a
// 32 x 32 tile with K split among thread groups of the block (tensor cores for 16-bit operands,
// FFMA otherwise). fp32 stays fp32: FFMA, never TF32. Kernels whose operands are plain reads
// fetch the next K slice while computing the current one. A convolution's K runs over the kernel
// taps, the channels within each, where the group channels allow it (split_k in emit_conv2d), so
// that its loads share their index arithmetic within a slice.
#include <algorithm>
#include <functional>
#include <utility>

#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {
namespace {

constexpr int kTileK = 16, kThreads = 256;

// The K index of an operand element a kernel loads: `slice`, the first index of the K slice (a
// multiple of `depth`, the same for every element of the slice), plus `offset` (< depth). Kept
// apart so that a loader which decomposes K (a convolution's channel and kernel tap) can do the
// slice's part of it once per slice rather than once per element.
struct KIndex {
  std::string slice, offset;
  int depth = 0;
  std::string value() const { return "(" + slice + " + " + offset + ")"; }
};

// Accumulate in float (double for float64); integers in their own type, as the host's GEMM does.
std::string gemm_accumulator(DataType in) {
  if (in == DataType::Float(64)) return "double";
  if (in.is_float()) return "float";
  return compute_type(in);
}


// One operand tile of a K slice: `rows` x `cols` elements, consecutive threads along cols
// (coalesced when the operand's fastest axis is that one), `threads` threads of the block from
// `first_thread`, each holding rows * cols / threads of them in a register array. The element at
// tile position (r, c) is global (row0 + r, col0 + c), zero outside rows x cols; `fetch` reads
// them into the registers, `put` writes the registers to shared memory through `store`
// (transposed or rounded as the kernel needs). Kept apart so that a kernel can fetch the next
// slice while it computes on the current one.
// K runs along the tile's rows (`k_rows`, a B tile) or its columns (an A tile); `load` gets the
// element's K index as a KIndex and its other coordinate.
struct TileLoad {
  TileLoad(int rows_, int cols_, int threads_, bool k_rows_)
      : rows(rows_), cols(cols_), threads(threads_), k_rows(k_rows_) {}
  int rows = 0, cols = 0, threads = 0;
  bool k_rows = false;
  bool whole_slices = false;  // K is a multiple of the slice depth (set by emit_k_loop)
  std::string thread = "threadIdx.x";  // the thread's index among `threads`
  std::string row0, col0, row_limit, col_limit, value_type;
  std::string reg;  // the register array's name (declared by emit_k_loop)
  std::function<std::string(const KIndex& k, const std::string& other)> load;
  std::function<std::string(const std::string& r, const std::string& c, const std::string& v)> store;
  int per_thread() const { return rows * cols / threads; }
};

// Whether every thread of `t` holds one column of it in all its registers (the threads cover
// whole rows): its column's index arithmetic (a convolution's pixel) is then the same for every
// register, evaluated once.
bool fixed_column(const TileLoad& t) { return t.threads % t.cols == 0; }

// The tile position (r, c) of register i of the calling thread: element thread + i * threads in
// row-major order (with a fixed column, written as such).
std::pair<std::string, std::string> tile_position(CodeWriter& w, const TileLoad& t, const std::string& i) {
  const std::string C = std::to_string(t.cols);
  std::string r = w.fresh("tr"), c = w.fresh("tc");
  if (fixed_column(t)) {
    w.line("const int " + r + " = " + t.thread + " / " + C + " + " + i + " * " + std::to_string(t.threads / t.cols) +
           ", " + c + " = " + t.thread + " % " + C + ";");
    return {r, c};
  }
  std::string e = w.fresh("e");
  w.line("const int " + e + " = " + t.thread + " + " + i + " * " + std::to_string(t.threads) + ", " + r + " = " + e +
         " / " + C + ", " + c + " = " + e + " % " + C + ";");
  return {r, c};
}

// Each register gets its element, or 0 outside rows x cols. A bound that is the same for every
// register — a fixed column's, or K's where K is a multiple of the slice depth (a slice then lies
// wholly inside K or wholly beyond it) — is tested once, around the registers' loads, so that
// these lie in one block and the compiler evaluates what they share (a convolution's tap, pixel
// and fused pad) once.
void emit_tile_fetch(CodeWriter& w, const TileLoad& t) {
  const std::string n = std::to_string(t.per_thread());
  const bool rows_whole = t.k_rows && t.whole_slices, cols_whole = !t.k_rows && t.whole_slices;
  std::vector<std::string> once, each;
  if (rows_whole) once.push_back(t.row0 + " < " + t.row_limit);
  if (cols_whole) once.push_back(t.col0 + " < " + t.col_limit);
  if (!cols_whole && fixed_column(t)) {
    std::string c = w.fresh("fc");
    w.line("const pt_idx " + c + " = " + t.col0 + " + " + t.thread + " % " + std::to_string(t.cols) + ";");
    once.push_back(c + " < " + t.col_limit);
  }
  auto all = [](const std::vector<std::string>& conds) {
    std::string s;
    for (const auto& c : conds) s += (s.empty() ? "" : " && ") + c;
    return s;
  };
  std::string i = w.fresh("r");
  w.line("#pragma unroll");
  w.line("for (int " + i + " = 0; " + i + " < " + n + "; ++" + i + ") " + t.reg + "[" + i + "] = 0;");
  if (!once.empty()) w.open("if (" + all(once) + ")");
  w.line("#pragma unroll");
  w.open("for (int " + i + " = 0; " + i + " < " + n + "; ++" + i + ")");
  auto [r, c] = tile_position(w, t, i);
  std::string row = w.fresh("gr"), col = w.fresh("gc");
  w.line("const pt_idx " + row + " = " + t.row0 + " + " + r + ", " + col + " = " + t.col0 + " + " + c + ";");
  if (!rows_whole) each.push_back(row + " < " + t.row_limit);
  if (!cols_whole && !fixed_column(t)) each.push_back(col + " < " + t.col_limit);
  if (!each.empty()) w.open("if (" + all(each) + ")");
  const KIndex k = t.k_rows ? KIndex{t.row0, r, t.rows} : KIndex{t.col0, c, t.cols};
  w.line(t.reg + "[" + i + "] = " + t.load(k, t.k_rows ? col : row) + ";");
  if (!each.empty()) w.close();
  w.close();
  if (!once.empty()) w.close();
}

void emit_tile_put(CodeWriter& w, const TileLoad& t) {
  std::string i = w.fresh("r");
  w.line("#pragma unroll");
  w.open("for (int " + i + " = 0; " + i + " < " + std::to_string(t.per_thread()) + "; ++" + i + ")");
  auto [r, c] = tile_position(w, t, i);
  w.line(t.store(r, c, t.reg + "[" + i + "]"));
  w.close();
}

// The K loop of every GEMM kernel: slices of `depth` starting at s (+ grp * depth when `groups`
// groups of the block share K, each taking every groups-th slice; every group runs the same
// number of slices, its last ones possibly beyond K: zeros, so the block's barriers are uniform).
// Each slice's operand tiles go to shared memory, then `compute` runs on them. With `prefetch`
// the next slice's elements are fetched into registers before `compute`, so their global loads
// (and fused producers) are in flight while the current slice computes.
void emit_k_loop(CodeWriter& w, const PrimExpr& k, const std::string& K, int depth, int groups, TileLoad a, TileLoad b,
                 bool prefetch, const std::function<void()>& compute) {
  const auto kc = as_const_int(k);
  a.whole_slices = b.whole_slices = kc && *kc % depth == 0;
  const std::string step = std::to_string(depth * groups);
  const std::string own = groups > 1 ? " + grp * " + std::to_string(depth) : "";
  a.reg = w.fresh("ra"), b.reg = w.fresh("rb");
  w.line(a.value_type + " " + a.reg + "[" + std::to_string(a.per_thread()) + "];");
  w.line(b.value_type + " " + b.reg + "[" + std::to_string(b.per_thread()) + "];");
  auto fetch = [&](const std::string& k0) {
    a.col0 = k0, b.row0 = k0;
    emit_tile_fetch(w, a);
    emit_tile_fetch(w, b);
  };
  std::string s = w.fresh("s");
  if (prefetch) fetch("(pt_idx)0" + own);
  w.open("for (pt_idx " + s + " = 0; " + s + " < " + K + "; " + s + " += " + step + ")");
  if (!prefetch) fetch(s + own);
  emit_tile_put(w, a);
  emit_tile_put(w, b);
  w.line("__syncthreads();");
  if (prefetch) {
    w.open("if (" + s + " + " + step + " < " + K + ")");
    fetch(s + " + " + step + own);
    w.close();
  }
  compute();
  w.line("__syncthreads();");
  w.close();
}

}  // namespace

struct GemmSpec {
  PrimExpr batch, m, n, k;
  std::string acc;
  // Tensor cores (WMMA, m16n16k16, float accumulation) with operands of this storage type
  // ("__half" / "__nv_bfloat16"); empty: the FFMA kernel.
  std::string mma_type;
  // Fetch the next K slice while computing the current one (emit_k_loop). Set for operands that
  // are plain reads (KernelEmitter::plain_read): on an H100 at batch 1, float16, the fetch ahead
  // took BERT-base from 2.53 to 1.89 ms and vit_b_16 from 2.43 to 2.11, but the style network,
  // whose convolutions read normalized inputs (the norm's arithmetic in every load), from 2.85 to
  // 3.22, as did other models whose loads compute, by less (docs/benchmarks.md).
  bool prefetch = true;
  std::function<void(const std::string& b)> at_batch;
  // Emit code and return an accumulator-typed expression of the operand element.
  std::function<std::string(const std::string& b, const std::string& m, const KIndex& k)> load_a;
  std::function<std::string(const std::string& b, const KIndex& k, const std::string& n)> load_b;
  std::function<void(const std::string& b, const std::string& m, const std::string& n, const std::string& acc)> store;
};

namespace {

// The FFMA kernel's tile: 256 threads of 4 x 4 accumulators, n / 4 of them along a row. Square,
// or, for products of at most 32 rows (convolutions to 32 channels or fewer: style_transfer's
// first and fourth-last at 224 x 224), 32 x 128, so that no thread computes rows beyond M.
struct FfmaTile {
  int m, n;
  int threads_n() const { return n / 4; }
  int threads_m() const { return m / 4; }
};
constexpr FfmaTile kFfmaSquare{64, 64}, kFfmaWide{32, 128};

/// Whether `g` has at most 32 rows (known) and wide tiles are on (GemmTuning::wide).
bool wide_rows(const GemmSpec& g, const GemmTuning& tuning) {
  auto m = as_const_int(g.m);
  return tuning.wide && m && *m <= 32;
}

const FfmaTile& ffma_tile(const GemmSpec& g, const GemmTuning& tuning) {
  return wide_rows(g, tuning) ? kFfmaWide : kFfmaSquare;
}

// The loops of every GEMM kernel: batches `b` over blockIdx.z, row tiles `m0` of `tile_m` over
// blockIdx.y (both grid-strided), and the block's column tile `n0`; the kernel closes both loops.
struct TileLoops {
  std::string b, m0, n0;
};
TileLoops open_tile_loops(CodeWriter& w, const GemmSpec& g, const std::string& B,
                          const std::string& M, int tile_m, int tile_n) {
  const std::string TM = std::to_string(tile_m);
  TileLoops t{w.fresh("b"), "", ""};
  w.open("for (pt_idx " + t.b + " = blockIdx.z; " + t.b + " < " + B + "; " + t.b +
         " += gridDim.z)");
  if (g.at_batch) g.at_batch(t.b);
  t.m0 = w.fresh("m");
  w.open("for (pt_idx " + t.m0 + " = (pt_idx)blockIdx.y * " + TM + "; " + t.m0 + " < " + M + "; " +
         t.m0 + " += (pt_idx)gridDim.y * " + TM + ")");
  t.n0 = w.fresh("n");
  w.line("const pt_idx " + t.n0 + " = (pt_idx)blockIdx.x * " + std::to_string(tile_n) + ";");
  return t;
}

// The 4 x 4 register block of the FFMA kernels: `type acc[4][4]` zeroed, and one k step of it
// (ra[i] = `a_i`, rb[j] = `b_j`, acc += ra * rb).
void emit_zero_acc(CodeWriter& w, const std::string& type) {
  w.line(type + " acc[4][4];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; ++i)");
  w.line("#pragma unroll");
  w.line("  for (int j = 0; j < 4; ++j) acc[i][j] = 0;");
}
// How a thread's 4 x 4 register block lies in its tile (tx, ty: the thread's column and row).
// `vector`: rows ty * 4 + i and columns tx * 4 + j, so that each k step reads its four A and four
// B values from shared memory as one float4 each (float accumulators; the A tile's rows padded to
// a multiple of four); otherwise rows ty + threads_m * i and columns tx + threads_n * j, one
// scalar load per value.
struct RegisterBlock {
  bool vector;
  int threads_m, threads_n;
  std::string row(const std::string& i) const {
    return vector ? "ty * 4 + " + i : "ty + " + std::to_string(threads_m) + " * " + i;
  }
  std::string col(const std::string& j) const {
    return vector ? "tx * 4 + " + j : "tx + " + std::to_string(threads_n) + " * " + j;
  }
  int a_pad() const { return vector ? 4 : 1; }
};

RegisterBlock register_block(const std::string& acc, const GemmTuning& tuning, int threads_m, int threads_n) {
  return {acc == "float" && tuning.vector_smem, threads_m, threads_n};
}

// One k step: `a(row)` / `b(col)` name the shared-memory element of the step's A row / B column.
void emit_fma_step(CodeWriter& w, const std::string& type, const RegisterBlock& rb,
                   const std::function<std::string(const std::string&)>& a,
                   const std::function<std::string(const std::string&)>& b) {
  w.line(type + " ra[4], rb[4];");
  if (rb.vector) {
    w.line("const float4 a4 = *reinterpret_cast<const float4*>(&" + a("ty * 4") + "), b4 = *reinterpret_cast<const float4*>(&" +
           b("tx * 4") + ");");
    w.line("ra[0] = a4.x, ra[1] = a4.y, ra[2] = a4.z, ra[3] = a4.w;");
    w.line("rb[0] = b4.x, rb[1] = b4.y, rb[2] = b4.z, rb[3] = b4.w;");
  } else {
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < 4; ++i) ra[i] = " + a(rb.row("i")) + ";");
    w.line("#pragma unroll");
    w.line("for (int j = 0; j < 4; ++j) rb[j] = " + b(rb.col("j")) + ";");
  }
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; ++i)");
  w.line("#pragma unroll");
  w.line("  for (int j = 0; j < 4; ++j) acc[i][j] += ra[i] * rb[j];");
}

// Tensor cores: 32-deep slices of a 128 x 128 tile (8 warps of 64 x 32: 4 x 2 fragments) or, where
// that grid would leave SMs idle or M is small, of a 64 x 64 tile (4 warps of 32 x 32). Operand
// loads are the same inline evaluations as the FFMA kernel, rounded to the 16-bit type in shared
// memory; the accumulators go through a per-warp 16 x 16 staging tile to the epilogue.
struct MmaTile {
  int m, n, warps_m, warps_n;
  int warps() const { return warps_m * warps_n; }
  int threads() const { return 32 * warps(); }
  int frags_m() const { return m / warps_m / 16; }
  int frags_n() const { return n / warps_n / 16; }
};
// kMmaWide: products of at most 32 rows, four warps side by side (no warp on rows beyond M).
constexpr MmaTile kMmaLarge{128, 128, 2, 4}, kMmaSmall{64, 64, 2, 2}, kMmaThin{32, 32, 2, 2},
                  kMmaWide{32, 128, 1, 4};

/// Blocks of a grid of `tm` x `tn` tiles over a batch of `b` m x n products.
int64_t tile_count(int64_t m, int64_t n, int64_t b, int64_t tm, int64_t tn) {
  return ((m + tm - 1) / tm) * ((n + tn - 1) / tn) * b;
}

// With `groups` > 1 the block is that many copies of the tile's warps, each walking every
// groups-th 32-deep slice of K (more warps in flight where the grid is small); the partial
// products are summed in shared memory, over the operand tiles' space, before one epilogue.
void emit_gemm_mma(KernelEmitter& e, const GemmSpec& g, const MmaTile& t, int groups) {
  CodeWriter& w = e.w();
  const std::string M = e.dim(g.m), N = e.dim(g.n), K = e.dim(g.k), B = e.dim(g.batch);
  const std::string& H = g.mma_type;
  const std::string to16 = H == "__half" ? "__float2half_rn" : "__float2bfloat16_rn";
  const std::string TM = std::to_string(t.m), TN = std::to_string(t.n), FI = std::to_string(t.frags_m()),
                    FJ = std::to_string(t.frags_n()), WTM = std::to_string(t.m / t.warps_m),
                    WTN = std::to_string(t.n / t.warps_n), G = std::to_string(groups);
  const int a_bytes = groups * t.m * (32 + 8) * 2, b_bytes = groups * 32 * (t.n + 8) * 2;
  const int sum_bytes = groups > 1 ? t.m * t.n * 4 : 0;
  w.line("using namespace nvcuda;");
  w.line("__shared__ __align__(32) unsigned char smem[" + std::to_string(std::max(a_bytes + b_bytes, sum_bytes)) + "];");
  w.line("auto As = reinterpret_cast<" + H + " (*)[" + TM + "][32 + 8]>(smem);");
  w.line("auto Bs = reinterpret_cast<" + H + " (*)[32][" + TN + " + 8]>(smem + " + std::to_string(a_bytes) + ");");
  if (groups == 1) w.line("__shared__ __align__(32) float Cs[" + std::to_string(t.warps()) + "][16 * 16];");
  w.line("const int grp = threadIdx.x / " + std::to_string(t.threads()) + ", lt = threadIdx.x % " +
         std::to_string(t.threads()) + ";");
  w.line("const int warp = lt / 32, lane = lt % 32, wm = warp / " + std::to_string(t.warps_n) +
         ", wn = warp % " + std::to_string(t.warps_n) + ";");
  auto [b, m0, n0] = open_tile_loops(w, g, B, M, t.m, t.n);
  w.line("wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[" + FI + "][" + FJ + "];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < " + FI + "; ++i)");
  w.line("#pragma unroll");
  w.line("  for (int j = 0; j < " + FJ + "; ++j) wmma::fill_fragment(acc[i][j], 0.0f);");
  TileLoad a{t.m, 32, t.threads(), false};
  a.thread = "lt";
  a.row0 = m0, a.row_limit = M, a.col_limit = K, a.value_type = "float";
  a.load = [&](const KIndex& k, const std::string& m) { return g.load_a(b, m, k); };
  a.store = [&](const std::string& r, const std::string& c, const std::string& v) {
    return "As[grp][" + r + "][" + c + "] = " + to16 + "(" + v + ");";
  };
  TileLoad bt{32, t.n, t.threads(), true};
  bt.thread = "lt";
  bt.col0 = n0, bt.row_limit = K, bt.col_limit = N, bt.value_type = "float";
  bt.load = [&](const KIndex& k, const std::string& n) { return g.load_b(b, k, n); };
  bt.store = [&](const std::string& r, const std::string& c, const std::string& v) {
    return "Bs[grp][" + r + "][" + c + "] = " + to16 + "(" + v + ");";
  };
  emit_k_loop(w, g.k, K, 32, groups, a, bt, g.prefetch, [&] {
    w.line("#pragma unroll");
    w.open("for (int kk = 0; kk < 2; ++kk)");
    w.line("wmma::fragment<wmma::matrix_a, 16, 16, 16, " + H + ", wmma::row_major> fa[" + FI + "];");
    w.line("wmma::fragment<wmma::matrix_b, 16, 16, 16, " + H + ", wmma::row_major> fb[" + FJ + "];");
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < " + FI + "; ++i) wmma::load_matrix_sync(fa[i], &As[grp][wm * " + WTM +
           " + i * 16][kk * 16], 32 + 8);");
    w.line("#pragma unroll");
    w.line("for (int j = 0; j < " + FJ + "; ++j) wmma::load_matrix_sync(fb[j], &Bs[grp][kk * 16][wn * " + WTN +
           " + j * 16], " + TN + " + 8);");
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < " + FI + "; ++i)");
    w.line("#pragma unroll");
    w.line("  for (int j = 0; j < " + FJ + "; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);");
    w.close();
  });
  if (groups > 1) {
    // The groups add their partials into one tile in turn (the operand tiles are dead: the loop
    // ended on a barrier), then every thread of the block runs the epilogue over it.
    w.line("float* sum = reinterpret_cast<float*>(smem);");
    w.line("#pragma unroll 1");
    w.open("for (int gi = 0; gi < " + G + "; ++gi)");
    w.open("if (grp == gi)");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < " + FI + "; ++i)");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < " + FJ + "; ++j)");
    w.line("float* at = sum + (wm * " + WTM + " + i * 16) * " + TN + " + wn * " + WTN + " + j * 16;");
    w.open("if (gi > 0)");
    w.line("wmma::fragment<wmma::accumulator, 16, 16, 16, float> part;");
    w.line("wmma::load_matrix_sync(part, at, " + TN + ", wmma::mem_row_major);");
    w.line("for (int x = 0; x < part.num_elements; ++x) acc[i][j].x[x] += part.x[x];");
    w.close();
    w.line("wmma::store_matrix_sync(at, acc[i][j], " + TN + ", wmma::mem_row_major);");
    w.close();
    w.close();
    w.close();
    w.line("__syncthreads();");
    w.close();
    w.line("#pragma unroll 1");
    w.open("for (int ec = threadIdx.x; ec < " + std::to_string(t.m * t.n) + "; ec += " +
           std::to_string(t.threads() * groups) + ")");
    std::string m = w.fresh("m"), n = w.fresh("n");
    w.line("const pt_idx " + m + " = " + m0 + " + ec / " + TN + ", " + n + " = " + n0 + " + ec % " + TN + ";");
    w.open("if (" + m + " < " + M + " && " + n + " < " + N + ")");
    g.store(b, m, n, "sum[ec]");
    w.close();
    w.close();
    w.line("__syncthreads();");  // the next tile's operands overwrite the sum
  } else {
    // One 16 x 16 fragment at a time through the warp's staging tile.
    w.line("#pragma unroll 1");
    w.open("for (int i = 0; i < " + FI + "; ++i)");
    w.line("#pragma unroll 1");
    w.open("for (int j = 0; j < " + FJ + "; ++j)");
    w.line("wmma::store_matrix_sync(Cs[warp], acc[i][j], 16, wmma::mem_row_major);");
    w.line("__syncwarp();");
    w.line("#pragma unroll 1");
    w.open("for (int t = 0; t < 8; ++t)");
    w.line("const int ec = lane + 32 * t, rc = ec / 16, cc = ec % 16;");
    std::string m = w.fresh("m"), n = w.fresh("n");
    w.line("const pt_idx " + m + " = " + m0 + " + wm * " + WTM + " + i * 16 + rc, " + n + " = " + n0 + " + wn * " +
           WTN + " + j * 16 + cc;");
    w.open("if (" + m + " < " + M + " && " + n + " < " + N + ")");
    g.store(b, m, n, "Cs[warp][ec]");
    w.close();
    w.close();
    w.line("__syncwarp();");
    w.close();
    w.close();
  }
  w.close();
  w.close();
}

/// The tensor-core tile for `g`: the wide one for at most 32 rows, the small one where M fits it
/// or the large grid would not fill the GPU (GemmTuning::split_k_below: the tile count a grid
/// needs to), else the large one.
const MmaTile& mma_tile(const GemmSpec& g, const GemmTuning& tuning) {
  auto m = as_const_int(g.m), n = as_const_int(g.n), b = as_const_int(g.batch);
  if (!m || !n || !b) return kMmaLarge;
  if (wide_rows(g, tuning)) return kMmaWide;
  if (*m <= kMmaSmall.m) return kMmaSmall;
  const int64_t fill = tuning.split_k_below;
  return fill > 0 && tile_count(*m, *n, *b, kMmaLarge.m, kMmaLarge.n) < fill ? kMmaSmall : kMmaLarge;
}

// Small problems (batch 1: fewer regular tiles than the GPU has SMs, each walking a long K):
// 32 x 32 tiles, with K split among the block's G groups of 64 threads (each a 4 x 4 register
// block per thread over every G-th 16-deep slice), the partial sums reduced in shared memory
// (reusing the operand tiles' space) before the one epilogue. G times the parallelism of a
// 32 x 32 tile, each group a G-th of the K walk. Float accumulation only: the kernel of 32-bit
// operands (16-bit ones take thin_mma_tile's tensor-core tile unless gemm_mma_thin=0, when they
// are widened as they are loaded).
constexpr int kSplitTile = 32;

struct GemmKernel {
  int tile_m, tile_n, threads;
};

/// The split-K group count for `g` (4 or 8), or 0 for the regular kernels.
int split_k_groups(const GemmSpec& g, const GemmTuning& tuning) {
  if (g.acc != "float" || tuning.split_k_below <= 0) return 0;
  auto m = as_const_int(g.m), n = as_const_int(g.n), k = as_const_int(g.k), b = as_const_int(g.batch);
  if (!m || !n || !k || !b || *k < 256) return 0;
  // The regular kernel's grid (the largest tensor-core tile's for 16-bit operands).
  const FfmaTile& ffma = ffma_tile(g, tuning);
  const int64_t tm = g.mma_type.empty() ? ffma.m : kMmaLarge.m, tn = g.mma_type.empty() ? ffma.n : kMmaLarge.n;
  if (tile_count(*m, *n, *b, tm, tn) >= tuning.split_k_below) return 0;
  // 16-bit operands whose small tensor-core grid fills the GPU twice stay on tensor cores. Below
  // that, split-K: with the small tile at half a grid (the style network's 128-channel
  // convolutions at 56 x 56, 98 blocks of 4 warps) style_transfer at batch 1 took 4.12 ms on
  // the H200, against 3.34 ms before and 3.30 ms with this rule (docs/benchmarks.md).
  if (!g.mma_type.empty() && tile_count(*m, *n, *b, kMmaSmall.m, kMmaSmall.n) >= 2 * tuning.split_k_below) return 0;
  if (tuning.split_k_groups) return tuning.split_k_groups;
  int64_t small = tile_count(*m, *n, *b, kSplitTile, kSplitTile);
  return small < tuning.split_k_below && *k >= 512 ? 8 : 4;
}

// A split-K product (split_k_groups > 0) of 16-bit operands with a long K whose small
// tensor-core grid covers half the GPU runs on that tile, its warps kMmaSplitGroups times over,
// rather than FFMA. Measured on the H200 at batch 1 (docs/benchmarks.md, the zoo against
// gemm_mma_split_k=0): the style network's 98-tile convolutions (3136 x 128, K 1152) took
// style_transfer from 3.26 to 2.51 ms, every other model within 3 %. With every thin grid on it
// BERT-base and ViT (24- and 48-tile products) were up to 2.4x slower; with the half-grid rule
// but no bound on K (two groups below 1024), convnext_tiny, swin_t, BERT-base and resnext50 were
// 7-13 % slower.
constexpr int kMmaSplitGroups = 4;
bool mma_split_k(const GemmSpec& g, const GemmTuning& tuning) {
  if (g.mma_type.empty() || !tuning.mma_split_k) return false;
  auto m = as_const_int(g.m), n = as_const_int(g.n), b = as_const_int(g.batch), k = as_const_int(g.k);
  return m && n && b && k && *k >= 1024 &&
         2 * tile_count(*m, *n, *b, kMmaSmall.m, kMmaSmall.n) >= tuning.split_k_below;
}

void emit_gemm_split_k(KernelEmitter& e, const GemmSpec& g, int groups) {
  CodeWriter& w = e.w();
  const std::string M = e.dim(g.m), N = e.dim(g.n), K = e.dim(g.k), B = e.dim(g.batch);
  const std::string G = std::to_string(groups);
  const RegisterBlock rb = register_block("float", e.gemm_tuning(), 8, 8);
  const std::string AW = std::to_string(32 + rb.a_pad());
  const int tiles = groups * (16 * (32 + rb.a_pad()) + 16 * 32), reduce = groups * 32 * 32;
  w.line("__shared__ __align__(16) float smem[" + std::to_string(std::max(tiles, reduce)) + "];");
  w.line("float (*As)[16][" + AW + "] = reinterpret_cast<float (*)[16][" + AW + "]>(smem);");
  w.line("float (*Bs)[16][32] = reinterpret_cast<float (*)[16][32]>(smem + " + G + " * 16 * " + AW + ");");
  w.line("float (*Red)[32 * 32] = reinterpret_cast<float (*)[32 * 32]>(smem);");
  w.line("const int grp = threadIdx.x / 64, lt = threadIdx.x % 64, tx = lt % 8, ty = lt / 8;");
  auto [b, m0, n0] = open_tile_loops(w, g, B, M, kSplitTile, kSplitTile);
  emit_zero_acc(w, "float");
  TileLoad a{kSplitTile, kTileK, 64, false};
  a.thread = "lt";
  a.row0 = m0, a.row_limit = M, a.col_limit = K, a.value_type = "float";
  a.load = [&](const KIndex& k, const std::string& m) { return g.load_a(b, m, k); };
  a.store = [](const std::string& r, const std::string& c, const std::string& v) {
    return "As[grp][" + c + "][" + r + "] = " + v + ";";
  };
  TileLoad bt{kTileK, kSplitTile, 64, true};
  bt.thread = "lt";
  bt.col0 = n0, bt.row_limit = K, bt.col_limit = N, bt.value_type = "float";
  bt.load = [&](const KIndex& k, const std::string& n) { return g.load_b(b, k, n); };
  bt.store = [](const std::string& r, const std::string& c, const std::string& v) {
    return "Bs[grp][" + r + "][" + c + "] = " + v + ";";
  };
  emit_k_loop(w, g.k, K, kTileK, groups, a, bt, g.prefetch, [&] {
    w.line("#pragma unroll");
    w.open("for (int kk = 0; kk < 16; ++kk)");
    emit_fma_step(
        w, "float", rb, [](const std::string& r) { return "As[grp][kk][" + r + "]"; },
        [](const std::string& c) { return "Bs[grp][kk][" + c + "]"; });
    w.close();
  });
  // The operand tiles are dead (the loop ended on a barrier): their space holds the partials.
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; ++i)");
  w.line("#pragma unroll");
  w.line("  for (int j = 0; j < 4; ++j) Red[grp][(" + rb.row("i") + ") * 32 + " + rb.col("j") + "] = acc[i][j];");
  w.line("__syncthreads();");
  // Epilogue: the partial tiles summed in a fixed order, 1024 / threads outputs per thread.
  w.line("#pragma unroll 1");
  w.open("for (int q = 0; q < " + std::to_string(1024 / (64 * groups)) + "; ++q)");
  w.line("const int ec = threadIdx.x + " + std::to_string(64 * groups) + " * q, rc = ec / 32, cc = ec % 32;");
  std::string m = w.fresh("m"), n = w.fresh("n");
  w.line("const pt_idx " + m + " = " + m0 + " + rc, " + n + " = " + n0 + " + cc;");
  w.open("if (" + m + " < " + M + " && " + n + " < " + N + ")");
  w.line("float sum = 0;");
  w.line("#pragma unroll");
  w.line("for (int gi = 0; gi < " + G + "; ++gi) sum += Red[gi][ec];");
  g.store(b, m, n, "sum");
  w.close();
  w.close();
  w.line("__syncthreads();");
  w.close();
  w.close();
}

/// The tensor-core tile a thin 16-bit product (split-K) takes instead of the FFMA split-K kernel,
/// its warps kMmaSplitGroups times over, or null for FFMA: the 64 x 64 tile under mma_split_k's
/// rule, else 32 x 32 (GemmTuning::mma_thin). On an H100 at batch 1 (docs/benchmarks.md, the zoo
/// against gemm_mma_thin=0 in one call) the 32 x 32 tile took vit_b_16 from 3.55 to 2.11 ms and
/// BERT-base from 2.52 to 1.89, no model slower; ViT's products ran at 19-23 TFLOP/s against
/// 7-13 on FFMA, and the 64 x 64 tile where its grid covers the GPU was no faster.
const MmaTile* thin_mma_tile(const GemmSpec& g, const GemmTuning& tuning) {
  if (mma_split_k(g, tuning)) return &kMmaSmall;
  return !g.mma_type.empty() && tuning.mma_thin ? &kMmaThin : nullptr;
}

/// Emits the kernel that fits `g` and returns its tile and block size.
GemmKernel emit_gemm(KernelEmitter& e, const GemmSpec& g) {
  if (int groups = split_k_groups(g, e.gemm_tuning())) {
    if (const MmaTile* thin = thin_mma_tile(g, e.gemm_tuning())) {
      emit_gemm_mma(e, g, *thin, kMmaSplitGroups);
      return {thin->m, thin->n, thin->threads() * kMmaSplitGroups};
    }
    emit_gemm_split_k(e, g, groups);
    return {kSplitTile, kSplitTile, 64 * groups};
  }
  if (!g.mma_type.empty()) {
    const MmaTile& t = mma_tile(g, e.gemm_tuning());
    emit_gemm_mma(e, g, t, 1);
    return {t.m, t.n, t.threads()};
  }
  CodeWriter& w = e.w();
  const FfmaTile& t = ffma_tile(g, e.gemm_tuning());
  const std::string M = e.dim(g.m), N = e.dim(g.n), K = e.dim(g.k), B = e.dim(g.batch);
  const std::string TM = std::to_string(t.m), TN = std::to_string(t.n), TK = std::to_string(kTileK),
                    XN = std::to_string(t.threads_n());
  const RegisterBlock rb = register_block(g.acc, e.gemm_tuning(), t.threads_m(), t.threads_n());
  w.line("__shared__ __align__(16) " + g.acc + " As[" + TK + "][" + TM + " + " + std::to_string(rb.a_pad()) + "];");
  w.line("__shared__ __align__(16) " + g.acc + " Bs[" + TK + "][" + TN + "];");
  w.line("const int tx = threadIdx.x % " + XN + ", ty = threadIdx.x / " + XN + ";");
  auto [b, m0, n0] = open_tile_loops(w, g, B, M, t.m, t.n);
  emit_zero_acc(w, g.acc);
  // A tile: TM x TK, consecutive threads along k (stored transposed); B tile: TK x TN,
  // consecutive threads along n.
  TileLoad a{t.m, kTileK, kThreads, false};
  a.row0 = m0, a.row_limit = M, a.col_limit = K, a.value_type = g.acc;
  a.load = [&](const KIndex& k, const std::string& m) { return g.load_a(b, m, k); };
  a.store = [](const std::string& r, const std::string& c, const std::string& v) {
    return "As[" + c + "][" + r + "] = " + v + ";";
  };
  TileLoad bt{kTileK, t.n, kThreads, true};
  bt.col0 = n0, bt.row_limit = K, bt.col_limit = N, bt.value_type = g.acc;
  bt.load = [&](const KIndex& k, const std::string& n) { return g.load_b(b, k, n); };
  bt.store = [](const std::string& r, const std::string& c, const std::string& v) {
    return "Bs[" + r + "][" + c + "] = " + v + ";";
  };
  emit_k_loop(w, g.k, K, kTileK, 1, a, bt, g.prefetch, [&] {
    w.line("#pragma unroll");
    w.open("for (int kk = 0; kk < " + TK + "; ++kk)");
    emit_fma_step(
        w, g.acc, rb, [](const std::string& r) { return "As[kk][" + r + "]"; },
        [](const std::string& c) { return "Bs[kk][" + c + "]"; });
    w.close();
  });
  // Epilogue.
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < 4; ++i)");
  w.line("#pragma unroll");
  w.open("for (int j = 0; j < 4; ++j)");
  std::string m = w.fresh("m"), n = w.fresh("n");
  w.line("const pt_idx " + m + " = " + m0 + " + " + rb.row("i") + ", " + n + " = " + n0 + " + " + rb.col("j") + ";");
  w.open("if (" + m + " < " + M + " && " + n + " < " + N + ")");
  g.store(b, m, n, "acc[i][j]");
  w.close();
  w.close();
  w.close();
  w.close();
  w.close();
  return {t.m, t.n, kThreads};
}

}  // namespace

std::string KernelEmitter::mma_type(DataType in) const {
  if (in == DataType::Float(16) && sm_ >= 70) return "__half";
  if (in == DataType::BFloat16() && sm_ >= 80) return "__nv_bfloat16";
  return "";
}

void KernelEmitter::emit_matmul() {
  const KValue& A = values_[size_t(anchor_)];
  const int aid = A.operands.at(0), bid = A.operands.at(1);
  const KValue& X = values_[size_t(aid)];
  const KValue& Y = values_[size_t(bid)];
  const bool a_vec = X.shape.size() == 1, b_vec = Y.shape.size() == 1;
  GemmSpec g;
  g.m = a_vec ? int_imm(1) : X.shape[X.shape.size() - 2];
  g.k = X.shape.back();
  g.n = b_vec ? int_imm(1) : Y.shape.back();
  size_t out_batch = A.shape.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  std::vector<PrimExpr> batch(A.shape.begin(), A.shape.begin() + std::ptrdiff_t(out_batch));
  std::vector<PrimExpr> a_batch(X.shape.begin(), X.shape.end() - (a_vec ? 1 : 2));
  std::vector<PrimExpr> b_batch(Y.shape.begin(), Y.shape.end() - (b_vec ? 1 : 2));
  g.batch = int_imm(1);
  for (const auto& d : batch) g.batch = g.batch * d;
  g.acc = gemm_accumulator(X.dtype);
  // A right-hand side shared by every batch (a 2-D weight): the batch folds into M, so the
  // weight is read once per row tile, not once per batch — [197, 1, 768] @ [768, 2304] (ViT's
  // attention projection after its permute) is otherwise 197 products of a single row.
  const bool fold = b_batch.empty() && !batch.empty() && !a_vec;
  const std::string rows = dim(g.m);  // rows of one product
  if (fold) {
    g.m = g.batch * g.m;
    g.batch = int_imm(1);
  }
  std::vector<std::string> bc, ac, bbc;  // batch coordinates: output, a, b
  auto a_coords_of = [&](const Index& bi) {
    std::vector<std::string> c = broadcast_index(bi, batch, a_batch).coords;
    if (c.empty() && !a_batch.empty()) c = coords_of(broadcast_index(bi, batch, a_batch));
    return c;
  };
  // With the batch folded, a row of the product names its batch (row / rows) and its row in it.
  auto split_row = [&](const std::string& m) {
    Index bi{dims_of(batch), idx_var("(" + m + ") / " + rows), {}};
    bi.coords = coords_of(bi);
    return std::pair{bi, idx_var("(" + m + ") % " + rows)};
  };
  g.at_batch = [&](const std::string& b) {
    if (fold) return;
    Index bi{dims_of(batch), b, {}};
    bc = coords_of(bi);
    bi.coords = bc;
    ac = a_coords_of(bi);
    bbc = broadcast_index(bi, batch, b_batch).coords;
    if (bbc.empty() && !b_batch.empty()) bbc = coords_of(broadcast_index(bi, batch, b_batch));
  };
  g.load_a = [&](const std::string&, const std::string& m, const KIndex& ki) {
    const std::string k = ki.value();
    Index in{dims_of(X.shape), "", ac};
    if (fold) {
      auto [bi, row] = split_row(m);
      in.coords = a_coords_of(bi);
      in.coords.push_back(row);
    } else if (!a_vec) {
      in.coords.push_back(m);
    }
    in.coords.push_back(k);
    return "(" + g.acc + ")" + eval(aid, in);
  };
  g.load_b = [&](const std::string&, const KIndex& ki, const std::string& n) {
    const std::string k = ki.value();
    Index in{dims_of(Y.shape), "", bbc};
    in.coords.push_back(k);
    if (!b_vec) in.coords.push_back(n);
    return "(" + g.acc + ")" + eval(bid, in);
  };
  const std::string M = dim(g.m), N = dim(g.n);
  g.store = [&](const std::string& b, const std::string& m, const std::string& n, const std::string& acc) {
    Index out{dims_of(A.shape), "", bc};
    if (fold) {
      auto [bi, row] = split_row(m);
      out.coords = bi.coords;
      out.coords.push_back(row);
    } else if (!a_vec) {
      out.coords.push_back(m);
    }
    if (!b_vec) out.coords.push_back(n);
    out.linear = idx_var("((" + b + ") * " + M + " + " + m + ") * " + N + " + " + n);
    set_anchor_value(out, "(" + compute_type(A.dtype) + ")(" + acc + ")");
    store_outputs(out);
  };
  g.mma_type = mma_type(X.dtype);
  g.prefetch = tuning_.prefetch && plain_read(aid) && plain_read(bid);
  GemmKernel k = emit_gemm(*this, g);
  set_grid(floordiv(g.n + int_imm(k.tile_n - 1), int_imm(k.tile_n)),
           min(floordiv(g.m + int_imm(k.tile_m - 1), int_imm(k.tile_m)), int_imm(65535)), min(g.batch, int_imm(65535)),
           uint32_t(k.threads));
}

// Direct convolution (few output channels per group: depthwise, or a last layer to 3 colours):
// one thread per (image, group, output pixel), computing the group's OG output channels
// together, so each input evaluation (with its fused producers: a norm, a pad, a resize) is
// shared by all of them rather than repeated per channel. With unit stride along the width, a
// thread computes a run of adjacent outputs of a row, so the run + KW - 1 inputs of each kernel
// row they share are loaded (and their producers evaluated) once into registers, not KW times
// per output. When the pixels are too few to fill the GPU (a 224 x 224 image to 3 channels: 50k
// threads for a 132-SM GPU holding 270k) and the reduction is long, several threads share a
// pixel (or run), each walking every parts-th (channel, kernel row), and their partial sums meet
// in shared memory before the epilogue.
void KernelEmitter::emit_direct_conv(const DirectConv& d) {
  constexpr int64_t kParts = 4, kLanes = 64, kFewPixels = int64_t(1) << 17;
  const int64_t og = d.group_outputs;
  const std::string acc_t = gemm_accumulator(values_[size_t(d.data)].dtype);
  auto total = as_const_int(d.images * int_imm(d.groups) * d.out_h * d.out_w);
  auto reduction = as_const_int(d.group_channels * d.kernel_h);
  const bool split = total && reduction && *total < kFewPixels && *reduction >= 16;
  int64_t run = 1, parts = split ? kParts : 1;
  if (const auto kw = as_const_int(d.kernel_w); d.unit_stride_w && kw && *kw > 1) {
    // Split, runs of 4 outputs with twice the parts (a quarter of the threads otherwise) while
    // the partial sums fit 24 KiB of shared memory.
    const int64_t acc_bytes = acc_t == "double" ? 8 : 4;
    if (!split) run = og * 4 <= 32 ? 4 : og * 2 <= 32 ? 2 : 1;
    else if (og * 4 * 2 * kParts * kLanes * acc_bytes <= 24576) run = 4, parts = 2 * kParts;
  }
  const std::string sRun = std::to_string(run), sOG = std::to_string(og), sAcc = std::to_string(og * run);
  const std::string sParts = std::to_string(parts), lanes = std::to_string(kLanes);
  const std::vector<PrimExpr> pixels{d.images, int_imm(d.groups), d.out_h,
                                     floordiv(d.out_w + int_imm(run - 1), int_imm(run))};
  std::string i = w_->fresh("e"), red, lane, part;
  if (split) {
    red = w_->fresh("red"), lane = w_->fresh("lane"), part = w_->fresh("part");
    w_->line("__shared__ " + acc_t + " " + red + "[" + sParts + "][" + sAcc + "][" + lanes + "];");
    w_->line("const int " + lane + " = threadIdx.x % " + lanes + ", " + part + " = threadIdx.x / " + lanes + ";");
    std::string base = w_->fresh("base");
    w_->open("for (pt_idx " + base + " = (pt_idx)blockIdx.x * " + lanes + "; " + base + " < " + numel(pixels) + "; " +
             base + " += (pt_idx)gridDim.x * " + lanes + ")");
    w_->line("const pt_idx " + i + " = " + base + " + " + lane + ";");
  } else {
    w_->open("for (pt_idx " + i + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + i + " < " + numel(pixels) +
             "; " + i + " += (pt_idx)gridDim.x * blockDim.x)");
  }
  std::vector<std::string> pc = coords_of(Index{dims_of(pixels), i, {}});
  const std::string n = pc[0], g = pc[1], oh = pc[2], ow0 = run > 1 ? idx_var(pc[3] + " * " + sRun) : pc[3];
  std::vector<std::string> outs;
  for (int64_t j = 0; j < og; ++j) outs.push_back(idx_var(g + " * " + sOG + " + " + std::to_string(j)));
  const std::string acc = w_->fresh("acc"), xr = w_->fresh("xr");
  const std::string p = w_->fresh("p"), kw = w_->fresh("kw"), v = w_->fresh("v");
  w_->line(acc_t + " " + acc + "[" + sAcc + "] = {};");
  std::string c, kh;
  if (split) {
    w_->open("if (" + i + " < " + numel(pixels) + ")");
    std::string r = w_->fresh("r");
    w_->open("for (pt_idx " + r + " = " + part + "; " + r + " < " + dim(d.group_channels * d.kernel_h) + "; " + r +
             " += " + sParts + ")");
    c = idx_var(r + " / " + dim(d.kernel_h)), kh = idx_var(r + " % " + dim(d.kernel_h));
  } else {
    c = w_->fresh("c"), kh = w_->fresh("kh");
    w_->open("for (pt_idx " + c + " = 0; " + c + " < " + dim(d.group_channels) + "; ++" + c + ")");
    w_->open("for (pt_idx " + kh + " = 0; " + kh + " < " + dim(d.kernel_h) + "; ++" + kh + ")");
  }
  std::string ch = idx_var(g + " * " + dim(d.group_channels) + " + " + c);
  std::string ih = d.in_row(oh, kh, 0);
  if (run > 1) {  // the run's window of the kernel row (unit stride: output ow0 + v's tap kw is p = v + kw)
    const std::string sWin = std::to_string(run + *as_const_int(d.kernel_w) - 1);
    w_->line(acc_t + " " + xr + "[" + sWin + "];");
    w_->line("#pragma unroll");
    w_->open("for (int " + p + " = 0; " + p + " < " + sWin + "; ++" + p + ")");
    w_->line(xr + "[" + p + "] = " + d.input(n, ch, ih, d.in_row(ow0, p, 1)) + ";");
    w_->close();
  }
  w_->line("#pragma unroll");
  w_->open("for (pt_idx " + kw + " = 0; " + kw + " < " + dim(d.kernel_w) + "; ++" + kw + ")");
  std::string x = run > 1 ? "" : d.input(n, ch, ih, d.in_row(ow0, kw, 1));
  const std::string xv = run > 1 ? xr + "[" + v + " + " + kw + "]" : x;  // output ow0 + v's input at tap kw
  for (int64_t j = 0; j < og; ++j) {
    std::string wv = w_->fresh("w");
    w_->line("const " + acc_t + " " + wv + " = " + d.weight(outs[size_t(j)], c, kh, kw) + ";");
    w_->line("#pragma unroll");
    w_->line("for (int " + v + " = 0; " + v + " < " + sRun + "; ++" + v + ") " + acc + "[" + std::to_string(j * run) +
             " + " + v + "] += " + xv + " * " + wv + ";");
  }
  w_->close();  // kw
  w_->close();  // kh, or the split reduction's (channel, kernel row)
  w_->close();  // c, or if (e < pixels)
  if (split) {
    std::string q = w_->fresh("q");
    w_->line("#pragma unroll");
    w_->line("for (int " + q + " = 0; " + q + " < " + sAcc + "; ++" + q + ") " + red + "[" + part + "][" + q + "][" +
             lane + "] = " + acc + "[" + q + "];");
    w_->line("__syncthreads();");
    w_->open("if (" + part + " == 0 && " + i + " < " + numel(pixels) + ")");
    w_->line("#pragma unroll");
    w_->open("for (int " + q + " = 0; " + q + " < " + sAcc + "; ++" + q + ")");
    w_->line("#pragma unroll");
    w_->line("for (int k = 1; k < " + sParts + "; ++k) " + acc + "[" + q + "] += " + red + "[k][" + q + "][" + lane +
             "];");
    w_->close();
  }
  w_->line("#pragma unroll");
  w_->open("for (int " + v + " = 0; " + v + " < " + sRun + "; ++" + v + ")");
  std::string ow = run > 1 ? idx_var(ow0 + " + " + v) : ow0;
  if (run > 1) w_->open("if (" + ow + " < " + dim(d.out_w) + ")");
  for (int64_t j = 0; j < og; ++j)
    d.store(n, outs[size_t(j)], oh, ow, acc + "[" + std::to_string(j * run) + " + " + v + "]");
  if (run > 1) w_->close();
  w_->close();
  if (split) {
    w_->close();  // if (part == 0)
    w_->line("__syncthreads();");
  }
  w_->close();
  if (split) {
    auto count = as_const_int(pixels[0] * pixels[1] * pixels[2] * pixels[3]);
    set_grid(min(floordiv(int_imm(*count + kLanes - 1), int_imm(kLanes)), int_imm(65535)), int_imm(1), int_imm(1),
             uint32_t(kLanes * parts));
  } else {
    set_grid_per_element(pixels);
  }
}

void KernelEmitter::emit_conv2d() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const int xid = A.operands.at(0), wid = A.operands.at(1);
  const KValue& X = values_[size_t(xid)];
  const KValue& Wt = values_[size_t(wid)];
  std::vector<int> dpos = layout_positions(attr_string(call, "data_layout", "NCHW"), "NCHW");
  std::vector<int> kpos = layout_positions(attr_string(call, "kernel_layout", "OIHW"), "OIHW");
  std::vector<int> opos = layout_positions(attr_string(call, "out_layout", attr_string(call, "data_layout", "NCHW")), "NCHW");
  std::vector<int64_t> st = attr_pair(call, "strides", 1), dil = attr_pair(call, "dilation", 1);
  std::vector<int64_t> pad = attr_padding(call, "padding");
  int64_t groups = attr_int(call, "groups", 1);
  const PrimExpr n_img = X.shape[size_t(dpos[0])];
  const PrimExpr O = Wt.shape[size_t(kpos[0])], CG = Wt.shape[size_t(kpos[1])];
  const PrimExpr KH = Wt.shape[size_t(kpos[2])], KW = Wt.shape[size_t(kpos[3])];
  const PrimExpr OH = A.shape[size_t(opos[2])], OW = A.shape[size_t(opos[3])];
  const PrimExpr OG = floordiv(O, int_imm(groups));
  std::vector<std::string> xd = dims_of(X.shape), wd = dims_of(Wt.shape), od = dims_of(A.shape);
  const std::string H = xd[size_t(dpos[2])], W = xd[size_t(dpos[3])];
  const std::string sKH = dim(KH), sKW = dim(KW), sOH = dim(OH), sOW = dim(OW), sCG = dim(CG), sOG = dim(OG);
  const std::string acc_t = gemm_accumulator(X.dtype);

  // Input element (n, channel, ih, iw) when inside the image, else 0 (the zero padding). Without
  // padding, a plain evaluation. With it, evaluated at the position clamped into the image and
  // then selected, not under a branch: the loads of a GEMM tile then lie in one block, where the
  // compiler shares what they have in common (the clamp, a fused producer's index arithmetic).
  const bool padded = std::any_of(pad.begin(), pad.end(), [](int64_t p) { return p != 0; });
  auto input = [&](const std::string& n, const std::string& ch, const std::string& ih, const std::string& iw) {
    Index in{xd, "", std::vector<std::string>(4)};
    in.coords[size_t(dpos[0])] = n;
    in.coords[size_t(dpos[1])] = ch;
    if (!padded) {
      in.coords[size_t(dpos[2])] = ih;
      in.coords[size_t(dpos[3])] = iw;
      return "(" + acc_t + ")" + eval(xid, in);
    }
    in.coords[size_t(dpos[2])] = idx_var("min(max(" + ih + ", (pt_idx)0), (pt_idx)(" + H + " - 1))");
    in.coords[size_t(dpos[3])] = idx_var("min(max(" + iw + ", (pt_idx)0), (pt_idx)(" + W + " - 1))");
    std::string v = w_->fresh("x");
    w_->line("const " + acc_t + " " + v + " = (" + acc_t + ")" + eval(xid, in) + ";");
    return "(" + ih + " >= 0 && " + ih + " < " + H + " && " + iw + " >= 0 && " + iw + " < " + W + " ? " + v + " : (" +
           acc_t + ")0)";
  };
  auto weight = [&](const std::string& o, const std::string& c, const std::string& kh, const std::string& kw) {
    Index in{wd, "", std::vector<std::string>(4)};
    in.coords[size_t(kpos[0])] = o;
    in.coords[size_t(kpos[1])] = c;
    in.coords[size_t(kpos[2])] = kh;
    in.coords[size_t(kpos[3])] = kw;
    return "(" + acc_t + ")" + eval(wid, in);
  };
  auto in_row = [&](const std::string& o, const std::string& k, int axis) {
    return idx_var(o + " * " + std::to_string(st[size_t(axis)]) + " - " + std::to_string(pad[size_t(axis)]) + " + " + k +
                   " * " + std::to_string(dil[size_t(axis)]));
  };
  auto store = [&](const std::string& n, const std::string& o, const std::string& oh, const std::string& ow,
                   const std::string& acc) {
    Index out{od, "", std::vector<std::string>(4)};
    out.coords[size_t(opos[0])] = n;
    out.coords[size_t(opos[1])] = o;
    out.coords[size_t(opos[2])] = oh;
    out.coords[size_t(opos[3])] = ow;
    out.linear = linear_of(out);
    set_anchor_value(out, "(" + compute_type(A.dtype) + ")(" + acc + ")");
    store_outputs(out);
  };

  auto og = as_const_int(OG);
  if (og && *og < 16) {
    emit_direct_conv({xid, n_img, groups, OH, OW, CG, KH, KW, *og, st[1] == 1 && dil[1] == 1, input, weight, in_row, store});
    return;
  }

  GemmSpec g;
  g.batch = int_imm(groups);
  g.m = OG;
  g.n = n_img * OH * OW;
  g.k = CG * KH * KW;
  g.acc = acc_t;
  const std::string window = dim(KH * KW);
  // k -> (c, kh, kw); p -> (n, oh, ow). K runs over the kernel taps, the channels within each,
  // where the group's channels are a multiple of the slice depth: a slice then lies within one
  // tap, so its tap, the input row and column it reads and their fused producers' index
  // arithmetic (a pad's reflection, a resize) are the same for every element a thread loads in
  // it, evaluated once per slice. Otherwise over the channels, the taps within each.
  const auto cg = as_const_int(CG);
  const auto taps = as_const_int(KH * KW);
  const bool one_tap = taps && *taps == 1;
  auto split_k = [&](const KIndex& k) {
    if (!one_tap && cg && *cg % k.depth == 0) {
      const std::string slice = "(" + k.slice + ")";
      std::string tap = idx_var(slice + " / " + sCG), c = idx_var(slice + " % " + sCG + " + " + k.offset);
      return std::array<std::string, 3>{c, idx_var(tap + " / " + sKW), idx_var(tap + " % " + sKW)};
    }
    const std::string kv = k.value();
    std::string c = idx_var(kv + " / " + window), r = idx_var(kv + " % " + window);
    return std::array<std::string, 3>{c, idx_var(r + " / " + sKW), idx_var(r + " % " + sKW)};
  };
  auto split_p = [&](const std::string& p) {
    std::string ow = idx_var(p + " % " + sOW), t = idx_var(p + " / " + sOW);
    return std::array<std::string, 3>{idx_var(t + " / " + sOH), idx_var(t + " % " + sOH), ow};
  };
  g.load_a = [&](const std::string& b, const std::string& m, const KIndex& k) {
    auto [c, kh, kw] = split_k(k);
    return weight(idx_var(b + " * " + sOG + " + " + m), c, kh, kw);
  };
  g.load_b = [&](const std::string& b, const KIndex& k, const std::string& p) {
    auto [c, kh, kw] = split_k(k);
    auto [n, oh, ow] = split_p(p);
    return input(n, idx_var(b + " * " + sCG + " + " + c), in_row(oh, kh, 0), in_row(ow, kw, 1));
  };
  g.store = [&](const std::string& b, const std::string& m, const std::string& p, const std::string& acc) {
    auto [n, oh, ow] = split_p(p);
    store(n, idx_var(b + " * " + sOG + " + " + m), oh, ow, acc);
  };
  g.mma_type = mma_type(X.dtype);
  g.prefetch = tuning_.prefetch && plain_read(xid) && plain_read(wid);
  GemmKernel k = emit_gemm(*this, g);
  set_grid(floordiv(g.n + int_imm(k.tile_n - 1), int_imm(k.tile_n)),
           min(floordiv(g.m + int_imm(k.tile_m - 1), int_imm(k.tile_m)), int_imm(65535)), min(g.batch, int_imm(65535)),
           uint32_t(k.threads));
}

}  // namespace partita::backend::cuda
