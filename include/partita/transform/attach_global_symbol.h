// AttachGlobalSymbol (TVM relax.transform.AttachGlobalSymbol): every Relax function gets the
// "global_symbol" attribute equal to its name in the module, private functions included, as TVM
// does before building (the symbol the runtime looks a function up by).
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

Pass AttachGlobalSymbol();

}  // namespace partita::transform
