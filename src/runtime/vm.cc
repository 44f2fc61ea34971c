// The bytecode interpreter. Registers 0..n-1 of a frame hold the function's parameters.
#include "partita/runtime/vm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "partita/support/error.h"
#include "host_allocation.h"
#include "vm_arena.h"
#include "vm_arguments.h"
#include "vm_graphs.h"

namespace partita::runtime {

Value Value::make_tuple(std::vector<Value> fields) {
  Value v;
  v.tuple = std::make_shared<const std::vector<Value>>(std::move(fields));
  return v;
}

struct VirtualMachine::Impl {
  const Executable* ex = nullptr;
  std::vector<KernelFn> kernels;
  std::vector<KernelPlacement> kernel_placements;
  std::vector<PackedFunc> externs;
  std::vector<Device> extern_devices;  // where each external function reads and writes
  Device vm_device;
  // Calls on one VM from several threads run one at a time (its pool, statistics, uploaded
  // constants and graphs are per VM); recursive because profile() runs through invoke().
  std::recursive_mutex call_mutex;
  bool has_stream = false;
  StreamHandle stream = nullptr;
  // Resolved devices: per function its parameters', per instruction its outputs'.
  std::vector<std::vector<std::optional<Device>>> param_devices;
  std::vector<std::vector<std::vector<Device>>> out_devices;
  // Per function: its intermediates on the VM's device placed in one arena per run (vm_arena.h).
  std::vector<FunctionArena> arenas;
  // Device copies (R.to_vdevice): a value already on the destination passes through.
  std::vector<bool> kernel_is_device_copy;
  // Per function, per instruction: constants the executable places on a device (a LoadConst
  // with a device spec), uploaded when the VM is made.
  std::vector<std::unordered_map<size_t, Tensor>> device_constants;
  // Constants uploaded to a device, by (host data pointer, device), so each goes once.
  std::unordered_set<const void*> constant_data;
  std::map<std::pair<const void*, std::pair<int32_t, int32_t>>, Tensor> uploaded;
  // Idle buffers by byte size. Emptied lists stay in the map so steady-state calls allocate no
  // map nodes.
  std::map<size_t, std::vector<std::shared_ptr<uint8_t>>> pool;
  MemoryStats stats;
  // Set during VirtualMachine::profile: time per kernel (index) and per external function.
  std::vector<ProfileEntry>* kernel_profile = nullptr;
  std::vector<ProfileEntry>* extern_profile = nullptr;
  ProfileEntry* copy_profile = nullptr;
  static constexpr int64_t kMaxPoolBytes = int64_t(4) << 30;

  // CUDA Graphs (vm_graphs.h): made for a device VM; functions are analysed once.
  DeviceAPI* api = nullptr;  // the VM device's
  bool graph_capture = true;
  std::unique_ptr<GraphCache> graphs;
  std::vector<bool> extern_capturable;
  std::vector<int8_t> function_capturable;  // -1 not yet analysed, 0 no, 1 yes

  /// A device tensor; while a run is captured it is also kept for the graph.
  Tensor device_empty(std::vector<int64_t> shape, DataType dtype, Device device) {
    Tensor t = Tensor::empty(std::move(shape), dtype, device);
    if (graphs && graphs->capture_keep()) graphs->capture_keep()->push_back(t);
    return t;
  }

  /// Whether a whole run of function `fidx` is device work that a graph can hold.
  bool capturable(int32_t fidx, int depth = 0) {
    int8_t& known = function_capturable[size_t(fidx)];
    if (known >= 0) return known == 1;
    if (depth > 64) return false;
    known = 0;  // while analysing: a recursive function is not captured
    const VMFunction& f = ex->functions[size_t(fidx)];
    bool ok = true;
    for (size_t pc = 0; pc < f.code.size() && ok; ++pc) {
      const Instruction& in = f.code[pc];
      switch (in.op) {
        case Opcode::CallKernel:
          ok = kernel_placements[size_t(in.index)] == KernelPlacement::kAnyDevice;
          for (Device d : out_devices[size_t(fidx)][pc]) ok = ok && d == vm_device;
          break;
        case Opcode::CallExtern:
          ok = extern_capturable[size_t(in.index)] && extern_devices[size_t(in.index)] == vm_device;
          break;
        case Opcode::CallFunc: ok = capturable(in.index, depth + 1); break;
        case Opcode::View: case Opcode::MakeTuple: case Opcode::GetItem: case Opcode::LoadConst:
        case Opcode::Move: case Opcode::MatchTensor: case Opcode::Ret: break;
        default: ok = false;  // host scalars, control flow on host values
      }
    }
    function_capturable[size_t(fidx)] = ok ? 1 : 0;
    return ok;
  }

