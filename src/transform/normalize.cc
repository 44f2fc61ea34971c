// Normalize: puts every Relax function into normal form with struct info everywhere.
#include "partita/ir/block_builder.h"
#include "partita/transform/basic.h"

namespace partita::transform {

Pass Normalize() {
  return create_function_pass(
      [](Function f, IRModule mod, const PassContext&) -> Function {
        return BlockBuilder(mod).normalize(f).as_ref<FunctionNode>();
      },
      1, "Normalize");
}

}  // namespace partita::transform
