// Executable containers and the artifact format.
//
// File layout (little endian):
//   magic "PARTITA\x01" (8 bytes) | u32 format version | u32 section count
//   sections: u32 tag | u64 byte size | bytes      (tags: 1 kernels+externs, 2 constants,
//                                                    3 named constants, 4 functions, 5 modules)
//   u64 FNV-1a checksum of everything before it.
// Version 2 added devices (each TensorSpec's, each function's parameter devices); version 1
// files still load, with everything on the host.
// Loading checks the size, magic, version and checksum before parsing, and every read is
// bounds-checked, so truncated or corrupted files raise Error("ValueError") naming the problem.
#include "partita/runtime/executable.h"

#include <fstream>
#include <sstream>

#include "partita/runtime/serialize.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {
constexpr char kMagic[8] = {'P', 'A', 'R', 'T', 'I', 'T', 'A', '\x01'};
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;
enum SectionTag : uint32_t { kNames = 1, kConstants = 2, kNamed = 3, kFunctions = 4, kModules = 5 };
}  // namespace

int64_t eval_dim(const DimProgram& p, const int64_t* syms, size_t num_syms) {
  int64_t stack[32];
  int sp = 0;
  for (size_t i = 0; i + 1 < p.size() + 1 && i < p.size(); i += 2) {
    if (i + 1 >= p.size()) break;
    auto op = DimOp(p[i]);
    int64_t v = p[i + 1];
    if (op == DimOp::Const || op == DimOp::Var) {
      if (sp >= 32) throw_error("ValueError", "shape program too deep");
      if (op == DimOp::Var) {
        if (v < 0 || size_t(v) >= num_syms) throw_error("ValueError", "shape program uses an unknown variable");
        v = syms[v];
      }
      stack[sp++] = v;
      continue;
    }
    if (sp < 2) throw_error("ValueError", "malformed shape program");
    int64_t b = stack[--sp], a = stack[sp - 1], r = 0;
    switch (op) {
      case DimOp::Add: r = a + b; break;
      case DimOp::Sub: r = a - b; break;
      case DimOp::Mul: r = a * b; break;
      case DimOp::FloorDiv:
      case DimOp::FloorMod: {
        if (b == 0) throw_error("ValueError", "division by zero in a shape expression");
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        r = op == DimOp::FloorDiv ? q : a - q * b;
        break;
      }
      case DimOp::Min: r = std::min(a, b); break;
      case DimOp::Max: r = std::max(a, b); break;
      default: throw_error("ValueError", "malformed shape program (opcode " + std::to_string(p[i]) + ")");
    }
    stack[sp - 1] = r;
  }
  if (sp != 1) throw_error("ValueError", "malformed shape program");
  return stack[0];
}

int32_t Executable::add_constant(const Tensor& t) {
  for (size_t i = 0; i < constants.size(); ++i)
    if (constants[i].same_buffer(t) && constants[i].shape() == t.shape() && constants[i].dtype() == t.dtype())
      return int32_t(i);
  while (constant_hashes_.size() < constants.size())
    constant_hashes_.push_back(constants[constant_hashes_.size()].content_hash());
  size_t h = t.content_hash();
  for (size_t i = 0; i < constants.size(); ++i)
    if (constant_hashes_[i] == h && constants[i].content_equal(t)) return int32_t(i);
  constants.push_back(t);
  constant_hashes_.push_back(h);
  return int32_t(constants.size() - 1);
}

int32_t Executable::function_index(const std::string& name) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return int32_t(i);
  return -1;
}

std::map<std::string, Tensor> Executable::named_constant_map() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, idx] : named_constants) out[name] = constants.at(size_t(idx));
  return out;
}

