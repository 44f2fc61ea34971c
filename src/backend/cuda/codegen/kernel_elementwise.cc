// Kernels without an anchor: one thread per output element (grid-stride), the outputs one after
// the other in one index space, each element computed inline.
#include <memory>

#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_elementwise() {
  constexpr int kBlock = 256;
  std::vector<PrimExpr> counts;
  PrimExpr total = int_imm(0);
  for (int o : outputs_) {
    PrimExpr n = int_imm(1);
    for (const auto& d : values_[size_t(o)].shape) n = n * d;
    counts.push_back(n);
    total = total + n;
  }
  if (auto c = as_const_int(total)) max_elements_ = std::max(max_elements_, *c);
  w_->line("const pt_idx total = " + dim(total) + ";");
  std::string i = w_->fresh("e");
  w_->open("for (pt_idx " + i + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + i + " < total; " + i +
           " += (pt_idx)gridDim.x * blockDim.x)");
  PrimExpr start = int_imm(0);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const KValue& v = values_[size_t(outputs_[k])];
    PrimExpr end = start + counts[k];
    if (outputs_.size() > 1) {
      std::string cond = i + " < " + dim(end);
      if (k == 0) w_->open("if (" + cond + ")");
      else if (k + 1 < outputs_.size()) w_->reopen("} else if (" + cond + ") {");
      else w_->reopen("} else {");
    }
    std::string lin = k == 0 ? i : idx_var(i + " - " + dim(start));
    Index idx{dims_of(v.shape), lin, {}};
    std::string e = eval(outputs_[k], idx);
    w_->line("out" + std::to_string(k) + "[" + lin + "] = " + store_expr(v.dtype, e) + ";");
    start = end;
  }
  if (outputs_.size() > 1) w_->close();
  w_->close();
  PrimExpr blocks = min(floordiv(total + int_imm(kBlock - 1), int_imm(kBlock)), int_imm(1 << 16));
  set_grid(blocks, int_imm(1), int_imm(1), kBlock);
  emit_elementwise_vector();
}

// The variant for 16-byte accesses: each thread computes VEC consecutive elements of every
// output (VEC = 16 bytes / the outputs' element size), reading the inputs of the outputs' element
// count and element size with one 16-byte load each and writing each output with one store; the
// few elements after the last whole vector are done one by one. Made when every output has one
// shape and element size; used when the pointers are aligned (kernel_launch.h).
void KernelEmitter::emit_elementwise_vector() {
  const KValue& first = values_[size_t(outputs_[0])];
  const int bytes = first.dtype.bytes();
  for (int o : outputs_)
    if (!same_shape(values_[size_t(o)].shape, first.shape) || values_[size_t(o)].dtype.bytes() != bytes) return;
  if (16 % bytes != 0) return;
  const int vec = 16 / bytes;
  PrimExpr total = int_imm(1);
  for (const auto& d : first.shape) total = total * d;
  // A shape with fewer elements than a vector gains nothing.
  if (auto c = as_const_int(total); c && *c < vec) return;
  std::vector<int> loads;  // inputs read at the outputs' own offsets, one vector each
  for (size_t v = 0; v < values_.size(); ++v) {
    const KValue& kv = values_[v];
    if (kv.kind != KValue::Param || kv.dtype.bytes() != bytes) continue;
    PrimExpr n = int_imm(1);
    for (const auto& d : kv.shape) n = n * d;
    if (prove_equal(n, total)) loads.push_back(int(v));
  }
  std::unique_ptr<CodeWriter> scalar = std::move(w_);
  w_ = std::make_unique<CodeWriter>();
  const std::string V = std::to_string(vec);
  w_->line("const pt_idx total = " + dim(total) + ";");
  w_->line("const pt_idx nvec = total / " + V + ";");
  std::string q = w_->fresh("q");
  w_->open("for (pt_idx " + q + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + q + " < nvec; " + q +
           " += (pt_idx)gridDim.x * blockDim.x)");
  w_->line("const pt_idx base = " + q + " * " + V + ";");
  std::vector<std::string> loaded;
  for (int v : loads) {
    const KValue& kv = values_[size_t(v)];
    std::string r = w_->fresh("r"), p = w_->fresh("p");
    w_->line("const uint4 " + r + " = *reinterpret_cast<const uint4*>(in" + std::to_string(kv.param) + " + base);");
    w_->line("const " + storage_type(kv.dtype) + "* " + p + " = reinterpret_cast<const " + storage_type(kv.dtype) + "*>(&" +
             r + ");");
    loaded.push_back(p);
    launch_.vector_inputs.push_back(kv.param);
  }
  std::vector<std::string> results;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    std::string o = w_->fresh("o");
    w_->line("__align__(16) " + storage_type(values_[size_t(outputs_[k])].dtype) + " " + o + "[" + V + "];");
    results.push_back(o);
  }
  for (int j = 0; j < vec; ++j) {
    w_->open("");
    std::string e = w_->fresh("e");
    w_->line("const pt_idx " + e + " = base + " + std::to_string(j) + ";");
    for (size_t l = 0; l < loads.size(); ++l)
      w_->put("v" + std::to_string(loads[l]) + "@" + e,
              load_expr(values_[size_t(loads[l])].dtype, loaded[l] + "[" + std::to_string(j) + "]"));
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const KValue& v = values_[size_t(outputs_[k])];
      std::string x = eval(outputs_[k], Index{dims_of(v.shape), e, {}});
      w_->line(results[k] + "[" + std::to_string(j) + "] = " + store_expr(v.dtype, x) + ";");
    }
    w_->close();
  }
  for (size_t k = 0; k < outputs_.size(); ++k)
    w_->line("*reinterpret_cast<uint4*>(out" + std::to_string(k) + " + base) = *reinterpret_cast<const uint4*>(" +
             results[k] + ");");
  w_->close();
  std::string e = w_->fresh("e");
  w_->open("for (pt_idx " + e + " = nvec * " + V + " + (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + e +
           " < total; " + e + " += (pt_idx)gridDim.x * blockDim.x)");
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const KValue& v = values_[size_t(outputs_[k])];
    std::string x = eval(outputs_[k], Index{dims_of(v.shape), e, {}});
    w_->line("out" + std::to_string(k) + "[" + e + "] = " + store_expr(v.dtype, x) + ";");
  }
  w_->close();
  vector_body_ = w_->str();
  w_ = std::move(scalar);
  launch_.vector_kernel = kernel_name_ + "_vec";
  PrimExpr vecs = floordiv(total, int_imm(vec));
  launch_.vector_grid = {program(blocks_for(vecs)), program(int_imm(1)), program(int_imm(1))};
}

}  // namespace partita::backend::cuda
