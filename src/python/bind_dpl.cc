// Bindings of the dataflow pattern language and the pattern-based partitioning passes.
#include "common.h"
#include "partita/backend/registry.h"
#include "partita/dpl/matcher.h"
#include "partita/dpl/pattern.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"
#include "partita/transform/pattern_registry.h"

namespace partita::python {

using dpl::Pattern;
using dpl::PatternSeq;
using transform::FusionPattern;
using transform::PatternCheckContext;

static void bind_patterns(py::module_& m) {
  py::class_<Pattern>(m, "DFPattern")
      .def("__call__", [](const Pattern& p, py::args args, bool varg_default_wildcard) {
        std::vector<Pattern> ps;
        for (py::handle h : args) ps.push_back(h.cast<Pattern>());
        return p(ps, varg_default_wildcard);
      }, py::kw_only(), py::arg("varg_default_wildcard") = false)
      .def("__or__", &Pattern::operator|)
      .def("__and__", &Pattern::operator&)
      .def("__invert__", &Pattern::operator~)
      .def("has_attr", &Pattern::has_attr)
      .def("has_dtype", py::overload_cast<const std::string&>(&Pattern::has_dtype, py::const_))
      .def("has_shape", [](const Pattern& p, const std::vector<PrimExpr>& s) { return p.has_shape(s); })
      .def("has_struct_info", &Pattern::has_struct_info)
      .def("same_shape_as", &Pattern::same_shape_as)
      .def("dup", &Pattern::dup)
      .def("match", [](const Pattern& p, const Expr& e) { return p.match(e); })
      .def("__hash__", [](const Pattern& p) { return dpl::PatternHash()(p); })
      .def("__eq__", [](const Pattern& a, const Pattern& b) { return a == b; })
      .def("__repr__", &Pattern::str)
      .def("__rshift__", [](const Pattern& a, const Pattern& b) { return dpl::used_by(a, b); })
      .def("__xor__", [](const Pattern& a, const Pattern& b) { return dpl::only_used_by(a, b); })
      .def("used_by", [](const Pattern& a, const Pattern& b, int i) { return dpl::used_by(a, b, i); },
           py::arg("other"), py::arg("index") = -1)
      .def("only_used_by", [](const Pattern& a, const Pattern& b, int i) { return dpl::only_used_by(a, b, i); },
           py::arg("other"), py::arg("index") = -1);

  py::class_<PatternSeq>(m, "PatternSeq")
      .def(py::init<std::vector<Pattern>, bool>(), py::arg("patterns"), py::arg("only_use") = false)
      .def_property_readonly("patterns", &PatternSeq::patterns)
      .def("used_by", py::overload_cast<const Pattern&, int>(&PatternSeq::used_by, py::const_),
           py::arg("other"), py::arg("index") = -1)
      .def("used_by", py::overload_cast<const PatternSeq&, int>(&PatternSeq::used_by, py::const_),
           py::arg("other"), py::arg("index") = -1)
      .def("only_used_by", py::overload_cast<const Pattern&, int>(&PatternSeq::only_used_by, py::const_),
           py::arg("other"), py::arg("index") = -1)
      .def("only_used_by", py::overload_cast<const PatternSeq&, int>(&PatternSeq::only_used_by, py::const_),
           py::arg("other"), py::arg("index") = -1)
      .def("__rshift__", [](const PatternSeq& a, const Pattern& b) { return a.used_by(b); })
      .def("__xor__", [](const PatternSeq& a, const Pattern& b) { return a.only_used_by(b); })
      .def("dup", &PatternSeq::dup);

  py::class_<dpl::PatternContext>(m, "PatternContext")
      .def(py::init<>())
      .def("add", py::overload_cast<const PatternSeq&>(&dpl::PatternContext::add))
      .def("add", py::overload_cast<const Pattern&>(&dpl::PatternContext::add));

  m.def("wildcard", &dpl::wildcard);
  m.def("is_op", &dpl::is_op);
  m.def("is_expr", &dpl::is_expr);
  m.def("is_const", &dpl::is_const);
  m.def("is_var", &dpl::is_var, py::arg("name") = "");
  m.def("is_dfv", &dpl::is_dfv, py::arg("name") = "");
  m.def("is_gv", &dpl::is_gv, py::arg("name") = "");
  m.def("is_extern", &dpl::is_extern, py::arg("symbol") = "");
  m.def("is_tuple", &dpl::is_tuple, py::arg("fields"), py::arg("unordered") = false);
  m.def("is_tuple_get_item", &dpl::is_tuple_get_item, py::arg("tuple_value"), py::arg("index") = py::none());
  m.def("is_shape", &dpl::is_shape);
  m.def("has_dtype", [](const std::string& t, std::optional<Pattern> p) {
    return dpl::has_dtype(DataType::parse(t), p.value_or(Pattern()));
  }, py::arg("dtype"), py::arg("pattern") = py::none());
  m.def("has_shape", [](std::vector<PrimExpr> s, std::optional<Pattern> p) {
    return dpl::has_shape(s, p.value_or(Pattern()));
  }, py::arg("shape"), py::arg("pattern") = py::none());
  m.def("has_attr", [](std::map<std::string, AttrValue> a, std::optional<Pattern> p) {
    return dpl::has_attr(a, p.value_or(Pattern()));
  }, py::arg("attrs"), py::arg("pattern") = py::none());
  m.def("reject", &dpl::reject);
  m.def("make_fused_bias_activation_pattern", &dpl::make_fused_bias_activation_pattern,
        py::arg("op_name"), py::arg("with_bias") = false, py::arg("activation") = py::none());
  m.def("match_expr", [](const Pattern& p, const Expr& e, std::optional<Function> in_func) {
    if (!in_func) return dpl::match_expr(p, e);
    auto bindings = dpl::collect_bindings(*in_func);
    return dpl::match_expr(p, e, &bindings);
  }, py::arg("pattern"), py::arg("expr"), py::arg("var2val") = py::none());
  m.def("extract_matched_expr", [](const Pattern& p, const Expr& e, std::optional<Function> in_func)
            -> std::optional<std::vector<std::pair<Pattern, Expr>>> {
    auto bindings = in_func ? dpl::collect_bindings(*in_func) : dpl::VarBindings();
    auto matched = dpl::extract_matched_expr(p, e, in_func ? &bindings : nullptr);
    if (!matched) return std::nullopt;
    return std::vector<std::pair<Pattern, Expr>>(matched->begin(), matched->end());
  }, py::arg("pattern"), py::arg("expr"), py::arg("var2val") = py::none());
  m.def("rewrite_call", [](const Pattern& p, std::function<Expr(Expr, std::vector<std::pair<Pattern, Expr>>)> fn,
                           const Function& func) {
    return dpl::rewrite_call(p, [&](const Expr& e, const dpl::MatchMap& mm) {
      return fn(e, std::vector<std::pair<Pattern, Expr>>(mm.begin(), mm.end()));
    }, func);
  });
}

static void bind_partition(py::module_& m) {
  py::class_<PatternCheckContext>(m, "PatternCheckContext")
      .def_readonly("matched_expr", &PatternCheckContext::matched_expr)
      .def_readonly("annotated_expr", &PatternCheckContext::annotated_expr)
      .def_property_readonly("matched_bindings", [](const PatternCheckContext& c) {
        return std::vector<std::pair<Var, Expr>>(c.matched_bindings.begin(), c.matched_bindings.end());
      })
      .def_property_readonly("var_usages", [](const PatternCheckContext& c) {
        return std::vector<std::pair<Var, std::vector<Var>>>(c.var_usages->begin(), c.var_usages->end());
      })
      .def_property_readonly("value_to_bound_var", [](const PatternCheckContext& c) {
        return std::vector<std::pair<Expr, Var>>(c.value_to_bound_var->begin(), c.value_to_bound_var->end());
      });
  m.def("has_leaking_intermediate_variables", &transform::has_leaking_intermediate_variables);

  py::class_<FusionPattern>(m, "FusionPattern")
      .def(py::init([](std::string name, Pattern pattern, std::map<std::string, Pattern> annotations,
                       py::object check,
                       std::function<std::map<std::string, AttrValue>(const std::map<std::string, Expr>&)> getter) {
             std::function<bool(const PatternCheckContext&)> check_fn;
             // The check gets its own copy of the context: a Python function may keep it after
             // it returns (the C++ one dies with the match).
             if (!check.is_none())
               check_fn = [check](const PatternCheckContext& ctx) {
                 return check(py::cast(ctx, py::return_value_policy::copy)).cast<bool>();
               };
             return FusionPattern{name, pattern, annotations, check_fn, getter};
           }),
           py::arg("name"), py::arg("pattern"), py::arg("annotation_patterns") = std::map<std::string, Pattern>(),
           py::arg("check") = py::none(), py::arg("attrs_getter") = py::none())
      .def_readonly("name", &FusionPattern::name)
      .def_readonly("pattern", &FusionPattern::pattern)
      .def_readonly("annotation_patterns", &FusionPattern::annotation_patterns);

  m.def("FuseOpsByPattern", &transform::FuseOpsByPattern, py::arg("patterns"),
        py::arg("bind_constants") = true, py::arg("annotate_codegen") = false,
        py::arg("entry_functions") = std::vector<std::string>());
  m.def("MergeCompositeFunctions", &transform::MergeCompositeFunctions);
  m.def("register_patterns", &transform::register_patterns);
  m.def("get_patterns_with_prefix", &transform::get_patterns_with_prefix);
  m.def("get_pattern", &transform::get_pattern);
  m.def("list_pattern_names", &transform::list_pattern_names);
  m.def("partition_for", &transform::partition_for, py::arg("backend_prefix"), py::arg("mod"),
        py::arg("merge") = true, py::arg("bind_constants") = true);
  m.def("prepare_for", &backend::prepare_for, py::arg("backends"), py::arg("mod"));
}

void init_dpl(py::module_& m) {
  bind_patterns(m);
  bind_partition(m);
}

}  // namespace partita::python
