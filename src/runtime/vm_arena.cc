#include "vm_arena.h"

#include <algorithm>
#include <set>

#include "partita/runtime/memory_plan.h"

namespace partita::runtime {

FunctionArena plan_function_arena(const VMFunction& f, const std::vector<std::vector<Device>>& out_devices,
                                  Device device, const std::vector<bool>& may_alias_input, size_t alignment) {
  FunctionArena arena;
  arena.offsets.resize(f.code.size());
  for (size_t pc = 0; pc < f.code.size(); ++pc) arena.offsets[pc].assign(f.code[pc].outs.size(), -1);
  for (size_t pc = 0; pc < f.code.size(); ++pc) {
    const Instruction& in = f.code[pc];
    if ((in.op == Opcode::JumpIfFalse || in.op == Opcode::Goto) && size_t(in.index) <= pc) return arena;
  }
  // Candidate buffers, and per register the buffers its value may hold.
  struct Candidate {
    size_t pc, out;
    BufferLifetime life;
    bool escapes = false;
  };
  std::vector<Candidate> buffers;
  std::vector<std::set<size_t>> holds(size_t(std::max(f.num_registers, 0)));
  auto reg = [&](int32_t r) -> std::set<size_t>& { return holds.at(size_t(r)); };
  auto read = [&](int32_t r, size_t pc) {
    for (size_t b : reg(r)) buffers[b].life.last = std::max(buffers[b].life.last, int64_t(pc));
  };
  for (size_t pc = 0; pc < f.code.size(); ++pc) {
    const Instruction& in = f.code[pc];
    for (int32_t a : in.args) read(a, pc);
    std::set<size_t> result;
    switch (in.op) {
      case Opcode::CallKernel:
      case Opcode::CallExtern:
        for (size_t o = 0; o < in.outs.size(); ++o) {
          const TensorSpec& s = in.outs[o];
          if (!s.is_static || o >= out_devices[pc].size() || out_devices[pc][o] != device) continue;
          size_t bytes = size_t(s.dtype.bytes());
          for (int64_t d : s.static_shape) bytes *= size_t(std::max<int64_t>(d, 0));
          if (bytes == 0) continue;
          result.insert(buffers.size());
          buffers.push_back({pc, o, {bytes, int64_t(pc), int64_t(pc)}, false});
        }
        if (in.op == Opcode::CallKernel && size_t(in.index) < may_alias_input.size() &&
            may_alias_input[size_t(in.index)])
          for (int32_t a : in.args) result.insert(reg(a).begin(), reg(a).end());
        break;
      case Opcode::View: case Opcode::Move: case Opcode::MatchTensor: case Opcode::MakeTuple:
      case Opcode::GetItem: case Opcode::CallFunc:
        // The callee of a CallFunc may return (a view of) any argument.
        for (int32_t a : in.args) result.insert(reg(a).begin(), reg(a).end());
        break;
      case Opcode::Ret:
        for (size_t b : reg(in.args.at(0))) buffers[b].escapes = true;
        break;
      default: break;
    }
    if (in.dst >= 0) {
      // A register written twice (an If's result) may hold either value.
      if (in.op == Opcode::MatchTensor && in.dst == in.args.at(0)) continue;
      reg(in.dst).insert(result.begin(), result.end());
    }
  }
  std::vector<BufferLifetime> lives;
  std::vector<size_t> which;
  for (size_t b = 0; b < buffers.size(); ++b)
    if (!buffers[b].escapes) {
      lives.push_back(buffers[b].life);
      which.push_back(b);
    }
  if (lives.empty()) return arena;
  ArenaPlan plan = plan_arena(lives, alignment);
  for (size_t i = 0; i < which.size(); ++i) {
    const Candidate& c = buffers[which[i]];
    arena.offsets[c.pc][c.out] = int64_t(plan.offsets[i]);
  }
  arena.bytes = plan.total;
  arena.planned = int64_t(which.size());
  return arena;
}

}  // namespace partita::runtime
