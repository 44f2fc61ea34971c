// The canonical form of integer PrimExprs.
//
// An expression is read into a polynomial: a constant plus a sorted list of (monomial,
// coefficient) terms, where a monomial is a sorted list of atoms (PrimVars, or non-linear parts
// such as `x // y` or `T.min(x, y)` whose operands are themselves canonical). floordiv, floormod,
// min and max by constants are simplified where an identity allows it; otherwise they become
// atoms. The polynomial is then rebuilt from plain IntImm / PrimVar / PrimBinary nodes, so it
// prints as TVM prints it (`n * 2 + 1`, `n // 2`, `5 - n`).
//
// Atoms are ordered by kind, then PrimVars by name (then address, which only matters for
// distinct variables sharing a name), then composite atoms by operator and operands.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "partita/ir/prim_expr.h"

namespace partita {
namespace {

struct Overflow {};

int64_t add_ck(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw Overflow{};
  return r;
}
int64_t mul_ck(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Overflow{};
  return r;
}
int64_t neg_ck(int64_t a) { return mul_ck(a, -1); }
int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1) return neg_ck(a);
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  return a - floor_div(a, b) * b;
}

int kind_rank(NodeKind k) {
  switch (k) {
    case NodeKind::IntImm: return 0;
    case NodeKind::FloatImm: return 1;
    case NodeKind::PrimVar: return 2;
    default: return 3;
  }
}

/// A total order over canonical expressions (three-way).
int compare_expr(const PrimExprNode* a, const PrimExprNode* b) {
  if (a == b) return 0;
  int ra = kind_rank(a->kind()), rb = kind_rank(b->kind());
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (a->kind()) {
    case NodeKind::IntImm: {
      int64_t x = static_cast<const IntImmNode*>(a)->value, y = static_cast<const IntImmNode*>(b)->value;
      if (x != y) return x < y ? -1 : 1;
      break;
    }
    case NodeKind::FloatImm: {
      double x = static_cast<const FloatImmNode*>(a)->value, y = static_cast<const FloatImmNode*>(b)->value;
      if (x != y) return x < y ? -1 : 1;
      break;
    }
    case NodeKind::PrimVar: {
      int c = static_cast<const PrimVarNode*>(a)->name.compare(static_cast<const PrimVarNode*>(b)->name);
      if (c != 0) return c < 0 ? -1 : 1;
      return std::less<const void*>()(a, b) ? -1 : 1;  // distinct variables with one name
    }
    default: {
      const auto* x = static_cast<const PrimBinaryNode*>(a);
      const auto* y = static_cast<const PrimBinaryNode*>(b);
      if (x->op != y->op) return x->op < y->op ? -1 : 1;
      if (int c = compare_expr(x->a.get(), y->a.get())) return c;
      if (int c = compare_expr(x->b.get(), y->b.get())) return c;
      break;
    }
  }
  DataType da = a->dtype, db = b->dtype;
  if (da == db) return 0;
  if (da.code() != db.code()) return da.code() < db.code() ? -1 : 1;
  if (da.bits() != db.bits()) return da.bits() < db.bits() ? -1 : 1;
  return da.lanes() < db.lanes() ? -1 : 1;
}

using Monomial = std::vector<PrimExpr>;  // atoms in compare_expr order, repeated for powers

int compare_mono(const Monomial& a, const Monomial& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare_expr(a[i].get(), b[i].get())) return c;
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

struct Poly {
  std::vector<std::pair<Monomial, int64_t>> terms;  // sorted by monomial; no zero coefficients
  int64_t constant = 0;
  bool is_const() const { return terms.empty(); }
};

Poly const_poly(int64_t c) {
  Poly p;
  p.constant = c;
  return p;
}
Poly atom_poly(PrimExpr atom) {
  Poly p;
  p.terms.push_back({Monomial{std::move(atom)}, 1});
  return p;
}

Poly scale(Poly p, int64_t c) {
  if (c == 0) return const_poly(0);
  for (auto& t : p.terms) t.second = mul_ck(t.second, c);
  p.constant = mul_ck(p.constant, c);
  return p;
}

Poly add(const Poly& a, const Poly& b) {
  Poly r;
  r.constant = add_ck(a.constant, b.constant);
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    int c = i == a.terms.size() ? 1 : j == b.terms.size() ? -1 : compare_mono(a.terms[i].first, b.terms[j].first);
    if (c < 0) {
      r.terms.push_back(a.terms[i++]);
    } else if (c > 0) {
      r.terms.push_back(b.terms[j++]);
    } else {
      int64_t coef = add_ck(a.terms[i].second, b.terms[j].second);
      if (coef != 0) r.terms.push_back({a.terms[i].first, coef});
      ++i, ++j;
    }
  }
  return r;
}

Poly sub(const Poly& a, const Poly& b) { return add(a, scale(b, -1)); }

bool same_poly(const Poly& a, const Poly& b) {
  if (a.constant != b.constant || a.terms.size() != b.terms.size()) return false;
  for (size_t i = 0; i < a.terms.size(); ++i)
    if (a.terms[i].second != b.terms[i].second || compare_mono(a.terms[i].first, b.terms[i].first) != 0)
      return false;
  return true;
}

