// The kernels behind R.to_vdevice and R.hint_on_device. to_vdevice copies from wherever the
// input is to the output the VM allocated on the destination device (TensorSpec::device),
// through the device API; on the host alone it is a plain copy, so modules with devices also
// run on a CPU-only VM. hint_on_device means nothing at run time (RealizeVDevice turns it into
// to_vdevice or removes it); if one is left, the value passes through unchanged.
#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {
void copy_one(const char* op, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    throw_error("ValueError", std::string(op) + " takes one tensor and gives one, got " +
                                  std::to_string(inputs.size()) + " inputs and " +
                                  std::to_string(outputs.size()) + " outputs");
  outputs[0].copy_from(inputs[0]);
}
void to_vdevice(std::span<const Tensor> inputs, const KernelAttrs&, std::span<Tensor> outputs) {
  copy_one("relax.to_vdevice", inputs, outputs);
}
void hint_on_device(std::span<const Tensor> inputs, const KernelAttrs&,
                    std::span<Tensor> outputs) {
  copy_one("relax.hint_on_device", inputs, outputs);
}
}  // namespace

PARTITA_REGISTER_DEVICE_KERNEL("relax.to_vdevice", to_vdevice);
PARTITA_REGISTER_DEVICE_KERNEL("relax.hint_on_device", hint_on_device);

}  // namespace partita::runtime
