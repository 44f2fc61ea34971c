// Bindings of the builder, analyses, structural equality and the pass infrastructure.
#include "common.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/transform/attention.h"
#include "partita/transform/basic.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/fuse_ops_by_kind.h"
#include "partita/transform/pass.h"
#include "partita/transform/place_device_copies.h"
#include "partita/transform/realize_vdevice.h"

namespace partita::python {

using transform::Pass;
using transform::PassContext;

static void bind_builder(py::module_& m) {
  py::class_<BlockBuilder>(m, "BlockBuilder")
      .def(py::init([](std::optional<IRModule> mod) { return std::make_unique<BlockBuilder>(mod); }),
           py::arg("mod") = py::none())
      .def("begin_function", &BlockBuilder::begin_function, py::arg("name"), py::arg("params"),
           py::arg("attrs") = DictAttrs(), py::arg("is_pure") = true, py::arg("is_private") = false)
      .def("begin_dataflow", &BlockBuilder::begin_dataflow)
      .def("end_dataflow", &BlockBuilder::end_dataflow)
      .def("emit_func_output", &BlockBuilder::emit_func_output)
      .def("get", &BlockBuilder::get)
      .def("emit", &BlockBuilder::emit, py::arg("expr"), py::arg("name_hint") = "")
      .def("emit_output", &BlockBuilder::emit_output, py::arg("expr"), py::arg("name_hint") = "")
      .def("emit_match_cast", &BlockBuilder::emit_match_cast, py::arg("value"), py::arg("struct_info"),
           py::arg("name_hint") = "")
      .def("emit_normalized", &BlockBuilder::emit_normalized)
      .def("begin_scope", &BlockBuilder::begin_scope, py::arg("params") = py::none())
      .def("end_scope", &BlockBuilder::end_scope)
      .def("begin_binding_block", &BlockBuilder::begin_binding_block)
      .def("begin_dataflow_block", &BlockBuilder::begin_dataflow_block)
      .def("end_block", &BlockBuilder::end_block)
      .def("normalize", &BlockBuilder::normalize)
      .def("add_func", &BlockBuilder::add_function, py::arg("func"), py::arg("func_name"))
      .def("update_func", &BlockBuilder::update_function)
      .def("get_unique_name", &BlockBuilder::get_unique_name)
      .def("lookup_binding", &BlockBuilder::lookup_binding);
}

static void bind_analysis(py::module_& m) {
  m.def("well_formed", [](py::handle x, bool check) {
    if (py::isinstance<IRModule>(x)) return well_formed(x.cast<IRModule>(), check);
    return well_formed(x.cast<Function>(), check);
  }, py::arg("obj"), py::arg("check_struct_info") = true);
  m.def("well_formed_errors", [](const IRModule& mod) { return well_formed_errors(mod); });
  m.def("free_vars", &free_vars);
  m.def("bound_vars", &bound_vars);
  m.def("all_vars", &all_vars);
  m.def("all_global_vars", &all_global_vars);
  m.def("is_base_of", &is_base_of);
}

// Structural equality accepts IRModule handles (not Objects in Python) and nodes alike.
static ObjectRef as_object(py::handle x) {
  if (py::isinstance<IRModule>(x)) return x.cast<IRModule>();
  return x.cast<ObjectRef>();
}

static void bind_structural(py::module_& m) {
  m.def("structural_equal", [](py::handle a, py::handle b, bool map_free) {
    return structural_equal(as_object(a), as_object(b), map_free);
  });
  m.def("structural_hash", [](py::handle a) { return structural_hash(as_object(a)); });
  m.def("assert_structural_equal", [](py::handle a, py::handle b) {
    assert_structural_equal(as_object(a), as_object(b));
  });
}

/// A Python context that sets PassContext::current() between __enter__ and __exit__.
struct PyPassContext {
  PassContext ctx;
  std::unique_ptr<PassContext::Scope> scope;
};

static void bind_passes(py::module_& m) {
  py::class_<transform::PassInfo>(m, "PassInfo")
      .def_readonly("name", &transform::PassInfo::name)
      .def_readonly("opt_level", &transform::PassInfo::opt_level)
      .def_readonly("required", &transform::PassInfo::required);
  py::class_<Pass>(m, "Pass")
      .def("__call__", [](const Pass& p, const IRModule& mod) { return p(mod); })
      .def_property_readonly("info", &Pass::info)
      .def("__repr__", [](const Pass& p) { return "Pass(" + p.info().name + ")"; });
  m.def("Sequential", &transform::Sequential, py::arg("passes"), py::arg("name") = "sequential",
        py::arg("opt_level") = 0);
  m.def("create_module_pass", [](std::function<IRModule(IRModule)> fn, int opt_level, std::string name) {
    return transform::create_module_pass([fn](IRModule mod, const PassContext&) { return fn(mod); },
                                         opt_level, name);
  });
  m.def("create_function_pass", [](std::function<Function(Function, IRModule)> fn, int opt_level, std::string name) {
    return transform::create_function_pass(
        [fn](Function f, IRModule mod, const PassContext&) { return fn(f, mod); }, opt_level, name);
  });

  py::class_<transform::PassInstrument, std::shared_ptr<transform::PassInstrument>>(m, "PassInstrument")
      .def_property_readonly("name", &transform::PassInstrument::name);
  py::class_<transform::PassTimingInstrument, transform::PassInstrument,
             std::shared_ptr<transform::PassTimingInstrument>>(m, "PassTimingInstrument")
      .def(py::init<>())
      .def("render", &transform::PassTimingInstrument::render)
      .def("clear", &transform::PassTimingInstrument::clear);
  py::class_<transform::PassPrintingInstrument, transform::PassInstrument,
             std::shared_ptr<transform::PassPrintingInstrument>>(m, "PassPrintingInstrument")
      .def(py::init<transform::PassPrintingInstrument::Callback, bool, bool>(), py::arg("callback"),
           py::arg("before") = true, py::arg("after") = true);

  py::class_<PyPassContext>(m, "PassContext")
      .def(py::init([](int opt_level, std::map<std::string, AttrValue> config,
                       std::vector<std::string> required, std::vector<std::string> disabled,
                       std::vector<transform::PassInstrumentPtr> instruments) {
             auto c = std::make_unique<PyPassContext>();
             c->ctx.opt_level = opt_level;
             c->ctx.config = std::move(config);
             c->ctx.required_pass = std::move(required);
             c->ctx.disabled_pass = std::move(disabled);
             c->ctx.instruments = std::move(instruments);
             return c;
           }),
           py::arg("opt_level") = 2, py::arg("config") = std::map<std::string, AttrValue>(),
           py::arg("required_pass") = std::vector<std::string>(),
           py::arg("disabled_pass") = std::vector<std::string>(),
           py::arg("instruments") = std::vector<transform::PassInstrumentPtr>())
      .def_static("current", [] {
        // A snapshot of the innermost context (TVM's PassContext.current()).
        auto c = std::make_unique<PyPassContext>();
        c->ctx = PassContext::current();
        return c;
      })
      .def_property_readonly("opt_level", [](const PyPassContext& c) { return c.ctx.opt_level; })
      .def_property_readonly("config", [](const PyPassContext& c) { return c.ctx.config; })
      .def_property_readonly("required_pass", [](const PyPassContext& c) { return c.ctx.required_pass; })
      .def_property_readonly("disabled_pass", [](const PyPassContext& c) { return c.ctx.disabled_pass; })
      .def_property_readonly("instruments", [](const PyPassContext& c) { return c.ctx.instruments; })
      .def("__enter__", [](PyPassContext& c) -> PyPassContext& {
        c.scope = std::make_unique<PassContext::Scope>(c.ctx);
        return c;
      }, py::return_value_policy::reference)
      .def("__exit__", [](PyPassContext& c, py::args) { c.scope.reset(); });

  m.def("Normalize", &transform::Normalize);
  m.def("RealizeVDevice", &transform::RealizeVDevice);
  m.def("PlaceDeviceCopies", &transform::PlaceDeviceCopies, py::arg("codegen_devices"), py::arg("host") = py::none());
  m.def("CanonicalizeBindings", &transform::CanonicalizeBindings);
  m.def("ConvertToDataflow", &transform::ConvertToDataflow, py::arg("min_size") = 2);
  m.def("DeadCodeElimination", &transform::DeadCodeElimination,
        py::arg("entry_functions") = std::vector<std::string>());
  m.def("FoldConstant", &transform::FoldConstant);
  m.def("FoldBatchnormToConv2D", &transform::FoldBatchnormToConv2D);
  m.def("FoldForInference", &transform::FoldForInference);
  m.def("RewriteAttention", &transform::RewriteAttention);
  m.def("DecomposeAttention", [] { return transform::DecomposeAttention(); });
  // The code generator's registered check and fusion kinds are found by its name.
  m.def("FuseOpsByKind", [](std::string codegen, std::vector<std::string> entry_functions) {
    transform::FuseOpsByKindOptions options;
    options.codegen = std::move(codegen);
    options.entry_functions = std::move(entry_functions);
    return transform::FuseOpsByKind(options);
  }, py::arg("codegen") = "cuda", py::arg("entry_functions") = std::vector<std::string>());
}

void init_transform(py::module_& m) {
  bind_builder(m);
  bind_analysis(m);
  bind_structural(m);
  bind_passes(m);
}

}  // namespace partita::python
