// nn activations and softmax-like ops.
#include "infer_utils.h"

namespace partita::op::detail {




void register_nn_ops() {
  add_unary("nn.relu", false, "data");
}

}  // namespace partita::op::detail
