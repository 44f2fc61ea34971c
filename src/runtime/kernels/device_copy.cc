// The kernel behind R.to_vdevice: a copy from wherever the input is to the output the VM
// allocated on the destination device (TensorSpec::device), through the device API. On the
// host alone it is a plain copy, so modules with devices also run on a CPU-only VM.
#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {
void to_vdevice(std::span<const Tensor> inputs, const KernelAttrs&, std::span<Tensor> outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    throw_error("ValueError", "relax.to_vdevice takes one tensor and gives one, got " + std::to_string(inputs.size()) +
                                  " inputs and " + std::to_string(outputs.size()) + " outputs");
  outputs[0].copy_from(inputs[0]);
}
}  // namespace

PARTITA_REGISTER_DEVICE_KERNEL("relax.to_vdevice", to_vdevice);

}  // namespace partita::runtime
