// Einsum as the operators a backend runs well: one operand becomes a sum and a transpose; two
// operands become a batched matrix product — each operand transposed to (batch..., free,
// contracted) and flattened to (batch..., M, K) / (batch..., K, N), multiplied, reshaped and
// transposed to the output's order. Letters that appear in one operand only are summed first.
// A letter repeated within one operand takes the diagonal first (a strided slice of the two axes
// flattened). Ellipses are supported when every operand's ellipsis covers the same dimensions.
#include <algorithm>
#include <set>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using IntList = std::vector<int64_t>;

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

/// Parses `text` ("ij,jk->ik", implicit outputs, ellipses expanded to fresh letters).
Equation parse(const NodeContext& ctx, std::string text, const std::vector<int>& ranks) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  Equation eq;
  size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  bool implicit = arrow == std::string::npos;
  std::string rhs = implicit ? "" : text.substr(arrow + 2);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    eq.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq.inputs.size() != ranks.size())
    ctx.fail("the equation has " + std::to_string(eq.inputs.size()) + " operands but the node " +
             std::to_string(ranks.size()) + " inputs");
  // Fresh letters for the ellipsis dimensions (digits cannot clash with the equation's letters).
  int ellipsis_dims = -1;
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    std::string& term = eq.inputs[k];
    size_t at = term.find("...");
    if (at == std::string::npos) continue;
    int n = ranks[k] - int(term.size() - 3);
    if (n < 0) ctx.fail("operand " + std::to_string(k) + " has fewer dimensions than its subscripts");
    if (ellipsis_dims >= 0 && n != ellipsis_dims)
      ctx.fail("ellipses covering different numbers of dimensions are not supported", "NotImplementedError");
    ellipsis_dims = n;
    std::string fresh;
    for (int d = 0; d < n; ++d) fresh += char('0' + d);
    term.replace(at, 3, fresh);
  }
  std::string fresh;
  for (int d = 0; d < std::max(ellipsis_dims, 0); ++d) fresh += char('0' + d);
  if (implicit) {
    // The letters that appear once, in alphabetical order, after the ellipsis dimensions.
    std::map<char, int> count;
    for (const auto& t : eq.inputs)
      for (char c : t)
        if (std::isalpha(static_cast<unsigned char>(c))) ++count[c];
    eq.output = fresh;
    for (auto [c, n] : count)
      if (n == 1) eq.output += c;
  } else {
    size_t at = rhs.find("...");
    if (at != std::string::npos) rhs.replace(at, 3, fresh);
    eq.output = rhs;
  }
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const std::string& t = eq.inputs[k];
    if (int(t.size()) != ranks[k])
      ctx.fail("operand " + std::to_string(k) + " has rank " + std::to_string(ranks[k]) + " but subscripts '" + t + "'");
  }
  for (char c : eq.output) {
    bool found = std::any_of(eq.inputs.begin(), eq.inputs.end(), [&](const std::string& t) { return t.find(c) != std::string::npos; });
    if (!found) ctx.fail(std::string("output subscript '") + c + "' appears in no operand");
  }
  return eq;
}

class Lowering {
 public:
  explicit Lowering(NodeContext& ctx) : ctx_(ctx) {}

  /// `x` with subscripts `from` transposed to the subscripts `to` (a permutation of them).
  Expr transpose(Expr x, const std::string& from, const std::string& to) {
    IntList perm;
    for (char c : to) perm.push_back(int64_t(from.find(c)));
    bool identity = true;
    for (size_t k = 0; k < perm.size(); ++k) identity &= perm[k] == int64_t(k);
    return identity ? x : ctx_.emit(op::permute_dims(x, perm));
  }

  /// Takes the diagonal of every letter repeated in `term` (the subscripts of `x`): the two axes
  /// moved last and flattened, every (n + 1)-th element kept. Updates `term`.
  Expr diagonals(Expr x, std::string& term) {
    for (size_t p = 0; p < term.size(); ++p) {
      size_t q = term.find(term[p], p + 1);
      if (q == std::string::npos) continue;
      std::string rest;
      IntList perm;
      for (size_t k = 0; k < term.size(); ++k)
        if (k != p && k != q) {
          rest += term[k];
          perm.push_back(int64_t(k));
        }
      perm.push_back(int64_t(p));
      perm.push_back(int64_t(q));
      const PrimExpr n = shape_of(x)[p];
      if (!prove_equal(n, shape_of(x)[q])) ctx_.fail(std::string("the diagonal of '") + term[p] + "' is not square");
      if (q != p + 1 || q + 1 != term.size()) x = ctx_.emit(op::permute_dims(x, perm));
      std::vector<PrimExpr> flat(shape_of(x).begin(), shape_of(x).end() - 2);
      flat.push_back(n * n);
      x = reshape(x, flat);
      const int64_t last = int64_t(flat.size()) - 1;
      x = ctx_.emit(op::strided_slice(x, {last}, {int_imm(0)}, {n * n}, std::vector<PrimExpr>{n + int_imm(1)}));
      term = rest + term[p];
      p = size_t(-1);  // start over: the letter may repeat a third time
    }
    return x;
  }