namespace {
void init_module(const ModulePtr& m, const std::map<std::string, Tensor>& c) {
  m->init_constants(c);
  for (auto& i : m->imports()) init_module(i, c);
}

void write_spec(Writer& w, const TensorSpec& s) {
  w.u8(uint8_t(s.dtype.code()));
  w.u8(uint8_t(s.dtype.bits()));
  w.pod<uint16_t>(uint16_t(s.dtype.lanes()));
  w.u8(s.is_static);
  w.i64s(s.static_shape);
  w.u64(s.dims.size());
  for (auto& d : s.dims) w.i64s(d);
  w.pod<int32_t>(int32_t(s.device.kind));
  w.pod<int32_t>(s.device.id);
}

Device read_device(Reader& r) {
  int32_t kind = r.pod<int32_t>("device kind"), id = r.pod<int32_t>("device id");
  if (!is_known_device_kind(kind)) r.fail("unknown device kind " + std::to_string(kind));
  if (id < 0) r.fail("negative device id " + std::to_string(id));
  return Device{DeviceKind(kind), id};
}

DataType read_dtype(Reader& r) {
  uint8_t code = r.u8("dtype"), bits = r.u8("dtype");
  uint16_t lanes = r.pod<uint16_t>("dtype");
  if (code > 4 && code != 255) r.fail("bad dtype code " + std::to_string(code));
  return DataType(DataType::Code(code), bits, lanes);
}

TensorSpec read_spec(Reader& r, uint32_t version) {
  TensorSpec s;
  s.dtype = read_dtype(r);
  s.is_static = r.u8("spec") != 0;
  s.static_shape = r.i64s("static shape");
  for (uint64_t n = r.count("dims", 8); n--;) s.dims.push_back(r.i64s("dim program"));
  if (version >= 2) s.device = read_device(r);
  return s;
}

void write_attr(Writer& w, const KernelAttrValue& v) {
  w.u8(uint8_t(v.index()));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) w.u8(x);
        else if constexpr (std::is_same_v<T, int64_t>) w.i64(x);
        else if constexpr (std::is_same_v<T, double>) w.pod(x);
        else if constexpr (std::is_same_v<T, std::string>) w.str(x);
        else if constexpr (std::is_same_v<T, DataType>) {
          w.u8(uint8_t(x.code()));
          w.u8(uint8_t(x.bits()));
          w.pod<uint16_t>(uint16_t(x.lanes()));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) w.i64s(x);
      },
      v);
}

KernelAttrValue read_attr(Reader& r) {
  switch (r.u8("attribute kind")) {
    case 0: return std::monostate{};
    case 1: return bool(r.u8("bool attribute"));
    case 2: return r.i64("int attribute");
    case 3: return r.pod<double>("float attribute");
    case 4: return r.str("string attribute");
    case 5: return read_dtype(r);
    case 6: return r.i64s("int list attribute");
    default: r.fail("bad attribute kind");
  }
}

void write_function(Writer& w, const VMFunction& f) {
  w.str(f.name);
  w.u64(f.param_names.size());
  for (auto& p : f.param_names) w.str(p);
  w.u32(uint32_t(f.num_registers));
  w.u32(uint32_t(f.num_sym_vars));
  w.u64(f.attrs.size());
  for (auto& a : f.attrs) {
    w.u64(a.values.size());
    for (auto& [k, v] : a.values) {
      w.str(k);
      write_attr(w, v);
    }
  }
  w.u64(f.code.size());
  for (auto& in : f.code) {
    w.u8(uint8_t(in.op));
    w.pod<int32_t>(in.dst);
    w.pod<int32_t>(in.index);
    w.u64(in.args.size());
    for (int32_t a : in.args) w.pod<int32_t>(a);
    w.u64(in.outs.size());
    for (auto& s : in.outs) write_spec(w, s);
    w.u8(in.tuple_result);
    w.pod<int32_t>(in.attrs);
    w.u64(in.dyn_attrs.size());
    for (auto& [k, progs] : in.dyn_attrs) {
      w.str(k);
      w.u64(progs.size());
      for (auto& p : progs) w.i64s(p);
    }
    w.u8(uint8_t(in.match_dtype.code()));
    w.u8(uint8_t(in.match_dtype.bits()));
    w.pod<uint16_t>(uint16_t(in.match_dtype.lanes()));
    w.pod<int32_t>(in.match_ndim);
    w.u64(in.match_dims.size());
    for (auto& d : in.match_dims) {
      w.u8(d.bind);
      w.pod<int32_t>(d.slot);
      w.i64s(d.expect);
    }
    w.str(in.name);
    w.i64s(in.prim);
    w.u64(in.kills.size());
    for (int32_t k : in.kills) w.pod<int32_t>(k);
  }
  w.u64(f.param_devices.size());
  for (Device d : f.param_devices) {
    w.pod<int32_t>(int32_t(d.kind));
    w.pod<int32_t>(d.id);
  }
}

