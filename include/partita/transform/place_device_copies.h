// PlaceDeviceCopies: after partitioning, put every tensor on the device that computes it and copy
// (R.to_vdevice) only where data crosses devices.
#pragma once

#include <map>
#include <string>

#include "partita/transform/pass.h"

namespace partita::transform {

/// `codegen_devices` says where each codegen's functions run ("cuda" -> a cuda VDevice); codegens
/// not listed, and everything outside offloaded functions (the VM's host kernels), run on `host`
/// (llvm when null). The pass
///  - places each offloaded function ("Codegen" attribute) on its codegen's device: its tensor
///    parameters and results carry that vdevice;
///  - places the tensor parameters of the other functions on the host unless annotated, and
///    returns their results on the host unless the return struct info names a device ("inputs
///    and outputs are where the user's tensors are");
///  - inserts `R.to_vdevice(x, d)` before a call only for an argument that is on another device
///    than the callee's, once per value and block: consecutive partitions of one device pass
///    their tensors along without copies;
///  - adds the devices it uses to the module's "vdevice" list (an equal vdevice already there is
///    reused).
/// Values inherit their operands' devices as everywhere in the IR (op/device.cc), so after the
/// pass every tensor has a vdevice and every device change is an explicit copy.
Pass PlaceDeviceCopies(std::map<std::string, VDevice> codegen_devices, VDevice host = {});

/// The same placement for functions already compiled (after RunCodegen: calls of `R.call_packed`
/// ExternFuncs): `extern_devices` gives, by global symbol, the device each runs on (its runtime
/// module's); their arguments are copied there where they are elsewhere and their results are
/// typed on it. `build` uses this form, so that devices come from what the backends compiled.
Pass PlaceDeviceCopiesOfExterns(std::map<std::string, VDevice> extern_devices, VDevice host = {});

}  // namespace partita::transform
