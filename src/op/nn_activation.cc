// nn activations and softmax-like ops.
#include "infer_utils.h"

namespace partita::op::detail {

StructInfo infer_unary(const CallNode& call, bool float_only);
void add_unary(const std::string& name, bool float_only, const std::string& arg);

void register_nn_ops() {
  add_unary("nn.relu", false, "data");
}

}  // namespace partita::op::detail