VMFunction read_function(Reader& r, const Executable& ex, uint32_t version) {
  VMFunction f;
  f.name = r.str("function name");
  for (uint64_t n = r.count("params", 8); n--;) f.param_names.push_back(r.str("param name"));
  f.num_registers = int32_t(r.u32("register count"));
  f.num_sym_vars = int32_t(r.u32("symbolic variable count"));
  if (f.num_registers > (1 << 24) || f.num_sym_vars > (1 << 20)) r.fail("implausible register count");
  for (uint64_t n = r.count("attribute tables", 8); n--;) {
    KernelAttrs a;
    for (uint64_t m = r.count("attributes", 9); m--;) {
      std::string k = r.str("attribute name");
      a.values[k] = read_attr(r);
    }
    f.attrs.push_back(std::move(a));
  }
  auto check_reg = [&](int32_t reg, bool allow_none) {
    if ((reg < 0 && !(allow_none && reg == -1)) || reg >= f.num_registers)
      r.fail("register " + std::to_string(reg) + " out of range in function '" + f.name + "'");
  };
  uint64_t ncode = r.count("instructions", 16);
  for (uint64_t i = 0; i < ncode; ++i) {
    Instruction in;
    uint8_t op = r.u8("opcode");
    if (op > uint8_t(Opcode::Ret)) r.fail("bad opcode " + std::to_string(op));
    in.op = Opcode(op);
    in.dst = r.pod<int32_t>("dst");
    in.index = r.pod<int32_t>("index");
    for (uint64_t n = r.count("args", 4); n--;) in.args.push_back(r.pod<int32_t>("arg"));
    for (uint64_t n = r.count("outputs", 8); n--;) in.outs.push_back(read_spec(r, version));
    in.tuple_result = r.u8("tuple flag") != 0;
    in.attrs = r.pod<int32_t>("attrs");
    for (uint64_t n = r.count("dynamic attributes", 16); n--;) {
      std::string k = r.str("dynamic attribute");
      std::vector<DimProgram> progs;
      for (uint64_t m = r.count("dynamic attribute values", 8); m--;) progs.push_back(r.i64s("program"));
      in.dyn_attrs.emplace_back(std::move(k), std::move(progs));
    }
    in.match_dtype = read_dtype(r);
    in.match_ndim = r.pod<int32_t>("ndim");
    for (uint64_t n = r.count("match dims", 13); n--;) {
      DimMatch d;
      d.bind = r.u8("bind") != 0;
      d.slot = r.pod<int32_t>("slot");
      d.expect = r.i64s("expected dim");
      if (d.bind && (d.slot < 0 || d.slot >= f.num_sym_vars)) r.fail("symbolic slot out of range");
      in.match_dims.push_back(std::move(d));
    }
    in.name = r.str("name");
    in.prim = r.i64s("prim program");
    for (uint64_t n = r.count("kills", 4); n--;) {
      in.kills.push_back(r.pod<int32_t>("kill"));
      check_reg(in.kills.back(), false);
    }
    // Validate operands so the VM never indexes out of range.
    for (int32_t a : in.args) check_reg(a, false);
    check_reg(in.dst, true);
    auto need_args = [&](size_t n) {
      if (in.args.size() < n) r.fail("instruction with too few operands in '" + f.name + "'");
    };
    switch (in.op) {
      case Opcode::CallKernel:
        if (in.index < 0 || size_t(in.index) >= ex.kernel_names.size()) r.fail("kernel index out of range");
        if (in.attrs < -1 || in.attrs >= int32_t(f.attrs.size())) r.fail("attribute index out of range");
        if (in.outs.empty()) r.fail("kernel call without outputs");
        break;
      case Opcode::CallExtern:
        if (in.index < 0 || size_t(in.index) >= ex.extern_symbols.size()) r.fail("extern index out of range");
        break;
      case Opcode::CallFunc: break;  // checked after all functions are read
      case Opcode::LoadConst:
        if (in.index < 0 || size_t(in.index) >= ex.constants.size()) r.fail("constant index out of range");
        break;
      case Opcode::View:
        need_args(1);
        if (in.outs.size() != 1) r.fail("view without a shape");
        if (in.index < -1) r.fail("view at a negative byte offset");
        break;
      case Opcode::PrimToTensor: if (in.outs.size() != 1) r.fail("prim without a dtype"); break;
      case Opcode::GetItem: case Opcode::Move: case Opcode::MatchTensor: case Opcode::JumpIfFalse:
      case Opcode::Ret: need_args(1); break;
      default: break;
    }
    if (in.op != Opcode::JumpIfFalse && in.op != Opcode::Goto && in.op != Opcode::Ret && in.dst < 0)
      r.fail("instruction without a destination in '" + f.name + "'");
    f.code.push_back(std::move(in));
  }
  for (auto& in : f.code)
    if ((in.op == Opcode::JumpIfFalse || in.op == Opcode::Goto) &&
        (in.index < 0 || size_t(in.index) >= f.code.size()))
      r.fail("jump target out of range in '" + f.name + "'");
  if (version >= 2) {
    for (uint64_t n = r.count("parameter devices", 8); n--;) f.param_devices.push_back(read_device(r));
    if (!f.param_devices.empty() && f.param_devices.size() != f.param_names.size())
      r.fail("function '" + f.name + "' has " + std::to_string(f.param_devices.size()) + " parameter devices for " +
             std::to_string(f.param_names.size()) + " parameters");
  }
  return f;
}
}  // namespace

