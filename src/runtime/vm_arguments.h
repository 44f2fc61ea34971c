// The VM's checks of what a caller hands it (internal to the runtime library). Every check
// fails with an Error naming the function, the parameter and what was expected, so that a
// wrong input is never read wrongly nor reaches a kernel:
// - at entry (check_arguments): the number of arguments, and the device of each tensor (the
//   host and the VM's own device are accepted and copied between as runtime/vm.h says; a device
//   of the VM's kind but another ordinal, or one the runtime cannot reach, is refused);
// - at each MatchTensor instruction (match_tensor): dtype, rank and every dimension, static or
//   symbolic; a symbolic dimension bound by an earlier one names where it was bound;
// - at each named GetItem (match_tuple): a tuple parameter is a tuple of its number of fields
//   (each field is then matched as a tensor or tuple in turn).
#pragma once

#include <cstdint>
#include <vector>

#include "partita/runtime/vm.h"

namespace partita::runtime {

/// Error("TypeError") on a wrong count, Error("ValueError") on a tensor on a device the VM
/// cannot take it from.
void check_arguments(const VMFunction& f, const std::vector<Value>& args, Device vm_device);

/// Checks that `v` is the tuple a named GetItem instruction `in` of `f` takes a field of (the
/// signature's tuples: `in.name` says what it is, `in.match_ndim` how many fields it has).
void match_tuple(const Instruction& in, const Value& v, const VMFunction& f);

/// Checks `v` against MatchTensor instruction `in` of `f`, binding symbolic slots in `syms`.
void match_tensor(const Instruction& in, const Value& v, std::vector<int64_t>& syms, const VMFunction& f);

}  // namespace partita::runtime
