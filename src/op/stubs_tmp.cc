// Families not yet written (temporary).
#include "infer_utils.h"
namespace partita::op::detail {
void register_reduction_ops() {}
void register_manipulation_ops() {}
void register_nn_conv_pool_ops() {}
void register_nn_norm_ops() {}
void register_creation_ops() {}
}  // namespace partita::op::detail