  /// Sums the axes of `x` (subscripts `term`) whose letters are not in `keep`; updates `term`.
  Expr sum_out(Expr x, std::string& term, const std::string& keep) {
    IntList axes;
    std::string rest;
    for (size_t k = 0; k < term.size(); ++k) {
      if (keep.find(term[k]) == std::string::npos) axes.push_back(int64_t(k));
      else rest += term[k];
    }
    if (axes.empty()) return x;
    term = rest;
    return ctx_.emit(op::sum(x, axes, false));
  }

  Expr reshape(Expr x, std::vector<PrimExpr> shape) {
    const auto& cur = shape_of(x);
    bool same = cur.size() == shape.size();
    for (size_t k = 0; same && k < shape.size(); ++k) same = prove_equal(cur[k], shape[k]);
    return same ? x : ctx_.emit(op::reshape(x, shape));
  }

  static const std::vector<PrimExpr>& shape_of(const Expr& x) {
    return *x->struct_info_.as<TensorStructInfoNode>()->shape;
  }

  /// The dims of `x` (subscripts `term`) for the letters `letters`.
  static std::vector<PrimExpr> dims_of(const Expr& x, const std::string& term, const std::string& letters) {
    std::vector<PrimExpr> out;
    for (char c : letters) out.push_back(shape_of(x)[term.find(c)]);
    return out;
  }

  static PrimExpr product(const std::vector<PrimExpr>& v) {
    PrimExpr p = int_imm(1);
    for (const auto& d : v) p = p * d;
    return p;
  }

  Expr two_operands(Expr a, std::string ta, Expr b, std::string tb, const std::string& out) {
    auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
    a = diagonals(a, ta);
    b = diagonals(b, tb);
    a = sum_out(a, ta, tb + out);
    b = sum_out(b, tb, ta + out);
    std::string batch, contracted, free_a, free_b;
    for (char c : ta) {
      if (in(tb, c) && in(out, c)) batch += c;
      else if (in(tb, c)) contracted += c;
      else free_a += c;
    }
    for (char c : tb)
      if (!in(ta, c)) free_b += c;
    a = transpose(a, ta, batch + free_a + contracted);
    b = transpose(b, tb, batch + contracted + free_b);
    std::vector<PrimExpr> batch_a = dims_of(a, batch + free_a + contracted, batch);
    std::vector<PrimExpr> batch_b = dims_of(b, batch + contracted + free_b, batch);
    std::vector<PrimExpr> fa = dims_of(a, batch + free_a + contracted, free_a);
    std::vector<PrimExpr> fb = dims_of(b, batch + contracted + free_b, free_b);
    PrimExpr k = product(dims_of(a, batch + free_a + contracted, contracted));
    auto with = [](std::vector<PrimExpr> v, std::initializer_list<PrimExpr> tail) {
      v.insert(v.end(), tail);
      return v;
    };
    a = reshape(a, with(batch_a, {product(fa), k}));
    b = reshape(b, with(batch_b, {k, product(fb)}));
    Expr y = ctx_.emit(op::matmul(a, b));
    std::vector<PrimExpr> full(shape_of(y).begin(), shape_of(y).begin() + int64_t(batch.size()));
    full.insert(full.end(), fa.begin(), fa.end());
    full.insert(full.end(), fb.begin(), fb.end());
    y = reshape(y, full);
    return transpose(y, batch + free_a + free_b, out);
  }

 private:
  NodeContext& ctx_;
};

std::vector<Value> einsum(NodeContext& ctx) {
  std::vector<int> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ranks.push_back(ctx.ndim(i));
    ctx.shape(i);  // fails when a shape is unknown
  }
  Equation eq = parse(ctx, ctx.attr_string("equation", ""), ranks);
  Lowering low(ctx);
  if (eq.inputs.size() == 1) {
    std::string t = eq.inputs[0];
    Expr x = low.diagonals(ctx.input(0), t);
    x = low.sum_out(x, t, eq.output);
    return {Value{low.transpose(x, t, eq.output), std::nullopt}};
  }
  if (eq.inputs.size() == 2) {
    for (char c : eq.output)
      if (std::count(eq.output.begin(), eq.output.end(), c) != 1) ctx.fail("an output subscript is repeated");
    return {Value{low.two_operands(ctx.input(0), eq.inputs[0], ctx.input(1), eq.inputs[1], eq.output), std::nullopt}};
  }
  ctx.fail("only one or two operands are supported", "NotImplementedError");
}

}  // namespace

void register_einsum(std::map<std::string, ConvertFn>& t) { t["Einsum"] = einsum; }

}  // namespace partita::frontend::onnx_detail