/// The single atom of `p` when p is exactly that atom (coefficient 1, no constant).
const PrimBinaryNode* single_binary_atom(const Poly& p, PrimOp op) {
  if (p.constant != 0 || p.terms.size() != 1 || p.terms[0].second != 1 || p.terms[0].first.size() != 1)
    return nullptr;
  const auto* bin = p.terms[0].first[0].as<PrimBinaryNode>();
  return bin && bin->op == op ? bin : nullptr;
}

class Simplifier {
 public:
  explicit Simplifier(DataType dtype) : dtype_(dtype) {}

  Poly to_poly(const PrimExpr& e) {
    switch (e->kind()) {
      case NodeKind::IntImm: return const_poly(static_cast<const IntImmNode*>(e.get())->value);
      case NodeKind::PrimBinary: break;
      default: return atom_poly(e);  // PrimVar, FloatImm
    }
    const auto* bin = static_cast<const PrimBinaryNode*>(e.get());
    Poly a = to_poly(bin->a), b = to_poly(bin->b);
    switch (bin->op) {
      case PrimOp::Add: return add(a, b);
      case PrimOp::Sub: return sub(a, b);
      case PrimOp::Mul: return mul(a, b);
      case PrimOp::FloorDiv: return div(a, b);
      case PrimOp::FloorMod: return mod(a, b);
      case PrimOp::Min:
      case PrimOp::Max: return min_max(bin->op, a, b);
    }
    return atom_poly(e);
  }

  PrimExpr rebuild(const Poly& p) {
    PrimExpr out;
    // Positive terms first, then negative ones subtracted, then the constant.
    for (const auto& [mono, coef] : p.terms) {
      if (coef < 0) continue;
      PrimExpr t = term(mono, coef);
      out = out ? binary(PrimOp::Add, out, t) : t;
    }
    if (!out && p.constant > 0 && !p.terms.empty()) out = imm(p.constant);
    bool constant_done = out && out.as<IntImmNode>();
    for (const auto& [mono, coef] : p.terms) {
      if (coef > 0) continue;
      if (!out) {
        out = term(mono, coef);  // `n * -1`
      } else if (coef == INT64_MIN) {
        out = binary(PrimOp::Add, out, term(mono, coef));
      } else {
        out = binary(PrimOp::Sub, out, term(mono, -coef));
      }
    }
    if (!out) return imm(p.constant);
    if (constant_done || p.constant == 0) return out;
    if (p.constant > 0 || p.constant == INT64_MIN) return binary(PrimOp::Add, out, imm(p.constant));
    return binary(PrimOp::Sub, out, imm(-p.constant));
  }

 private:
  PrimExpr imm(int64_t v) { return make<IntImmNode>(v, dtype_); }
  static PrimExpr binary(PrimOp op, const PrimExpr& a, const PrimExpr& b) {
    return make<PrimBinaryNode>(op, a, b);
  }
  PrimExpr term(const Monomial& mono, int64_t coef) {
    PrimExpr out = mono[0];
    for (size_t i = 1; i < mono.size(); ++i) out = binary(PrimOp::Mul, out, mono[i]);
    return coef == 1 ? out : binary(PrimOp::Mul, out, imm(coef));
  }
  Poly opaque(PrimOp op, const Poly& a, const Poly& b) { return atom_poly(binary(op, rebuild(a), rebuild(b))); }

