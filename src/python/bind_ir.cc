// Bindings of the IR nodes. Properties come from each node's declared fields; only
// constructors and the few non-field accessors (names, struct info) are written here.
#include <cstring>

#include "common.h"

namespace partita::python {

static std::vector<PrimExpr> to_dims(const py::sequence& seq) {
  std::vector<PrimExpr> dims;
  for (py::handle h : seq) {
    if (py::isinstance<py::int_>(h)) dims.push_back(int_imm(h.cast<int64_t>()));
    else dims.push_back(h.cast<PrimExpr>());
  }
  return dims;
}

static PrimExpr to_prim(py::handle h) {
  if (py::isinstance<py::bool_>(h)) return int_imm(h.cast<bool>(), DataType::Bool());
  if (py::isinstance<py::int_>(h)) return int_imm(h.cast<int64_t>());
  if (py::isinstance<py::float_>(h)) return make<FloatImmNode>(h.cast<double>(), DataType::Float(64));
  return h.cast<PrimExpr>();
}

static void bind_prim_expr(py::module_& m) {
  auto prim = py::class_<PrimExprNode, Object, Ref<PrimExprNode>>(m, "PrimExpr")
                  .def_property_readonly("dtype", [](const PrimExprNode& e) { return e.dtype; });
  auto binop = [&](const char* name, PrimExpr (*fn)(const PrimExpr&, const PrimExpr&), bool reflected) {
    prim.def(name, [fn, reflected](const PrimExpr& a, py::handle b) {
      return reflected ? fn(to_prim(b), a) : fn(a, to_prim(b));
    });
  };
  binop("__add__", [](const PrimExpr& a, const PrimExpr& b) { return a + b; }, false);
  binop("__radd__", [](const PrimExpr& a, const PrimExpr& b) { return a + b; }, true);
  binop("__sub__", [](const PrimExpr& a, const PrimExpr& b) { return a - b; }, false);
  binop("__rsub__", [](const PrimExpr& a, const PrimExpr& b) { return a - b; }, true);
  binop("__mul__", [](const PrimExpr& a, const PrimExpr& b) { return a * b; }, false);
  binop("__rmul__", [](const PrimExpr& a, const PrimExpr& b) { return a * b; }, true);
  binop("__floordiv__", floordiv, false);
  binop("__rfloordiv__", floordiv, true);
  binop("__mod__", floormod, false);
  binop("__rmod__", floormod, true);

  bind_node<IntImmNode, PrimExprNode>(m, "IntImm")
      .def(py::init([](int64_t v, DataType t) { return make<IntImmNode>(v, t); }), py::arg("value"),
           py::arg("dtype") = DataType::Int(64))
      .def("__int__", [](const IntImmNode& n) { return n.value; });
  bind_node<FloatImmNode, PrimExprNode>(m, "FloatImm")
      .def(py::init([](double v, DataType t) { return make<FloatImmNode>(v, t); }), py::arg("value"),
           py::arg("dtype") = DataType::Float(32));
  bind_node<PrimVarNode, PrimExprNode>(m, "PrimVar")
      .def(py::init([](std::string name, DataType t) { return make<PrimVarNode>(name, t); }),
           py::arg("name"), py::arg("dtype") = DataType::Int(64))
      .def_property_readonly("name", [](const PrimVarNode& v) { return v.name; });
  bind_node<PrimBinaryNode, PrimExprNode>(m, "PrimBinary");
  m.def("simplify", &simplify);
  m.def("prove_equal", &prove_equal);
  m.def("prim_op_name", [](int op) { return prim_op_name(PrimOp(op)); });
}

/// A target from what TVM's VDevice accepts: a string ("cuda -arch=sm_80") or a dictionary.
static TargetDesc to_target(py::handle h) {
  if (py::isinstance<TargetDescNode>(h)) return h.cast<TargetDesc>();
  if (py::isinstance<py::str>(h)) return make_target(h.cast<std::string>());
  if (py::isinstance<py::dict>(h)) {
    TargetConfig config;
    TargetDesc host;
    for (auto [k, v] : h.cast<py::dict>()) {
      std::string key = k.cast<std::string>();
      if (key == "host" && !py::isinstance<py::str>(v)) host = to_target(v);
      else if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::str>(v) ||
               py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
        config[key] = v.cast<TargetAttrValue>();
      else
        throw_error("TypeError", "target option \"" + key + "\": expected a string, an integer, a bool or a list of "
                                 "strings, not " + std::string(py::str(v.get_type().attr("__name__"))));
    }
    return make_target(config, host);
  }
  throw_error("TypeError", "a target is a string such as \"cuda\" or a dictionary such as {\"kind\": \"cuda\"}");
}

static void bind_global_info(py::module_& m) {
  bind_node<TargetDescNode, Object>(m, "TargetDesc")
      .def(py::init([](py::handle target) { return to_target(target); }), py::arg("target"))
      .def_property_readonly("device_type", [](const TargetDescNode& t) { return target_device_type(t); })
      .def("to_config", [](const TargetDescNode& t) { return target_to_config(t); });
  py::class_<GlobalInfoNode, Object, Ref<GlobalInfoNode>>(m, "GlobalInfo");
  bind_node<VDeviceNode, GlobalInfoNode>(m, "VDevice")
      .def(py::init([](py::handle target, int vdevice_id, std::string memory_scope) {
             if (vdevice_id < 0) throw_error("ValueError", "VDevice: vdevice_id must not be negative");
             return make<VDeviceNode>(to_target(target), vdevice_id, std::move(memory_scope));
           }),
           py::arg("target"), py::arg("vdevice_id") = 0, py::arg("memory_scope") = "global");
  m.def("known_target_kinds", &known_target_kinds);
  m.def("device_type_from_name", &device_type_from_name);
}

static void bind_struct_info(py::module_& m) {
  py::class_<StructInfoNode, Object, Ref<StructInfoNode>>(m, "StructInfo");
  bind_node<ObjectStructInfoNode, StructInfoNode>(m, "ObjectStructInfo").def(py::init([] {
    return make<ObjectStructInfoNode>();
  }));
  bind_node<PrimStructInfoNode, StructInfoNode>(m, "PrimStructInfo")
      .def(py::init([](DataType t, PrimExpr v) { return make<PrimStructInfoNode>(t, v); }),
           py::arg("dtype"), py::arg("value") = py::none());
  bind_node<ShapeStructInfoNode, StructInfoNode>(m, "ShapeStructInfo")
      .def(py::init([](std::optional<py::sequence> values, int ndim) {
             return values ? make<ShapeStructInfoNode>(to_dims(*values)) : make<ShapeStructInfoNode>(ndim);
           }),
           py::arg("values") = py::none(), py::arg("ndim") = -1);
  bind_node<TensorStructInfoNode, StructInfoNode>(m, "TensorStructInfo")
      .def(py::init([](std::optional<py::sequence> shape, DataType dtype, VDevice vdevice, int ndim) {
             return shape ? make<TensorStructInfoNode>(to_dims(*shape), dtype, vdevice)
                          : make<TensorStructInfoNode>(dtype, ndim, vdevice);
           }),
           py::arg("shape") = py::none(), py::arg("dtype") = DataType::Float(32), py::arg("vdevice") = py::none(),
           py::arg("ndim") = -1);
  bind_node<TupleStructInfoNode, StructInfoNode>(m, "TupleStructInfo")
      .def(py::init([](std::vector<StructInfo> f) { return make<TupleStructInfoNode>(f); }));
  bind_node<FuncStructInfoNode, StructInfoNode>(m, "FuncStructInfo")
      .def(py::init([](std::vector<StructInfo> params, StructInfo ret, bool purity) {
             return make<FuncStructInfoNode>(params, ret, purity);
           }),
           py::arg("params"), py::arg("ret"), py::arg("purity") = true);
}

static void bind_exprs(py::module_& m) {
  py::class_<ExprNode, Object, Ref<ExprNode>>(m, "Expr")
      .def_property_readonly("struct_info", [](const ExprNode& e) {
        if (!e.struct_info_) throw_error("ValueError", "expression has no struct info yet (not normalized)");
        return e.struct_info_;
      });
  bind_node<VarNode, ExprNode>(m, "Var")
      .def(py::init([](std::string name, StructInfo s) { return make<VarNode>(name, s); }),
           py::arg("name_hint"), py::arg("struct_info") = py::none())
      .def_property_readonly("name_hint", [](const VarNode& v) { return v.name_hint; });
  bind_node<DataflowVarNode, VarNode>(m, "DataflowVar")
      .def(py::init([](std::string name, StructInfo s) { return make<DataflowVarNode>(name, s); }),
           py::arg("name_hint"), py::arg("struct_info") = py::none());
  // Constants own their bytes: the caster may share a numpy array's memory, which the user could
  // change later. `data` is a read-only view so the IR cannot be modified through it.
  bind_node<ConstantNode, ExprNode>(m, "Constant")
      .def(py::init([](Tensor t) { return make<ConstantNode>(t.copy()); }))
      .def_property_readonly("data", [](const ConstantNode& c) {
        return c.data.defined() ? py::object(tensor_to_numpy(c.data, false)) : py::object(py::none());
      });
  bind_node<PrimValueNode, ExprNode>(m, "PrimValue").def(py::init([](py::handle v) {
    return make<PrimValueNode>(to_prim(v));
  }));
  bind_node<StringImmNode, ExprNode>(m, "StringImm").def(py::init([](std::string v) { return make<StringImmNode>(v); }));
  bind_node<DataTypeImmNode, ExprNode>(m, "DataTypeImm").def(py::init([](DataType v) { return make<DataTypeImmNode>(v); }));
  bind_node<ShapeExprNode, ExprNode>(m, "ShapeExpr").def(py::init([](py::sequence v) {
    return make<ShapeExprNode>(to_dims(v));
  }));
  bind_node<TupleNode, ExprNode>(m, "Tuple").def(py::init([](std::vector<Expr> f) { return make<TupleNode>(f); }));
  bind_node<TupleGetItemNode, ExprNode>(m, "TupleGetItem").def(py::init([](Expr t, int i) {
    return make<TupleGetItemNode>(t, i);
  }));
  bind_node<CallNode, ExprNode>(m, "Call").def(
      py::init([](Expr op, std::vector<Expr> args, Attrs attrs, std::vector<StructInfo> sinfo_args) {
        return make<CallNode>(op, args, attrs, sinfo_args);
      }),
      py::arg("op"), py::arg("args"), py::arg("attrs") = py::none(), py::arg("sinfo_args") = std::vector<StructInfo>());
  bind_node<FunctionNode, ExprNode>(m, "Function")
      .def(py::init([](std::vector<Var> params, Expr body, StructInfo ret, bool is_pure, DictAttrs attrs) {
             return make<FunctionNode>(params, body, ret, is_pure, attrs);
           }),
           py::arg("params"), py::arg("body"), py::arg("ret_struct_info") = py::none(),
           py::arg("is_pure") = true, py::arg("attrs") = DictAttrs())
      .def("with_attr", [](const Function& f, const std::string& key, AttrValue v) {
        Ref<FunctionNode> copy(copy_node(f));
        const_cast<FunctionNode*>(copy.get())->attrs[key] = v;
        return copy;
      })
      .def("with_attrs", [](const Function& f, const DictAttrs& attrs) {
        Ref<FunctionNode> copy(copy_node(f));
        for (const auto& [k, v] : attrs) const_cast<FunctionNode*>(copy.get())->attrs[k] = v;
        return copy;
      }, py::arg("attr_map"))
      .def("without_attr", [](const Function& f, const std::string& key) {
        Ref<FunctionNode> copy(copy_node(f));
        const_cast<FunctionNode*>(copy.get())->attrs.erase(key);
        return copy;
      }, py::arg("attr_key"));
  bind_node<ExternFuncNode, ExprNode>(m, "ExternFunc").def(py::init([](std::string s) { return make<ExternFuncNode>(s); }));
  bind_node<GlobalVarNode, ExprNode>(m, "GlobalVar").def(py::init([](std::string s) { return make<GlobalVarNode>(s); }));
  bind_node<OpNode, ExprNode>(m, "Op");
  bind_node<SeqExprNode, ExprNode>(m, "SeqExpr").def(py::init([](std::vector<BindingBlock> b, Expr body) {
    return make<SeqExprNode>(b, body);
  }));
  bind_node<IfNode, ExprNode>(m, "If").def(py::init([](Expr c, Expr t, Expr f) { return make<IfNode>(c, t, f); }));

  py::class_<BindingNode, Object, Ref<BindingNode>>(m, "Binding")
      .def_property_readonly("var", [](const BindingNode& b) { return b.var; });
  bind_node<VarBindingNode, BindingNode>(m, "VarBinding").def(py::init([](Var v, Expr e) {
    return make<VarBindingNode>(v, e);
  }));
  bind_node<MatchCastNode, BindingNode>(m, "MatchCast").def(py::init([](Var v, Expr e, StructInfo s) {
    return make<MatchCastNode>(v, e, s);
  }));
  bind_node<BindingBlockNode, Object>(m, "BindingBlock")
      .def(py::init([](std::vector<Binding> b, bool df) { return make<BindingBlockNode>(b, df); }),
           py::arg("bindings"), py::arg("is_dataflow") = false);
  bind_node<AttrsNode, Object>(m, "Attrs").def("__getitem__", [](const AttrsNode& a, const std::string& k) {
    const AttrValue* v = a.find(k);
    if (!v) throw_error("KeyError", a.type_key + " has no attribute \"" + k + "\"");
    return *v;
  });
}

/// A module attribute from Python: attributes are IR objects, so plain values become the
/// immediates TVM would store (a str a StringImm, an int an IntImm, a float a FloatImm).
static ObjectRef attr_from_py(const std::string& key, py::handle v) {
  if (py::isinstance<Object>(v)) return v.cast<ObjectRef>();
  if (py::isinstance<py::str>(v)) return make<StringImmNode>(v.cast<std::string>());
  if (py::isinstance<py::bool_>(v)) return int_imm(v.cast<bool>(), DataType::Bool());
  if (py::isinstance<py::int_>(v)) return int_imm(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return make<FloatImmNode>(v.cast<double>(), DataType::Float(64));
  throw_error("TypeError", "module attribute \"" + key + "\": expected a str, int, float, bool or IR object, got " +
                               std::string(py::str(py::type::handle_of(v).attr("__name__"))));
}

/// The Python value of a module attribute (the inverse of attr_from_py; other objects as they are).
static py::object attr_to_py(const ObjectRef& v) {
  if (const auto* s = v.as<StringImmNode>()) return py::str(s->value);
  if (const auto* i = v.as<IntImmNode>()) {
    if (i->dtype == DataType::Bool()) return py::bool_(i->value != 0);
    return py::int_(i->value);
  }
  if (const auto* f = v.as<FloatImmNode>()) return py::float_(f->value);
  return py::cast(v);
}

/// The module's GlobalVar for `key` (a GlobalVar or a name); nullopt when it has none.
static std::optional<GlobalVar> find_global(const IRModule& mod, py::handle key) {
  std::string name = py::isinstance<GlobalVarNode>(key) ? key.cast<GlobalVar>()->name_hint : key.cast<std::string>();
  if (!mod.contains(name)) return std::nullopt;
  return mod.get_global_var(name);
}

static void bind_module(py::module_& m) {
  py::class_<IRModuleNode, Object, Ref<IRModuleNode>>(m, "IRModuleNode");
  py::class_<IRModule>(m, "IRModule")
      .def(py::init([](std::optional<py::dict> funcs, std::optional<py::dict> attrs,
                       std::optional<std::map<std::string, std::vector<GlobalInfo>>> global_infos) {
             IRModule mod = IRModule::create();
             if (funcs)
               for (auto [k, f] : *funcs) {
                 if (!py::isinstance<GlobalVarNode>(k) && !py::isinstance<py::str>(k))
                   throw_error("TypeError", "IRModule: functions must be a dict of GlobalVar (or name) to function");
                 GlobalVar gv = py::isinstance<GlobalVarNode>(k) ? k.cast<GlobalVar>()
                                                                 : make<GlobalVarNode>(k.cast<std::string>());
                 mod.add(gv, f.cast<Expr>());
               }
             if (attrs)
               for (auto [k, v] : *attrs) {
                 std::string key = k.cast<std::string>();
                 mod.cow()->attrs[key] = attr_from_py(key, v);
               }
             if (global_infos)
               for (auto& [name, infos] : *global_infos) mod.update_global_info(name, infos);
             return mod;
           }),
           py::arg("functions") = py::none(), py::arg("attrs") = py::none(), py::arg("global_infos") = py::none())
      .def("__getitem__", [](const IRModule& mod, py::handle key) {
        if (py::isinstance<GlobalVarNode>(key)) return mod.lookup(key.cast<GlobalVar>());
        return mod.lookup(key.cast<std::string>());
      })
      .def("__setitem__", [](IRModule& mod, py::handle key, const Expr& f) {
        // By name, an existing function keeps its GlobalVar (TVM's IRModule._add).
        std::optional<GlobalVar> existing = py::isinstance<GlobalVarNode>(key) ? std::nullopt : find_global(mod, key);
        GlobalVar gv = py::isinstance<GlobalVarNode>(key) ? key.cast<GlobalVar>()
                       : existing                          ? *existing
                                                           : make<GlobalVarNode>(key.cast<std::string>());
        mod.add(gv, f, /*replace=*/true);
      })
      .def("__delitem__", [](IRModule& mod, py::handle key) {
        std::optional<GlobalVar> gv = find_global(mod, key);
        if (!gv) throw_error("KeyError", "the module has no function named \"" + std::string(py::str(key)) + "\"");
        mod.remove((*gv)->name_hint);
      })
      .def("__contains__", [](const IRModule& mod, py::handle key) {
        if (!py::isinstance<GlobalVarNode>(key) && !py::isinstance<py::str>(key)) return false;
        return find_global(mod, key).has_value();
      })
      .def("__len__", [](const IRModule& mod) { return mod->functions.size(); })
      .def("get_global_var", &IRModule::get_global_var)
      .def("get_global_vars", [](const IRModule& mod) {
        std::vector<GlobalVar> out;
        for (const auto& [gv, f] : mod.functions()) out.push_back(gv);
        return out;
      }, "Every GlobalVar of the module, sorted by name (as TVM's GetGlobalVars).")
      .def("functions_items", &IRModule::functions)
      .def("remove", &IRModule::remove)
      .def("update_func", [](IRModule& mod, const GlobalVar& gv, const Expr& f) { mod.update(gv, f); },
           py::arg("var"), py::arg("func"), "Replaces (or adds) the function of `var`, in place.")
      .def("update", [](IRModule& mod, const IRModule& other) {
        for (const auto& [gv, f] : other.functions()) mod.add(gv, f, /*replace=*/true);
      }, py::arg("other"), "Adds (replacing same-named ones) every function of `other`, in place.")
      .def("clone", [](const IRModule& mod) { return mod; },
           "A copy; changing either (they are copy-on-write) leaves the other as it was.")
      .def_property_readonly("functions", [](const IRModule& mod) {
        py::dict d;
        for (const auto& [gv, f] : mod.functions()) d[py::cast(gv)] = py::cast(f);
        return d;
      }, "A dict of GlobalVar to function (a snapshot: change the module through its methods).")
      .def_property_readonly("global_var_map_", [](const IRModule& mod) {
        py::dict d;
        for (const auto& [gv, f] : mod.functions()) d[py::str(gv->name_hint)] = py::cast(gv);
        return d;
      })
      .def_property_readonly("attrs", [](const IRModule& mod) -> py::object {
        if (mod->attrs.empty()) return py::none();  // TVM: None until an attribute is set
        py::dict d;
        for (const auto& [k, v] : mod->attrs) d[py::str(k)] = attr_to_py(v);
        return d;
      })
      .def("get_attr", [](const IRModule& mod, const std::string& key) -> py::object {
        auto it = mod->attrs.find(key);
        return it == mod->attrs.end() ? py::object(py::none()) : attr_to_py(it->second);
      }, py::arg("attr_key"), "The module attribute `attr_key`, or None.")
      .def("with_attr", [](const IRModule& mod, const std::string& key, py::handle v) {
        IRModule copy = mod;
        copy.cow()->attrs[key] = attr_from_py(key, v);
        return copy;
      }, py::arg("attr_key"), py::arg("attr_value"), "A copy of the module with the attribute set.")
      .def("with_attrs", [](const IRModule& mod, const py::dict& attrs) {
        IRModule copy = mod;
        for (auto [k, v] : attrs) {
          std::string key = k.cast<std::string>();
          copy.cow()->attrs[key] = attr_from_py(key, v);
        }
        return copy;
      }, py::arg("attr_map"))
      .def("without_attr", [](const IRModule& mod, const std::string& key) {
        IRModule copy = mod;
        if (mod->attrs.count(key)) copy.cow()->attrs.erase(key);
        return copy;
      }, py::arg("attr_key"))
      .def_property_readonly("const_name_to_constant", [](const IRModule& mod) { return mod->const_name_to_constant; })
      .def_property_readonly("global_infos", [](const IRModule& mod) { return mod->global_infos; })
      .def("update_global_info", [](IRModule& mod, const std::string& name, std::vector<GlobalInfo> infos) {
        mod.update_global_info(name, std::move(infos));
      })
      .def("same_as", [](const IRModule& a, const IRModule& b) { return a.get() == b.get(); });
}

void init_ir(py::module_& m) {
  py::class_<Object, Ref<Object>>(m, "Object")
      .def("same_as", [](const Object& a, const Object& b) { return &a == &b; })
      .def("__hash__", [](const Object& a) { return std::hash<const void*>()(&a); })
      .def("__eq__", [](const Object& a, py::object b) {
        return py::isinstance<Object>(b) && &a == &b.cast<const Object&>();
      })
      .def_property_readonly("kind", [](const Object& o) { return node_kind_name(o.kind()); });
  bind_prim_expr(m);
  bind_global_info(m);
  bind_struct_info(m);
  bind_exprs(m);
  bind_module(m);
}

}  // namespace partita::python