  /// Maps a device named by the executable to one of the VM's (see TensorSpec::device).
  Device resolve(Device d, const std::string& where) const {
    if (d.is_cpu()) return Device::cpu();
    if (d.kind == DeviceKind::kCUDAHost) return Device{DeviceKind::kCUDAHost, 0};
    std::string kind = device_kind_name(d.kind);
    if (d.kind != vm_device.kind)
      throw_error("ValueError", where + " is placed on " + d.str() + ", but the VM runs on " + vm_device.str() +
                                    ": create the VM for a " + kind + " device (e.g. partita." + kind + "(0))");
    if (d.id != 0)
      throw_error("ValueError", where + " is placed on " + d.str() + ", but the VM has one " + kind + " device (" +
                                    vm_device.str() + ", which the executable calls " + kind + ":0)");
    return vm_device;
  }

  Tensor move(const Tensor& t, Device target) {
    if (!t.defined()) return t;
    Device from = t.device();
    if (target.is_cpu() ? from.is_host_accessible() : from == target) return t;
    if (target.is_cpu()) target = Device::cpu();
    bool is_constant = from.is_cpu() && constant_data.count(t.data());
    auto key = std::make_pair(static_cast<const void*>(t.data()), std::make_pair(int32_t(target.kind), target.id));
    if (is_constant) {
      auto it = uploaded.find(key);
      if (it != uploaded.end()) return it->second.shape() == t.shape() ? it->second : it->second.view(t.shape());
    }
    auto started = copy_profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    // Host copies come from the VM's pool: a fresh multi-megabyte host buffer per call costs
    // its page faults on every copy.
    Tensor out = target.is_cpu() ? alloc(t.shape(), t.dtype(), target) : device_empty(t.shape(), t.dtype(), target);
    out.copy_from(t);
    if (copy_profile) {
      copy_profile->calls++;
      copy_profile->total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
    }
    ++stats.device_copies;
    stats.device_copy_bytes += int64_t(t.nbytes());
    if (is_constant) uploaded.emplace(key, out);
    return out;
  }

  Value move(const Value& v, Device target) {
    if (!v.tuple) return Value(move(v.tensor, target));
    std::vector<Value> fields;
    bool changed = false;
    for (auto& f : *v.tuple) {
      fields.push_back(move(f, target));
      changed = changed || !fields.back().tensor.same_buffer(f.tensor) || fields.back().tuple != f.tuple;
    }
    return changed ? Value::make_tuple(std::move(fields)) : v;
  }

  /// Moves a register's value to `target` in place, so later readers find it there.
  const Value& move_register(Value& reg, Device target) {
    Value moved = move(reg, target);
    if (moved.tuple != reg.tuple || !moved.tensor.same_buffer(reg.tensor)) reg = std::move(moved);
    return reg;
  }

  Tensor alloc(std::vector<int64_t> shape, DataType dtype, Device device) {
    size_t n = size_t(dtype.bytes());
    for (int64_t d : shape) {
      if (d < 0) throw_error("ValueError", "negative dimension " + std::to_string(d) + " in a computed shape");
      n *= size_t(d);
    }
    if (!device.is_cpu()) {
      // Device memory is pooled by the device's caching allocator.
      ++stats.allocations;
      stats.bytes_allocated += int64_t(n);
      return device_empty(std::move(shape), dtype, device);
    }
    for (auto it = pool.lower_bound(n); it != pool.end() && it->first <= 2 * n + 256; ++it) {
      if (it->second.empty()) continue;
      auto buf = std::move(it->second.back());
      it->second.pop_back();
      stats.pool_bytes -= int64_t(it->first);
      ++stats.reuses;
      return Tensor::from_buffer(std::move(shape), dtype, std::move(buf));
    }
    ++stats.allocations;
    stats.bytes_allocated += int64_t(n);
    return Tensor::empty(std::move(shape), dtype);
  }