void Executable::init_external_modules() const {
  auto named = named_constant_map();
  for (auto& m : external_modules) init_module(m, named);
}

void Executable::save(std::string& out) const {
  out.clear();
  out.append(kMagic, 8);
  Writer w(out);
  w.u32(kVersion);
  w.u32(5);
  auto section = [&](uint32_t tag, auto&& body) {
    w.u32(tag);
    size_t size_pos = out.size();
    w.u64(0);
    size_t start = out.size();
    body();
    uint64_t size = out.size() - start;
    std::memcpy(out.data() + size_pos, &size, 8);
  };
  section(kNames, [&] {
    w.u64(kernel_names.size());
    for (auto& k : kernel_names) w.str(k);
    w.u64(extern_symbols.size());
    for (auto& k : extern_symbols) w.str(k);
  });
  section(kConstants, [&] {
    w.u64(constants.size());
    for (auto& c : constants) w.tensor(c);
  });
  section(kNamed, [&] {
    w.u64(named_constants.size());
    for (auto& [k, v] : named_constants) {
      w.str(k);
      w.pod<int32_t>(v);
    }
  });
  section(kFunctions, [&] {
    w.u64(functions.size());
    for (auto& f : functions) write_function(w, f);
  });
  section(kModules, [&] {
    w.u64(external_modules.size());
    for (auto& m : external_modules) {
      if (!m->imports().empty())
        throw_error("ValueError", "external module '" + m->type_key() + "' with imports cannot be exported");
      w.str(m->type_key());
      std::string blob;
      m->save_to_binary(blob);
      w.str(blob);
    }
  });
  w.u64(fnv1a64(out));
}