  Poly mul(const Poly& a, const Poly& b) {
    if (a.is_const()) return scale(b, a.constant);
    if (b.is_const()) return scale(a, b.constant);
    // Distribute, unless that would blow up.
    size_t na = a.terms.size() + (a.constant != 0), nb = b.terms.size() + (b.constant != 0);
    if (na * nb > 256) return opaque(PrimOp::Mul, a, b);
    Poly r;
    auto with_const = [](const Poly& p) {
      std::vector<std::pair<Monomial, int64_t>> t = p.terms;
      if (p.constant != 0) t.push_back({Monomial{}, p.constant});
      return t;
    };
    for (const auto& [ma, ca] : with_const(a)) {
      for (const auto& [mb, cb] : with_const(b)) {
        Poly t;
        Monomial m;
        m.reserve(ma.size() + mb.size());
        std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m),
                   [](const PrimExpr& x, const PrimExpr& y) { return compare_expr(x.get(), y.get()) < 0; });
        int64_t c = mul_ck(ca, cb);
        if (m.empty()) t.constant = c; else t.terms.push_back({std::move(m), c});
        r = add(r, t);
      }
    }
    return r;
  }

  // a / b when b is one positive monomial term that divides every term of a exactly
  // (`n*40 // (n*5)` is 8); shape variables are non-negative, and a zero divisor is an error
  // at run time either way.
  static std::optional<Poly> exact_quotient(const Poly& a, const Poly& b) {
    if (b.terms.size() != 1 || b.constant != 0 || b.terms[0].second <= 0 || a.constant != 0) return std::nullopt;
    const auto& [m, c] = b.terms[0];
    Poly q;
    for (const auto& [mono, coef] : a.terms) {
      if (coef % c != 0) return std::nullopt;
      Monomial rest;
      size_t j = 0;
      for (const auto& atom : mono) {
        if (j < m.size() && compare_expr(atom.get(), m[j].get()) == 0) ++j;
        else rest.push_back(atom);
      }
      if (j != m.size()) return std::nullopt;
      if (rest.empty()) q = add(q, const_poly(coef / c));
      else q = add(q, scale(mono_poly(std::move(rest)), coef / c));
    }
    return q;
  }

  static Poly mono_poly(Monomial m) {
    Poly p;
    p.terms.push_back({std::move(m), 1});
    return p;
  }

  Poly div(Poly a, const Poly& b) {
    if (!b.is_const()) {
      if (a.is_const() && a.constant == 0) return const_poly(0);
      if (same_poly(a, b)) return const_poly(1);
      if (auto q = exact_quotient(a, b)) return *q;
      return opaque(PrimOp::FloorDiv, a, b);
    }
    int64_t c = b.constant;
    if (c == 0) return opaque(PrimOp::FloorDiv, a, b);  // left for run time to report
    if (a.is_const()) return const_poly(floor_div(a.constant, c));
    if (c == 1) return a;
    if (c < 0) return opaque(PrimOp::FloorDiv, a, b);
    // floordiv(g*x, g*c) == floordiv(x, c) for g > 0.
    int64_t g = std::gcd(c, a.constant);
    for (const auto& t : a.terms) g = std::gcd(g, t.second);
    if (g > 1) {
      for (auto& t : a.terms) t.second /= g;
      a.constant /= g;
      c /= g;
      if (c == 1) return a;
    }
    // floordiv(c*q + r, c) == q + floordiv(r, c): pull out the terms that c divides.
    Poly q, r;
    for (const auto& t : a.terms) {
      if (t.second % c == 0) q.terms.emplace_back(t.first, t.second / c);
      else r.terms.push_back(t);
    }
    if (a.constant % c == 0) q.constant = a.constant / c; else r.constant = a.constant;
    if (r.is_const()) return add(q, const_poly(floor_div(r.constant, c)));
    if (const auto* inner = single_binary_atom(r, PrimOp::FloorDiv)) {
      // floordiv(floordiv(x, d), c) == floordiv(x, d*c) for d, c > 0.
      auto d = as_const_int(inner->b);
      if (d && *d > 0) return add(q, div(to_poly(inner->a), const_poly(mul_ck(*d, c))));
    }
    if (const auto* inner = single_binary_atom(r, PrimOp::FloorMod)) {
      // 0 <= floormod(x, d) < d <= c.
      auto d = as_const_int(inner->b);
      if (d && *d > 0 && *d <= c) return q;
    }
    return add(q, opaque(PrimOp::FloorDiv, r, const_poly(c)));
  }

  Poly mod(Poly a, const Poly& b) {
    if (!b.is_const()) {
      if (a.is_const() && a.constant == 0) return const_poly(0);
      if (same_poly(a, b) || exact_quotient(a, b)) return const_poly(0);
      return opaque(PrimOp::FloorMod, a, b);
    }
    int64_t c = b.constant;
    if (c == 0) return opaque(PrimOp::FloorMod, a, b);
    if (a.is_const()) return const_poly(floor_mod(a.constant, c));
    if (c == 1 || c == -1) return const_poly(0);
    if (c < 0) return opaque(PrimOp::FloorMod, a, b);
    // floormod(x + c*k, c) == floormod(x, c): reduce every coefficient modulo c.
    Poly r;
    for (const auto& t : a.terms) {
      int64_t coef = floor_mod(t.second, c);
      if (coef != 0) r.terms.emplace_back(t.first, coef);
    }
    r.constant = floor_mod(a.constant, c);
    if (r.is_const()) return r;
    if (const auto* inner = single_binary_atom(r, PrimOp::FloorMod)) {
      auto d = as_const_int(inner->b);
      if (d && *d > 0 && *d <= c) return r;                                     // already < c
      if (d && *d > 0 && *d % c == 0) return mod(to_poly(inner->a), const_poly(c));  // c | d
    }
    return opaque(PrimOp::FloorMod, r, const_poly(c));
  }

  Poly min_max(PrimOp op, const Poly& a, const Poly& b) {
    Poly d = sub(a, b);
    if (d.is_const()) {
      bool a_wins = op == PrimOp::Min ? d.constant <= 0 : d.constant >= 0;
      return a_wins ? a : b;
    }
    return opaque(op, a, b);
  }

  DataType dtype_;
};

}  // namespace

PrimExpr simplify(const PrimExpr& e) {
  if (!e.defined() || !e.as<PrimBinaryNode>() || !e->dtype.is_int()) return e;
  Simplifier s(e->dtype);
  try {
    return s.rebuild(s.to_poly(e));
  } catch (const Overflow&) {
    return e;  // constants too large to fold: keep the expression as written
  }
}

}  // namespace partita