  void release(Value& v) {
    if (v.tuple) {
      if (v.tuple.use_count() == 1) {
        auto fields = const_cast<std::vector<Value>*>(v.tuple.get());
        for (auto& f : *fields) release(f);
      }
      v.tuple.reset();
    }
    if (v.tensor.defined()) {
      // The last holder of a host buffer gives the whole allocation back, whatever part of it
      // (a slice) it viewed.
      const auto& buf = v.tensor.buffer();
      const auto* owner = std::get_deleter<HostAllocation>(buf);
      if (owner && buf.use_count() == 1 && stats.pool_bytes < kMaxPoolBytes) {
        stats.pool_bytes += int64_t(owner->bytes);
        pool[owner->bytes].push_back(std::shared_ptr<uint8_t>(buf, owner->base));
      }
      v.tensor = Tensor();
    }
  }

  std::vector<int64_t> shape_of(const TensorSpec& s, const int64_t* syms, size_t nsyms) {
    if (s.is_static) return s.static_shape;
    std::vector<int64_t> out(s.dims.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = eval_dim(s.dims[i], syms, nsyms);
    return out;
  }

  static void flatten(const Value& v, std::vector<Tensor>& out) {
    if (v.tuple) {
      for (auto& f : *v.tuple) flatten(f, out);
    } else {
      out.push_back(v.tensor);
    }
  }

  /// The arena of one run of a planned function: one device allocation.
  std::shared_ptr<uint8_t> new_arena(const FunctionArena& plan) {
    if (plan.bytes == 0) return nullptr;
    ++stats.allocations;
    stats.bytes_allocated += int64_t(plan.bytes);
    stats.planned += plan.planned;
    return device_empty({int64_t(plan.bytes)}, DataType::UInt(8), vm_device).buffer();
  }

  Value run(int32_t fidx, std::vector<Value> args) {
    const VMFunction& f = ex->functions[size_t(fidx)];
    if (args.size() != f.param_names.size())
      throw_error("TypeError", "function '" + f.name + "' takes " + std::to_string(f.param_names.size()) +
                                   " arguments, but " + std::to_string(args.size()) + " were given");
    std::vector<Value> regs(size_t(f.num_registers));
    std::vector<int64_t> syms(size_t(f.num_sym_vars), 0);
    // Arguments go where the function expects them; where it says nothing, they stay where
    // they are and each reader moves them on first use (a register is moved once).
    const std::vector<std::optional<Device>>& params = param_devices[size_t(fidx)];
    for (size_t i = 0; i < args.size(); ++i) regs[i] = params[i] ? move(args[i], *params[i]) : std::move(args[i]);
    const auto& fn_out_devices = out_devices[size_t(fidx)];
    const FunctionArena& plan = arenas[size_t(fidx)];
    std::shared_ptr<uint8_t> arena;
    std::vector<Tensor> ins, outs;
    size_t pc = 0;
    while (pc < f.code.size()) {
      const Instruction& in = f.code[pc];
      size_t next = pc + 1;
      switch (in.op) {
        case Opcode::CallKernel:
        case Opcode::CallExtern: {
          ins.clear();
          outs.clear();
          const std::vector<Device>& out_devs = fn_out_devices[pc];
          if (in.op == Opcode::CallExtern) {
            Device at = extern_devices[size_t(in.index)];
            for (int32_t a : in.args) flatten(move_register(regs[size_t(a)], at), ins);
          } else if (kernel_placements[size_t(in.index)] == KernelPlacement::kHost) {
            for (int32_t a : in.args) flatten(move_register(regs[size_t(a)], Device::cpu()), ins);
          } else {
            if (kernel_is_device_copy[size_t(in.index)] && in.args.size() == 1 && !in.tuple_result) {
              const Value& src = regs[size_t(in.args[0])];
              if (!src.tuple && src.tensor.defined() &&
                  (out_devs[0].is_cpu() ? src.tensor.device().is_cpu() : src.tensor.device() == out_devs[0])) {
                regs[size_t(in.dst)] = src;  // already there: R.to_vdevice moves nothing
                break;
              }
            }
            for (int32_t a : in.args) flatten(regs[size_t(a)], ins);
          }
          for (size_t o = 0; o < in.outs.size(); ++o) {
            int64_t offset = plan.bytes ? plan.offsets[pc][o] : -1;
            if (offset < 0) {
              outs.push_back(alloc(shape_of(in.outs[o], syms.data(), syms.size()), in.outs[o].dtype, out_devs[o]));
              continue;
            }
            if (!arena) arena = new_arena(plan);
            outs.push_back(Tensor::from_buffer(in.outs[o].static_shape, in.outs[o].dtype,
                                               std::shared_ptr<uint8_t>(arena, arena.get() + offset), out_devs[o]));
          }
          auto started = kernel_profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
          if (in.op == Opcode::CallKernel) {
            static const KernelAttrs kEmpty;
            const KernelAttrs* attrs = in.attrs >= 0 ? &f.attrs[size_t(in.attrs)] : &kEmpty;
            if (!in.dyn_attrs.empty()) {
              KernelAttrs dyn = *attrs;
              for (auto& [k, progs] : in.dyn_attrs) {
                std::vector<int64_t> vals;
                for (auto& p : progs) vals.push_back(eval_dim(p, syms.data(), syms.size()));
                dyn.values[k] = vals;
              }
              kernels[size_t(in.index)](ins, dyn, outs);
            } else {
              kernels[size_t(in.index)](ins, *attrs, outs);
            }
          } else {
            externs[size_t(in.index)](ins, outs);
          }
          if (kernel_profile) {
            if (!vm_device.is_cpu()) synchronize(vm_device);  // time the work, not its launch
            auto& e = (in.op == Opcode::CallKernel ? *kernel_profile : *extern_profile)[size_t(in.index)];
            e.calls++;
            e.total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
          }
          Value& dst = regs[size_t(in.dst)];
          if (in.tuple_result) {
            std::vector<Value> fields;
            for (auto& o : outs) fields.emplace_back(std::move(o));
            dst = Value::make_tuple(std::move(fields));
          } else {
            dst = Value(std::move(outs[0]));
          }
          // Drop the argument handles now so dead inputs are uniquely owned at their kill.
          ins.clear();
          outs.clear();
          break;
        }
        case Opcode::CallFunc: {
          std::vector<Value> cargs;
          for (int32_t a : in.args) cargs.push_back(regs[size_t(a)]);
          regs[size_t(in.dst)] = run(in.index, std::move(cargs));
          break;
        }
        case Opcode::View: {
          const Value& src = regs[size_t(in.args[0])];
          if (src.tuple || !src.tensor.defined()) throw_error("TypeError", "reshape of a non-tensor value");
          auto shape = shape_of(in.outs[0], syms.data(), syms.size());
          // Checked arithmetic: a hostile artifact's shape must not wrap around into a "fitting" size.
          int64_t n = 1, bytes = 0;
          for (int64_t d : shape)
            if (d < 0 || __builtin_mul_overflow(n, d, &n))
              throw_error("ValueError", "a view's shape has a negative or too large dimension");
          if (in.index >= 0) {  // a contiguous part of the source (a slice), `index` bytes in
            int64_t end = 0;
            if (__builtin_mul_overflow(n, int64_t(src.tensor.dtype().bytes()), &bytes) ||
                __builtin_add_overflow(bytes, int64_t(in.index), &end) || size_t(end) > src.tensor.nbytes())
              throw_error("ValueError", "a view of bytes " + std::to_string(in.index) + " to " + std::to_string(end) +
                                            " of a tensor of " + std::to_string(src.tensor.nbytes()) + " bytes");
            regs[size_t(in.dst)] = Value(src.tensor.view(std::move(shape), size_t(in.index)));
            break;
          }
          if (n != src.tensor.numel())
            throw_error("ValueError", "cannot reshape a tensor of " + std::to_string(src.tensor.numel()) +
                                          " elements to one of " + std::to_string(n));
          regs[size_t(in.dst)] = Value(src.tensor.view(std::move(shape)));
          break;
        }
        case Opcode::MakeTuple: {
          std::vector<Value> fields;
          for (int32_t a : in.args) fields.push_back(regs[size_t(a)]);
          regs[size_t(in.dst)] = Value::make_tuple(std::move(fields));
          break;
        }
        case Opcode::GetItem: {
          const Value& src = regs[size_t(in.args[0])];
          if (!in.name.empty()) match_tuple(in, src, f);  // a tuple of the signature
          if (!src.tuple || in.index < 0 || size_t(in.index) >= src.tuple->size())
            throw_error("IndexError", "tuple index " + std::to_string(in.index) + " out of range");
          Value item = (*src.tuple)[size_t(in.index)];
          regs[size_t(in.dst)] = std::move(item);
          break;
        }
        case Opcode::LoadConst: {
          if (!in.outs.empty()) {
            auto it = device_constants[size_t(fidx)].find(pc);
            if (it != device_constants[size_t(fidx)].end()) {
              regs[size_t(in.dst)] = Value(it->second);
              break;
            }
          }
          regs[size_t(in.dst)] = Value(ex->constants[size_t(in.index)]);
          break;
        }
        case Opcode::Move: {
          Value v = regs[size_t(in.args[0])];
          regs[size_t(in.dst)] = std::move(v);
          break;
        }
        case Opcode::PrimToTensor: {
          int64_t v = eval_dim(in.prim, syms.data(), syms.size());
          DataType dt = in.outs[0].dtype;
          Tensor t = Tensor::empty({}, dt);
          if (dt == DataType::Int(64)) *t.data_as<int64_t>() = v;
          else if (dt == DataType::Int(32)) *t.data_as<int32_t>() = int32_t(v);
          else if (dt == DataType::Float(32)) *t.data_as<float>() = float(v);
          else if (dt == DataType::Float(64)) *t.data_as<double>() = double(v);
          else if (dt.is_bool()) *t.data_as<uint8_t>() = v != 0;
          else throw_error("TypeError", "symbolic scalar of dtype " + dt.str() + " is not supported");
          regs[size_t(in.dst)] = Value(std::move(t));
          break;
        }
        case Opcode::MatchTensor: {
          match_tensor(in, regs[size_t(in.args[0])], syms, f);
          if (in.dst != in.args[0]) regs[size_t(in.dst)] = regs[size_t(in.args[0])];
          break;
        }
        case Opcode::JumpIfFalse: {
          const Value& c = move_register(regs[size_t(in.args[0])], Device::cpu());
          if (c.tuple || !c.tensor.defined() || c.tensor.numel() != 1)
            throw_error("TypeError", "the condition of an If must be a scalar");
          bool b;
          DataType dt = c.tensor.dtype();
          if (dt.is_bool() || dt.bits() == 8) b = *c.tensor.data_as<uint8_t>() != 0;
          else if (dt == DataType::Int(32)) b = *c.tensor.data_as<int32_t>() != 0;
          else if (dt == DataType::Int(64)) b = *c.tensor.data_as<int64_t>() != 0;
          else if (dt == DataType::Float(32)) b = *c.tensor.data_as<float>() != 0;
          else if (dt == DataType::Float(64)) b = *c.tensor.data_as<double>() != 0;
          else throw_error("TypeError", "the condition of an If has unsupported dtype " + dt.str());
          if (!b) next = size_t(in.index);
          break;
        }
        case Opcode::Goto: next = size_t(in.index); break;
        case Opcode::Ret: {
          Value out = std::move(regs[size_t(in.args[0])]);
          for (auto& r : regs) release(r);
          return out;
        }
      }
      for (int32_t k : in.kills) release(regs[size_t(k)]);
      pc = next;
    }
    throw_error("ValueError", "function '" + f.name + "' ended without returning");
  }
};

VirtualMachine::VirtualMachine(std::shared_ptr<Executable> exec, Device device)
    : exec_(std::move(exec)), device_(device), impl_(new Impl) {
  if (!exec_) throw_error("ValueError", "VirtualMachine needs an executable");
  // A missing plug-in or GPU is an error now, not at the first call.
  impl_->api = device_api(device);
  impl_->ex = exec_.get();
  impl_->vm_device = device;
  for (auto& k : exec_->kernel_names) {
    KernelFn fn = find_kernel(k);
    if (!fn) throw_error("KeyError", "no host kernel for operator '" + k + "'");
    impl_->kernels.push_back(fn);
    impl_->kernel_placements.push_back(kernel_placement(k));
  }
  for (auto& s : exec_->extern_symbols) {
    PackedFunc fn;
    ModulePtr owner;
    for (auto& m : exec_->external_modules)
      if ((fn = m->find_function(s))) {
        owner = m;
        break;
      }
    if (!fn) {
      std::string mods;
      for (auto& m : exec_->external_modules) mods += (mods.empty() ? "" : ", ") + m->type_key();
      throw_error("KeyError", "external function '" + s + "' is not defined by any external module (modules: " +
                                  (mods.empty() ? "none" : mods) + ")");
    }
    impl_->externs.push_back(std::move(fn));
    impl_->extern_capturable.push_back(owner->supports_graph_capture());
    impl_->extern_devices.push_back(impl_->resolve(Device{owner->device_kind(), 0}, "external function '" + s +
                                                                                      "' (module '" + owner->type_key() + "')"));
  }
  impl_->function_capturable.assign(exec_->functions.size(), -1);
  for (const Tensor& c : exec_->constants)
    if (c.defined()) impl_->constant_data.insert(c.data());
  for (const VMFunction& f : exec_->functions) {
    std::vector<std::optional<Device>> params(f.param_names.size());
    for (size_t i = 0; i < f.param_devices.size() && i < params.size(); ++i)
      params[i] = impl_->resolve(f.param_devices[i], "parameter '" + f.param_names[i] + "' of function '" + f.name + "'");
    impl_->param_devices.push_back(std::move(params));
    std::vector<std::vector<Device>> per_instruction;
    for (const Instruction& in : f.code) {
      std::vector<Device> outs;
      for (const TensorSpec& spec : in.outs) {
        std::string where = "a result of instruction " + std::to_string(per_instruction.size()) + " of function '" + f.name + "'";
        Device d = impl_->resolve(spec.device, where);
        if (in.op == Opcode::CallExtern) {
          d = impl_->extern_devices[size_t(in.index)];
        } else if (in.op == Opcode::CallKernel && impl_->kernel_placements[size_t(in.index)] == KernelPlacement::kHost &&
                   !d.is_host_accessible()) {
          throw_error("ValueError", where + " (host kernel '" + exec_->kernel_names[size_t(in.index)] + "') is placed on " +
                                        d.str() + ", but host kernels write host memory and no device kernel exists for it");
        }
        outs.push_back(d);
      }
      per_instruction.push_back(std::move(outs));
    }
    impl_->out_devices.push_back(std::move(per_instruction));
  }
  for (const auto& k : exec_->kernel_names) impl_->kernel_is_device_copy.push_back(k == "relax.to_vdevice");
  for (size_t fi = 0; fi < exec_->functions.size(); ++fi) {
    const VMFunction& f = exec_->functions[fi];
    impl_->arenas.push_back(device.is_host_accessible()
                                ? FunctionArena{}
                                : plan_function_arena(f, impl_->out_devices[fi], device, impl_->kernel_is_device_copy));
    // Constants placed on a device are uploaded now, once (moves are cached per constant).
    std::unordered_map<size_t, Tensor> on_device;
    for (size_t pc = 0; pc < f.code.size(); ++pc) {
      const Instruction& in = f.code[pc];
      if (in.op != Opcode::LoadConst || in.outs.empty()) continue;
      Device d = impl_->out_devices[fi][pc].at(0);
      if (d.is_cpu() || in.index < 0 || size_t(in.index) >= exec_->constants.size()) continue;
      impl_->api->set_device(d.id);
      on_device.emplace(pc, impl_->move(exec_->constants[size_t(in.index)], d));
    }
    impl_->device_constants.push_back(std::move(on_device));
  }
}

void VirtualMachine::set_graph_capture(bool enabled) {
  std::lock_guard lock(impl_->call_mutex);
  impl_->graph_capture = enabled;
  if (!enabled && impl_->graphs) impl_->graphs->clear();
}

const GraphStats& VirtualMachine::graph_stats() const {
  static const GraphStats kNone;
  return impl_->graphs ? impl_->graphs->stats() : kNone;
}

void VirtualMachine::set_stream(StreamHandle stream) {
  std::lock_guard lock(impl_->call_mutex);
  impl_->has_stream = true;
  impl_->stream = stream;
}

VirtualMachine::~VirtualMachine() = default;

Value VirtualMachine::invoke_value(const std::string& name, const std::vector<Value>& inputs) {
  std::lock_guard lock(impl_->call_mutex);
  int32_t idx = exec_->function_index(name);
  if (idx < 0) throw_error("KeyError", "the executable has no function '" + name + "'");
  check_arguments(exec_->functions[size_t(idx)], inputs, device_);
  // Results go to the user's device; host buffers left behind by that go back to the pool.
  auto to_user = [&](Value result) {
    Value out = impl_->move(result, device_);
    impl_->release(result);
    return out;
  };
  if (device_.is_cpu()) return to_user(impl_->run(idx, inputs));
  DeviceAPI* api = device_api(device_);
  api->set_device(device_.id);
  StreamHandle caller_stream = current_stream(device_);
  Value out;
  {
    StreamGuard guard(device_, impl_->has_stream ? impl_->stream : caller_stream);
    std::optional<Value> graphed;
    if (impl_->graph_capture && !impl_->kernel_profile && impl_->capturable(idx)) {
      if (!impl_->graphs) impl_->graphs = std::make_unique<GraphCache>(api, device_);
      graphed = impl_->graphs->call(idx, inputs, current_stream(device_),
                                    [&](std::vector<Value> args) { return impl_->run(idx, std::move(args)); });
    }
    out = graphed ? std::move(*graphed) : to_user(impl_->run(idx, inputs));
  }
  // The caller's later work on its own stream sees the results.
  if (impl_->has_stream) api->stream_wait(device_.id, caller_stream, impl_->stream);
  return out;
}

std::vector<Tensor> VirtualMachine::invoke(const std::string& name, const std::vector<Tensor>& inputs) {
  std::vector<Value> args(inputs.begin(), inputs.end());
  Value v = invoke_value(name, args);
  std::vector<Tensor> out;
  Impl::flatten(v, out);
  return out;
}

ProfileReport VirtualMachine::profile(const std::string& name, const std::vector<Tensor>& inputs) {
  std::lock_guard lock(impl_->call_mutex);
  std::vector<ProfileEntry> kernels(exec_->kernel_names.size()), externs(exec_->extern_symbols.size());
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].name = exec_->kernel_names[i];
  for (size_t i = 0; i < externs.size(); ++i) externs[i].name = exec_->extern_symbols[i], externs[i].external = true;
  ProfileEntry copies{"(device copies)", false, 0, 0};
  impl_->kernel_profile = &kernels;
  impl_->extern_profile = &externs;
  impl_->copy_profile = &copies;
  auto started = std::chrono::steady_clock::now();
  try {
    invoke(name, inputs);
  } catch (...) {
    impl_->kernel_profile = impl_->extern_profile = nullptr;
    impl_->copy_profile = nullptr;
    throw;
  }
  ProfileReport report;
  report.wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
  impl_->kernel_profile = impl_->extern_profile = nullptr;
  impl_->copy_profile = nullptr;
  for (auto* list : {&kernels, &externs})
    for (auto& e : *list)
      if (e.calls) report.entries.push_back(std::move(e));
  if (copies.calls) report.entries.push_back(std::move(copies));
  std::stable_sort(report.entries.begin(), report.entries.end(),
                   [](const ProfileEntry& a, const ProfileEntry& b) { return a.total_us > b.total_us; });
  return report;
}

std::string ProfileReport::table() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-64s %8s %8s %12s %7s\n", "name", "kind", "calls", "time (us)", "share");
  out += line;
  double in_calls = 0;
  for (const auto& e : entries) {
    in_calls += e.total_us;
    // Merged partitions are named after every operator they hold: keep the head and the tail.
    std::string name = e.name.size() <= 64 ? e.name : e.name.substr(0, 40) + "..." + e.name.substr(e.name.size() - 21);
    std::snprintf(line, sizeof line, "%-64s %8s %8lld %12.1f %6.1f%%\n", name.c_str(), e.external ? "extern" : "host",
                  static_cast<long long>(e.calls), e.total_us, wall_us > 0 ? 100.0 * e.total_us / wall_us : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-64s %8s %8s %12.1f %6.1f%%\n", "(VM: allocation, views, dispatch)", "", "",
                wall_us - in_calls, wall_us > 0 ? 100.0 * (wall_us - in_calls) / wall_us : 0.0);
  out += line;
  std::snprintf(line, sizeof line, "%-64s %8s %8s %12.1f\n", "total", "", "", wall_us);
  return out + line;
}

const MemoryStats& VirtualMachine::memory_stats() const { return impl_->stats; }

void VirtualMachine::release_pool() {
  std::lock_guard lock(impl_->call_mutex);
  impl_->pool.clear();
  impl_->stats.pool_bytes = 0;
}

}  // namespace partita::runtime
