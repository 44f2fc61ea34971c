// Device operators (TVM's R.to_vdevice, R.hint_on_device) and the rule by which every operator's
// result lives where its operands live.
//
// TVM writes the vdevice into each operator's struct-info inference (the result takes the
// operands' vdevice; binary operators refuse operands on two devices). Partita applies that rule
// once, around every registered inference function (with_operand_vdevice), so an operator's own
// inference stays about shapes and dtypes.
#include "infer_utils.h"
#include "partita/op/ops.h"

namespace partita::op::detail {
namespace {

std::string describe(const VDevice& v) {
  return (v->target ? v->target->kind : std::string("?")) + " device " +
         std::to_string(v->vdevice_id) + " (memory scope \"" + v->memory_scope + "\")";
}

void collect_vdevices(const StructInfo& s, std::vector<VDevice>& out) {
  if (const auto* t = s.as<TensorStructInfoNode>()) {
    if (t->vdevice) out.push_back(t->vdevice);
  } else if (const auto* tu = s.as<TupleStructInfoNode>()) {
    for (const auto& f : tu->fields) collect_vdevices(f, out);
  }
}

/// `s` with every tensor that has no vdevice placed on `v` (tuples recursively).
StructInfo place_on(const StructInfo& s, const VDevice& v) {
  if (const auto* t = s.as<TensorStructInfoNode>()) return t->vdevice ? s : tensor_sinfo_on(*t, v);
  if (const auto* tu = s.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    bool changed = false;
    for (const auto& f : tu->fields) {
      fields.push_back(place_on(f, v));
      changed |= fields.back().get() != f.get();
    }
    return changed ? tuple_sinfo(std::move(fields)) : s;
  }
  return s;
}

StructInfo infer_to_vdevice(const CallNode& call) {
  const TensorStructInfoNode& x = tensor_arg(call, 0);
  const VDevice* dst = std::get_if<VDevice>(attr(call, "dst_vdevice"));
  if (!dst || !*dst) fail(call, "ValueError", "attribute 'dst_vdevice' must be a VDevice");
  return tensor_sinfo_on(x, *dst);
}

// As TVM: the hint changes nothing about the value; RealizeVDevice reads it.
StructInfo infer_hint_on_device(const CallNode& call) {
  (void)tensor_arg(call, 0);
  return arg_sinfo(call, 0);
}

}  // namespace

InferFn with_operand_vdevice(InferFn infer) {
  if (!infer) return infer;
  return [infer = std::move(infer)](const CallNode& call) {
    StructInfo out = infer(call);
    std::vector<VDevice> found;
    for (const Expr& a : call.args)
      if (a && a->struct_info_) collect_vdevices(a->struct_info_, found);
    if (found.empty() || !out) return out;
    for (const VDevice& v : found)
      if (!same_vdevice(v, found[0]))
        fail(call, "TypeError",
             "operands are on different devices: " + describe(found[0]) + " and " + describe(v) +
                 "; copy one with R.to_vdevice");
    return place_on(out, found[0]);
  };
}

void register_device_ops() {
  const CostFn no_flops = [](const CallNode&) -> std::optional<PrimExpr> { return int_imm(0); };
  OpDef to_vdevice;
  to_vdevice.name = "relax.to_vdevice";
  to_vdevice.attrs_type_key = "relax.attrs.ToVDeviceAttrs";
  to_vdevice.args = {{"data"}};
  to_vdevice.attrs = {{"dst_vdevice", AttrKind::VDevice, std::monostate{}, true}};
  to_vdevice.infer = infer_to_vdevice;
  to_vdevice.fusion_kind = FusionKind::Opaque;  // a copy between memories fuses with nothing
  to_vdevice.flops = no_flops;                  // data movement
  add_op(std::move(to_vdevice));

  OpDef hint;
  hint.name = "relax.hint_on_device";
  hint.attrs_type_key = "relax.attrs.HintOnDeviceAttrs";
  hint.args = {{"data"}};
  hint.attrs = {{"device_type", AttrKind::Int, std::monostate{}, true},
                {"index", AttrKind::Int, std::monostate{}, true},
                {"memory_scope", AttrKind::String, std::string("global")}};
  hint.infer = infer_hint_on_device;
  hint.fusion_kind = FusionKind::Opaque;  // RealizeVDevice removes it before anything fuses
  hint.flops = no_flops;
  add_op(std::move(hint));
}

}  // namespace partita::op::detail

namespace partita::op {

Expr to_vdevice(Expr data, VDevice dst_vdevice) {
  return make_call("relax.to_vdevice", {std::move(data)},
                   {{"dst_vdevice", std::move(dst_vdevice)}});
}

Expr hint_on_device(Expr data, int64_t device_type, int64_t index, std::string memory_scope) {
  return make_call(
      "relax.hint_on_device", {std::move(data)},
      {{"device_type", device_type}, {"index", index}, {"memory_scope", std::move(memory_scope)}});
}

}  // namespace partita::op
