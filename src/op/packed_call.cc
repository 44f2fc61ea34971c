// R.call_pure_packed: a call of a packed (extern) function that the caller declares pure, so that
// it may stay in a dataflow block and be removed when unused (TVM's relax.call_pure_packed). The
// first argument is the ExternFunc, the rest its arguments; the result's struct info is the
// call's sinfo_args, as TVMScript writes it: R.call_pure_packed("f", x, sinfo_args=(...,)).
#include "infer_utils.h"

namespace partita::op::detail {
namespace {

StructInfo infer_call_pure_packed(const CallNode& call) {
  if (call.args.empty() || !call.args[0].as<ExternFuncNode>())
    fail(call, "TypeError", "the first argument must be the packed function (an ExternFunc)");
  if (call.sinfo_args.size() == 1) return call.sinfo_args[0];
  if (call.sinfo_args.empty()) return object_sinfo();
  return tuple_sinfo(call.sinfo_args);
}

}  // namespace

void register_packed_call_ops() {
  OpDef def;
  def.name = "relax.call_pure_packed";
  def.args = {{"func"}, {"args", false, true}};
  def.infer = infer_call_pure_packed;
  def.fusion_kind = FusionKind::Opaque;  // an unknown function fuses with nothing
  add_op(std::move(def));
}

}  // namespace partita::op::detail
