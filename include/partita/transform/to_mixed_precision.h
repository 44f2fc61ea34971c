// ToMixedPrecision (TVM relax.transform.ToMixedPrecision): float32 models computed in float16.
#pragma once

#include <string>
#include <vector>

#include "partita/runtime/data_type.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// TVM's automatic mixed precision, inside dataflow blocks:
///  - "always" operators (matmul, convolutions, attention) take float16 operands and accumulate
///    in `out_dtype` (their out_dtype attribute; float32 by default, float16 allowed); a result
///    that stays inside the block is cast to float16;
///  - "follow" operators (element-wise, broadcasting, data movement, pooling and the norms TVM
///    lists) compute in float16 when all their float operands are float16 (or constants within
///    float16's range), else in float32;
///  - every other operator ("never": softmax, reductions, ...) gets its operands in the dtype it
///    had before.
/// A value used only by "always" operators is stored in float16 (cast once where it is made;
/// parameters at the start of each dataflow block); outputs of a dataflow block keep their
/// original dtype. Only float16/float32 tensors are ever cast. Parameters named in
/// `fp16_input_names` are taken in float16 (the signature changes; a value already in float16
/// needs no cast). Error("ValueError") for an `out_dtype` other than float16 or float32.
Pass ToMixedPrecision(DataType out_dtype = DataType::Float(32),
                      std::vector<std::string> fp16_input_names = {});

}  // namespace partita::transform