std::shared_ptr<Executable> Executable::load(std::string_view bytes) {
  const size_t header = 16, trailer = 8;
  if (bytes.size() < header + trailer)
    throw_error("ValueError", "not a Partita executable: file is " + std::to_string(bytes.size()) +
                                  " bytes, too short for the header");
  if (std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw_error("ValueError", "not a Partita executable: bad magic header");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - trailer, 8);
  std::string_view body = bytes.substr(0, bytes.size() - trailer);
  Reader r(body.substr(8), "Partita executable");
  uint32_t version = r.u32("version");
  if (version < kOldestVersion || version > kVersion)
    throw_error("ValueError", "unsupported Partita executable format version " + std::to_string(version) +
                                  " (this runtime reads versions " + std::to_string(kOldestVersion) + " to " +
                                  std::to_string(kVersion) + ")");
  if (fnv1a64(body) != stored)
    throw_error("ValueError", "Partita executable is corrupted or truncated: checksum mismatch");
  auto ex = std::make_shared<Executable>();
  uint32_t nsec = r.u32("section count");
  for (uint32_t s = 0; s < nsec; ++s) {
    uint32_t tag = r.u32("section tag");
    uint64_t size = r.u64("section size");
    if (size > r.remaining()) r.fail("section " + std::to_string(tag) + " is larger than the file");
    Reader sr(r.bytes(size, "section"), "Partita executable section " + std::to_string(tag));
    switch (tag) {
      case kNames:
        for (uint64_t n = sr.count("kernel names", 8); n--;) ex->kernel_names.push_back(sr.str("kernel name"));
        for (uint64_t n = sr.count("extern symbols", 8); n--;) ex->extern_symbols.push_back(sr.str("symbol"));
        break;
      case kConstants:
        for (uint64_t n = sr.count("constants", 20); n--;) ex->constants.push_back(sr.tensor("constant"));
        break;
      case kNamed:
        for (uint64_t n = sr.count("named constants", 12); n--;) {
          std::string k = sr.str("constant name");
          int32_t idx = sr.pod<int32_t>("constant index");
          if (idx < 0 || size_t(idx) >= ex->constants.size()) sr.fail("named constant '" + k + "' index out of range");
          ex->named_constants[k] = idx;
        }
        break;
      case kFunctions:
        for (uint64_t n = sr.count("functions", 16); n--;) ex->functions.push_back(read_function(sr, *ex, version));
        for (auto& f : ex->functions)
          for (auto& in : f.code)
            if (in.op == Opcode::CallFunc && (in.index < 0 || size_t(in.index) >= ex->functions.size()))
              sr.fail("function index out of range in '" + f.name + "'");
        break;
      case kModules:
        for (uint64_t n = sr.count("external modules", 16); n--;) {
          std::string key = sr.str("module type key");
          std::string blob = sr.str("module bytes");
          ex->external_modules.push_back(load_module_from_binary(key, blob));
        }
        break;
      default: r.fail("unknown section tag " + std::to_string(tag));
    }
    if (!sr.at_end()) sr.fail("trailing bytes in section");
  }
  if (!r.at_end()) r.fail("trailing bytes after the last section");
  ex->init_external_modules();
  return ex;
}

void Executable::export_library(const std::string& path) const {
  std::string bytes;
  save(bytes);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw_error("IOError", "cannot open '" + path + "' for writing");
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) throw_error("IOError", "cannot write '" + path + "'");
}

std::shared_ptr<Executable> load_module(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_error("IOError", "cannot open '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  try {
    return Executable::load(bytes);
  } catch (const Error& e) {
    throw_error(e.kind(), "loading '" + path + "': " + e.message());
  }
}

std::string Executable::as_text() const {
  static const char* names[] = {"call_kernel", "call_extern", "call_func", "view", "make_tuple", "get_item",
                                "load_const", "move", "prim_to_tensor", "match_tensor", "jump_if_false",
                                "goto", "ret"};
  std::ostringstream os;
  for (auto& f : functions) {
    os << "function " << f.name << " (" << f.param_names.size() << " params, " << f.num_registers
       << " registers)\n";
    for (size_t i = 0; i < f.code.size(); ++i) {
      auto& in = f.code[i];
      os << "  " << i << ": " << names[size_t(in.op)];
      if (in.dst >= 0) os << " %" << in.dst << " =";
      if (in.op == Opcode::CallKernel) os << " " << kernel_names[size_t(in.index)];
      else if (in.op == Opcode::CallExtern) os << " " << extern_symbols[size_t(in.index)];
      else if (in.op == Opcode::CallFunc) os << " @" << functions[size_t(in.index)].name;
      else if (in.index >= 0) os << " #" << in.index;
      for (int32_t a : in.args) os << " %" << a;
      for (auto& o : in.outs)
        if (!o.device.is_cpu()) os << " -> " << o.device.str();
      if (!in.kills.empty()) {
        os << "  ; kill";
        for (int32_t k : in.kills) os << " %" << k;
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace partita::runtime
