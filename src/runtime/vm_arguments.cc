#include "vm_arguments.h"

#include <string>

#include "partita/runtime/device_api.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {

std::string parameter_list(const VMFunction& f) {
  std::string s;
  for (const std::string& p : f.param_names) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Refuses a tensor the VM cannot take: see vm_arguments.h.
void check_device(const Tensor& t, const std::string& where, Device vm_device) {
  Device d = t.device();
  if (d.is_host_accessible() || d == vm_device) return;
  std::string expected = "expected a tensor on the host" +
                         (vm_device.is_cpu() ? std::string() : " or on " + vm_device.str()) +
                         " (move it with tensor.to(device))";
  if (d.kind == vm_device.kind)
    throw_error("ValueError", where + " is on " + d.str() + ", but the VM runs on " + vm_device.str() + ": " +
                                  expected);
  try {
    device_api(d);  // another kind: copied to the host when the runtime can reach it
  } catch (const Error& e) {
    throw_error("ValueError", where + " is on " + d.str() + ", which this process cannot reach (" + e.message() +
                                  "): " + expected);
  }
}

void check_value_devices(const Value& v, const std::string& where, Device vm_device) {
  if (v.tuple) {
    for (size_t i = 0; i < v.tuple->size(); ++i)
      check_value_devices((*v.tuple)[i], where + " (field " + std::to_string(i) + ")", vm_device);
  } else if (v.tensor.defined()) {
    check_device(v.tensor, where, vm_device);
  }
}

/// Where the symbolic slot `slot` of `f` is bound ("dimension 0 of argument 'x'"), or "".
std::string binder_of(const VMFunction& f, int64_t slot) {
  for (const Instruction& in : f.code) {
    if (in.op != Opcode::MatchTensor) continue;
    for (size_t i = 0; i < in.match_dims.size(); ++i)
      if (in.match_dims[i].bind && in.match_dims[i].slot == slot) return "dimension " + std::to_string(i) + " of " + in.name;
  }
  return "";
}

}  // namespace

void check_arguments(const VMFunction& f, const std::vector<Value>& args, Device vm_device) {
  size_t n = f.param_names.size();
  if (args.size() != n)
    throw_error("TypeError", "function '" + f.name + "' takes " + std::to_string(n) +
                                 (n == 1 ? " argument" : " arguments") + (n ? " (" + parameter_list(f) + ")" : "") +
                                 ", but " + std::to_string(args.size()) + (args.size() == 1 ? " was" : " were") +
                                 " given");
  for (size_t i = 0; i < n; ++i)
    check_value_devices(args[i], "argument '" + f.param_names[i] + "' of function '" + f.name + "'", vm_device);
}

void match_tuple(const Instruction& in, const Value& v, const VMFunction& f) {
  std::string where = in.name + " of function '" + f.name + "'";
  std::string want = in.match_ndim >= 0 ? "a tuple of " + std::to_string(in.match_ndim) + " fields" : "a tuple";
  if (!v.tuple)
    throw_error("TypeError", where + " must be " + want + ", but got " + (v.tensor.defined() ? "a tensor" : "nothing"));
  if (in.match_ndim >= 0 && v.tuple->size() != size_t(in.match_ndim))
    throw_error("ValueError", where + " must be " + want + ", but has " + std::to_string(v.tuple->size()));
}

void match_tensor(const Instruction& in, const Value& v, std::vector<int64_t>& syms, const VMFunction& f) {
  auto where = [&] { return in.name + " of function '" + f.name + "'"; };
  if (v.tuple) throw_error("TypeError", where() + " must be a tensor, but got a tuple");
  if (!v.tensor.defined()) throw_error("TypeError", where() + " must be a tensor, but got nothing");
  const Tensor& t = v.tensor;
  if (!in.match_dtype.is_void() && !(t.dtype() == in.match_dtype))
    throw_error("TypeError", where() + " must have dtype " + in.match_dtype.str() + ", but has " + t.dtype().str());
  if (in.match_ndim >= 0 && t.ndim() != in.match_ndim)
    throw_error("ValueError", where() + " must have " + std::to_string(in.match_ndim) + " dimensions, but has " +
                                  std::to_string(t.ndim()) + " (shape " + shape_str(t.shape()) + ")");
  for (size_t i = 0; i < in.match_dims.size() && i < size_t(t.ndim()); ++i) {
    const DimMatch& d = in.match_dims[i];
    int64_t actual = t.shape()[i];
    if (d.bind) {
      syms[size_t(d.slot)] = actual;
      continue;
    }
    int64_t want = eval_dim(d.expect, syms.data(), syms.size());
    if (want == actual) continue;
    std::string why;
    // A dimension that is one symbolic variable: say where its value came from.
    if (d.expect.size() == 2 && DimOp(d.expect[0]) == DimOp::Var) {
      std::string binder = binder_of(f, d.expect[1]);
      if (!binder.empty()) why = " (the same symbolic variable as " + binder + ")";
    } else if (!(d.expect.size() == 2 && DimOp(d.expect[0]) == DimOp::Const)) {
      why = " (computed from the symbolic dimensions bound earlier)";
    }
    throw_error("ValueError", where() + ": dimension " + std::to_string(i) + " must be " + std::to_string(want) +
                                  why + ", but is " + std::to_string(actual) + " (shape " + shape_str(t.shape()) + ")");
  }
}

}  // namespace partita::runtime
