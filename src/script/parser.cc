// The TVMScript parser: recursive descent over the tokens of lexer.h. Struct info of parsed
// expressions comes from BlockBuilder's normalizer (derive_struct_info: the expression is kept
// as written); binding variables take their annotation.
#include "partita/script/parser.h"

#include <charconv>
#include <functional>
#include <map>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "lexer.h"
#include "metadata.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

namespace partita::script {
namespace {

using detail::Tok;
using detail::Token;

constexpr int kMaxDepth = 256;

/// A parsed literal used for attributes and R.const payloads.
struct Literal {
  AttrValue value;
  std::vector<Literal> list;  // for nested lists
  bool is_list = false;
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    toks_ = detail::tokenize(text, file_);
    read_metadata();
  }

  IRModule parse_module_text();
  Function parse_function_text();

 private:
  // ---- token helpers ----
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_punct(const Token& t, std::string_view p) const { return t.kind == Tok::Punct && t.text == p; }
  bool is_name(const Token& t, std::string_view n) const { return t.kind == Tok::Name && t.text == n; }
  bool accept(std::string_view p) {
    if (is_punct(peek(), p)) {
      next();
      return true;
    }
    return false;
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) { detail::parse_error(file_, t.line, t.column, msg); }
  [[noreturn]] void expected(const std::string& what) { fail_at(peek(), "expected " + what + ", found " + detail::describe(peek())); }
  const Token& expect(std::string_view p) {
    if (!is_punct(peek(), p)) expected("'" + std::string(p) + "'");
    return next();
  }
  const Token& expect_kind(Tok k, const std::string& what) {
    if (peek().kind != k) expected(what);
    return next();
  }
  std::string expect_name(const std::string& what = "a name") { return std::string(expect_kind(Tok::Name, what).text); }
  void expect_keyword(std::string_view n) {
    if (!is_name(peek(), n)) expected("'" + std::string(n) + "'");
    next();
  }
  void expect_newline() { expect_kind(Tok::Newline, "end of line"); }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* p) : p(p) {
      if (++p->depth_ > kMaxDepth) p->fail_at(p->peek(), "expression nested too deeply");
    }
    ~DepthGuard() { --p->depth_; }
  };

  // ---- scopes ----
  struct Scope {
    std::unordered_map<std::string, Expr> vars;
    std::unordered_map<std::string, PrimVar> tir;
  };
  Expr* lookup_var(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->vars.find(name);
      if (f != it->vars.end()) return &f->second;
    }
    return nullptr;
  }
  PrimVar lookup_tir(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->tir.find(name);
      if (f != it->tir.end()) return f->second;
    }
    return {};
  }

  // ---- grammar ----
  void read_metadata();
  void skip_newlines() {
    while (peek().kind == Tok::Newline) next();
  }
  struct Decorator {
    bool private_ = false;
    bool pure = true;
  };
  Decorator parse_function_decorator();
  bool skip_type_var_declaration();
  Function parse_function_def(const std::string* expected_name, bool top_level, const Decorator& dec,
                              std::string* out_name);
  Expr parse_body(const Token& start, std::vector<std::string>* attr_lines, DictAttrs* attrs);
  void parse_block_stmts(std::vector<BindingBlock>* blocks, std::vector<Binding>* cur, Expr* ret,
                         bool in_function, const std::string* branch_var, StructInfo* branch_ann,
                         DictAttrs* attrs, const Token** ret_tok);
  void parse_dataflow(std::vector<Binding>* out);
  Binding parse_binding(bool in_dataflow, const std::unordered_set<std::string>* outputs, bool* is_branch_result,
                        const std::string* branch_var, Expr* branch_value, StructInfo* branch_ann);
  bool parse_nested_stmt(std::vector<Binding>* cur, const std::unordered_set<std::string>* outputs);
  void finish_if(const Expr& cond, std::vector<Binding>* cur, const std::unordered_set<std::string>* outputs);
  std::unordered_set<std::string> scan_outputs();

  StructInfo parse_sinfo();
  StructInfo parse_callable_sinfo(bool call);
  StructInfo parse_annotation();
  std::vector<PrimExpr> parse_shape_dims(const std::string& close);
  PrimExpr parse_prim();
  PrimExpr parse_prim_add();
  PrimExpr parse_prim_mul();
  PrimExpr parse_prim_unary();
  PrimExpr parse_prim_atom();
  PrimExpr parse_prim_string(const Token& t);

  Expr parse_rhs();
  Expr parse_expr();
  Expr parse_postfix(Expr e, const Token& start);
  Expr parse_primary();
  Expr parse_prim_value(const Token& start);
  Expr parse_r_expr(const Token& start);
  Expr parse_call_args(const Expr& callee, const Token& start);
  bool is_sinfo_args_keyword(const Token& t) const { return is_name(t, "sinfo_args") || is_name(t, "ty_args"); }
  void parse_sinfo_args(std::vector<StructInfo>& sinfo_args);
  void parse_call_operands(const Token& start, std::vector<Expr>& args, std::vector<StructInfo>& sinfo_args);
  Expr parse_op_call(const op::OpDef& def, const Token& start);
  Literal parse_literal();
  AttrValue literal_to_attr(const Literal& l, const Token& at);
  Expr make_const(const Literal& l, DataType dtype, const Token& at);
  DataType parse_dtype_literal();
  DataType dtype_from(const std::string& s, const Token& at);
  GlobalVar global(const std::string& name, const Token& at);

  // ---- virtual devices (I.module_global_infos, I.vdevice, R.to_vdevice, R.hint_on_device) ----
  void parse_module_dict(const Token& start, bool* seen, const std::string& statement,
                         const std::function<void(const Token&, const std::string&)>& entry);
  void parse_module_attrs(const Token& start, IRModule& mod);
  void parse_module_global_infos(const Token& start);
  VDevice parse_vdevice_decl();
  TargetDesc parse_target_literal();
  TargetAttrValue parse_target_value(const std::string& key);
  VDevice resolve_vdevice(const std::string& name, const Token& at);
  Expr parse_to_vdevice(const Token& start);
  Expr parse_hint_on_device(const Token& start);
  std::pair<int64_t, int64_t> parse_device();

  StructInfo deduce(const Expr& e, const Token& at);
  void set_sinfo(const Expr& e, const Token& at) {
    if (!e->struct_info_.defined()) e->struct_info_ = deduce(e, at);
  }
  // A Python keyword cannot name anything in TVMScript (the printed text would not parse back).
  static bool is_python_keyword(std::string_view n) {
    static const std::unordered_set<std::string_view> kw = {
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
        "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
        "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
        "yield"};
    return kw.count(n) > 0;
  }
  void check_not_keyword(const std::string& name, const Token& at, const char* what) {
    if (is_python_keyword(name)) fail_at(at, "'" + name + "' is a Python keyword and cannot name " + what);
  }
  Var make_var(const std::string& name, const StructInfo& s, bool dataflow) {
    check_not_keyword(name, peek(), "a variable");
    if (dataflow) return make<DataflowVarNode>(name, s);
    return make<VarNode>(name, s);
  }
  const op::OpDef* find_script_op(const std::string& dotted);

  std::string_view text_;
  std::string file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Scope> scopes_;
  std::unordered_map<std::string, GlobalVar> globals_;
  std::unordered_map<std::string, Token> global_refs_;  // first reference, for errors
  std::unordered_map<std::string, Expr> module_funcs_;
  std::vector<std::pair<Call, Token>> pending_global_calls_;  // calls of functions not parsed yet
  BlockBuilder bb_;  // its normalizer gives parsed expressions their struct info
  std::unordered_set<std::string> module_aliases_{"Module"};
  std::string module_name_ = "Module";
  bool in_signature_ = false;
  // The return annotation may use the parameters' symbolic variables but define none.
  bool in_return_annotation_ = false;
  std::vector<Tensor> metadata_;
  std::vector<Constant> metadata_nodes_;
  std::unordered_map<std::string, const op::OpDef*> script_ops_;
  /// Binding annotations already parsed in the current top-level function, by source text
  /// (most bindings repeat a few annotations; this keeps large modules fast to parse).
  std::unordered_map<std::string_view, StructInfo> annotation_cache_;
  /// The module's global infos (I.module_global_infos); vdevice names resolve against "vdevice".
  std::map<std::string, std::vector<GlobalInfo>> global_infos_;
  bool global_infos_seen_ = false;
  bool module_attrs_seen_ = false;
  const char* branch_suffix_ = "_then";  // of the if branch being parsed
};

// ---- metadata ----------------------------------------------------------------------------------

void Parser::read_metadata() {
  std::string_view header = detail::kMetadataHeader;
  size_t at = text_.find(header);
  if (at == std::string_view::npos) return;
  int line = 1;
  for (size_t k = 0; k < at; ++k) line += text_[k] == '\n';
  size_t i = text_.find('\n', at);
  while (i != std::string_view::npos && i < text_.size()) {
    ++i;
    ++line;
    size_t e = text_.find('\n', i);
    std::string_view l = text_.substr(i, e == std::string_view::npos ? std::string_view::npos : e - i);
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
    i = e;
    if (l.empty()) continue;
    auto bad = [&](const std::string& what) { detail::parse_error(file_, line, 1, "malformed metadata line: " + what); };
    if (l.substr(0, 3) != "# [") bad("expected '# [index] dtype (shape) base64'");
    size_t close = l.find(']');
    if (close == std::string_view::npos) bad("missing ']'");
    int64_t index = -1;
    auto r = std::from_chars(l.data() + 3, l.data() + close, index);
    if (r.ec != std::errc() || r.ptr != l.data() + close || index != int64_t(metadata_.size()))
      bad("constants must be numbered 0, 1, 2, ... in order");
    size_t sp = l.find(' ', close + 2);
    if (sp == std::string_view::npos || close + 2 >= l.size()) bad("missing dtype");
    std::string dt(l.substr(close + 2, sp - close - 2));
    if (!DataType::is_valid(dt) || dt.empty()) bad("unknown dtype '" + dt + "'");
    size_t lp = l.find('(', sp), rp = l.find(')', sp);
    if (lp == std::string_view::npos || rp == std::string_view::npos || rp < lp) bad("missing shape");
    std::vector<int64_t> shape;
    size_t p = lp + 1;
    while (p < rp) {
      while (p < rp && (l[p] == ' ' || l[p] == ',')) ++p;
      if (p >= rp) break;
      int64_t d = 0;
      auto rr = std::from_chars(l.data() + p, l.data() + rp, d);
      if (rr.ec != std::errc() || d < 0 || d > (int64_t(1) << 40)) bad("bad shape");
      shape.push_back(d);
      p = size_t(rr.ptr - l.data());
    }
    std::string_view b64 = rp + 2 <= l.size() ? l.substr(rp + 2) : std::string_view();
    std::vector<uint8_t> bytes;
    if (!detail::base64_decode(b64, &bytes)) bad("bad base64 data");
    DataType dtype = DataType::parse(dt);
    __int128 numel = 1;
    for (int64_t d : shape) {
      numel *= d;
      if (numel > (int64_t(1) << 40)) bad("tensor too large");
    }
    if (size_t(numel) * size_t(dtype.bytes()) != bytes.size())
      bad("data has " + std::to_string(bytes.size()) + " bytes, the shape needs " +
          std::to_string(size_t(numel) * size_t(dtype.bytes())));
    metadata_.push_back(Tensor::from_bytes(shape, dtype, bytes.data(), bytes.size()));
  }
  metadata_nodes_.resize(metadata_.size());
}

// ---- module and functions ---------------------------------------------------------------------

GlobalVar Parser::global(const std::string& name, const Token& at) {
  auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  global_refs_.emplace(name, at);
  return globals_.emplace(name, make<GlobalVarNode>(name)).first->second;
}

IRModule Parser::parse_module_text() {
  skip_newlines();
  while (skip_type_var_declaration()) skip_newlines();
  expect("@");
  if (!(is_name(peek(), "I") && is_punct(peek(1), ".") && is_name(peek(2), "ir_module")))
    expected("'I.ir_module'");
  next(), next(), next();
  expect_newline();
  expect_keyword("class");
  const Token& name_tok = peek();
  module_name_ = expect_name("the module's class name");
  module_aliases_ = {module_name_};
  (void)name_tok;
  expect(":");
  expect_newline();
  expect_kind(Tok::Indent, "an indented class body");
  IRModule mod = IRModule::create();
  std::vector<std::string> order;
  while (peek().kind != Tok::Dedent && peek().kind != Tok::End) {
    if (is_name(peek(), "pass")) {
      next();
      expect_newline();
      continue;
    }
    if (is_name(peek(), "I") && is_punct(peek(1), ".") && is_name(peek(2), "module_attrs")) {
      parse_module_attrs(peek(), mod);
      continue;
    }
    if (is_name(peek(), "I") && is_punct(peek(1), ".") && is_name(peek(2), "module_global_infos")) {
      parse_module_global_infos(peek());
      continue;
    }
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {  // name = R.ExternFunc("sym")
      const Token& t = peek();
      std::string name = expect_name();
      expect("=");
      Expr e = parse_expr();
      const auto* ext = e.as<ExternFuncNode>();
      if (!ext) fail_at(t, "expected R.ExternFunc(...) for module-level assignment '" + name + "'");
      expect_newline();
      if (module_funcs_.count(name)) fail_at(t, "function '" + name + "' is defined twice");
      module_funcs_[name] = e;
      global(name, t);
      continue;
    }
    const Token& start = peek();
    Decorator dec = parse_function_decorator();
    std::string name;
    Function f = parse_function_def(nullptr, true, dec, &name);
    if (module_funcs_.count(name)) fail_at(start, "function '" + name + "' is defined twice");
    module_funcs_[name] = f;
    global(name, start)->struct_info_ = f->struct_info_;  // later calls derive from it
  }
  if (peek().kind == Tok::Dedent) next();
  skip_newlines();
  if (peek().kind != Tok::End) expected("end of input after the module");
  for (const auto& [name, ref] : global_refs_)
    if (!module_funcs_.count(name)) fail_at(ref, "undefined function '" + name + "' in module " + module_name_);
  for (const auto& [name, f] : module_funcs_) globals_.at(name)->struct_info_ = f->struct_info_;
  for (auto& [call, tok] : pending_global_calls_) {
    call->struct_info_ = StructInfo();
    set_sinfo(call, tok);
  }
  for (const auto& [name, f] : module_funcs_) mod.add(globals_.at(name), f);
  for (auto& [name, infos] : global_infos_) mod.update_global_info(name, std::move(infos));
  return mod;
}

Function Parser::parse_function_text() {
  skip_newlines();
  Decorator dec = parse_function_decorator();
  std::string name;
  Function f = parse_function_def(nullptr, true, dec, &name);
  skip_newlines();
  if (peek().kind != Tok::End) expected("end of input after the function");
  if (!global_refs_.empty()) fail_at(global_refs_.begin()->second, "module functions cannot be referenced here");
  return f;
}

// `n = TypeVar("n")`: TVM 0.27 declares a symbolic variable that a function's signature
// introduces this way, before the function (at module level for top-level functions), and writes
// the signature with bare names. Bare names in a signature introduce variables anyway, so the
// declaration only has to be well formed.
bool Parser::skip_type_var_declaration() {
  if (!(peek().kind == Tok::Name && is_punct(peek(1), "=") && is_name(peek(2), "TypeVar") && is_punct(peek(3), "(")))
    return false;
  const Token& name = peek();
  pos_ += 4;
  const Token& st = expect_kind(Tok::String, "the variable's name as a string");
  if (detail::unquote(st, file_) != name.text) fail_at(st, "TypeVar(\"...\") must repeat the variable's name");
  expect(")");
  expect_newline();
  return true;
}

Parser::Decorator Parser::parse_function_decorator() {
  Decorator dec;
  expect("@");
  if (!(is_name(peek(), "R") && is_punct(peek(1), ".") && is_name(peek(2), "function"))) expected("'R.function'");
  next(), next(), next();
  if (accept("(")) {
    while (!is_punct(peek(), ")")) {
      const Token& k = peek();
      std::string key = expect_name("a decorator keyword");
      expect("=");
      bool v;
      if (is_name(peek(), "True")) v = true;
      else if (is_name(peek(), "False")) v = false;
      else expected("True or False");
      next();
      if (key == "private") dec.private_ = v;
      else if (key == "pure") dec.pure = v;
      else fail_at(k, "unknown R.function keyword '" + key + "' (expected private or pure)");
      if (!accept(",")) break;
    }
    expect(")");
  }
  expect_newline();
  return dec;
}

Function Parser::parse_function_def(const std::string* expected_name, bool top_level, const Decorator& dec,
                                    std::string* out_name) {
  const Token& def_tok = peek();
  expect_keyword("def");
  const Token& name_tok = peek();
  std::string name = expect_name("the function name");
  check_not_keyword(name, name_tok, "a function");
  if (expected_name && name != *expected_name) fail_at(def_tok, "function name mismatch");
  *out_name = name;
  // Annotations name this function's symbolic variables: a nested function's `n_1` is not the
  // `n_1` of the function parsed before it, so its annotations are parsed afresh.
  std::unordered_map<std::string_view, StructInfo> outer_annotations;
  outer_annotations.swap(annotation_cache_);
  scopes_.emplace_back();
  expect("(");
  std::vector<Var> params;
  in_signature_ = true;
  std::unordered_set<std::string> seen;
  while (!is_punct(peek(), ")")) {
    const Token& pt = peek();
    std::string pname = expect_name("a parameter name");
    if (!seen.insert(pname).second) fail_at(pt, "duplicate parameter '" + pname + "'");
    expect(":");
    StructInfo s = parse_sinfo();
    Var v = make_var(pname, s, false);
    params.push_back(v);
    if (!accept(",")) break;
  }
  expect(")");
  // A name the signature introduces is defined by a dimension that is that name alone (TVM's
  // well_formed defines only those); one that appears only inside an expression (`n * m`) is
  // defined nowhere (found by fuzz_parser).
  std::unordered_set<const Object*> defined;
  for (const Var& p : params)
    if (p->struct_info_)
      for (const PrimVar& v : definable_symbolic_vars_of(p->struct_info_)) defined.insert(v.get());
  for (const auto& [var_name, var] : scopes_.back().tir)
    if (!defined.count(var.get()))
      fail_at(def_tok, "symbolic variable '" + var_name + "' of function '" + name +
                           "' appears in its signature only inside an expression, which does not define it "
                           "(give it a dimension of its own, e.g. R.Tensor((\"" + var_name + "\",)))");
  StructInfo ret;
  if (accept("->")) {
    in_return_annotation_ = true;
    ret = parse_sinfo();
    in_return_annotation_ = false;
  }
  in_signature_ = false;
  // Parameters become visible only after the signature (annotations cannot refer to them).
  for (const Var& p : params) scopes_.back().vars[p->name_hint] = p;
  expect(":");
  expect_newline();
  const Token& body_tok = peek();
  expect_kind(Tok::Indent, "an indented function body");
  DictAttrs attrs;
  Expr body = parse_body(body_tok, nullptr, &attrs);
  scopes_.pop_back();
  annotation_cache_.swap(outer_annotations);
  if (!ret.defined()) ret = body->struct_info_.defined() ? body->struct_info_ : object_sinfo();
  if (top_level && !dec.private_) {
    auto it = attrs.find("global_symbol");
    if (it == attrs.end()) attrs["global_symbol"] = name;
  }
  Function f = make<FunctionNode>(params, body, ret, dec.pure, attrs);
  std::vector<StructInfo> ps;
  for (const Var& p : params) ps.push_back(p->struct_info_);
  f->struct_info_ = make<FuncStructInfoNode>(ps, ret, dec.pure);
  return f;
}

Expr Parser::parse_body(const Token& start, std::vector<std::string>*, DictAttrs* attrs) {
  scopes_.emplace_back();
  std::vector<BindingBlock> blocks;
  std::vector<Binding> cur;
  Expr ret;
  const Token* ret_tok = nullptr;
  parse_block_stmts(&blocks, &cur, &ret, true, nullptr, nullptr, attrs, &ret_tok);
  if (!cur.empty()) blocks.push_back(make<BindingBlockNode>(std::move(cur), false));
  scopes_.pop_back();
  if (!ret.defined()) fail_at(start, "function body has no return statement");
  SeqExpr seq = make<SeqExprNode>(std::move(blocks), ret);
  seq->struct_info_ = ret->struct_info_;
  return seq;
}

std::unordered_set<std::string> Parser::scan_outputs() {
  // Looks ahead (without consuming) for `R.output(a, b)` at the top level of the block.
  std::unordered_set<std::string> out;
  int depth = 0;
  bool line_start = true;
  for (size_t k = pos_; k < toks_.size(); ++k) {
    const Token& t = toks_[k];
    if (t.kind == Tok::Indent) { ++depth; continue; }
    if (t.kind == Tok::Dedent) {
      if (--depth < 0) break;
      continue;
    }
    if (t.kind == Tok::End) break;
    if (t.kind == Tok::Newline) { line_start = true; continue; }
    if (line_start && depth == 0 && is_name(t, "R") && k + 3 < toks_.size() && is_punct(toks_[k + 1], ".") &&
        is_name(toks_[k + 2], "output") && is_punct(toks_[k + 3], "(")) {
      for (size_t j = k + 4; j < toks_.size() && !is_punct(toks_[j], ")"); ++j)
        if (toks_[j].kind == Tok::Name) out.insert(std::string(toks_[j].text));
    }
    line_start = false;
  }
  return out;
}

void Parser::parse_block_stmts(std::vector<BindingBlock>* blocks, std::vector<Binding>* cur, Expr* ret,
                               bool in_function, const std::string* branch_var, StructInfo* branch_ann,
                               DictAttrs* attrs, const Token** ret_tok) {
  bool done = false;
  while (peek().kind != Tok::Dedent && peek().kind != Tok::End) {
    const Token& t = peek();
    if (done) fail_at(t, "statements after the end of the block");
    if (is_name(t, "return")) {
      if (!in_function) fail_at(t, "'return' is not allowed inside an if branch");
      next();
      *ret_tok = &t;
      Expr e = parse_rhs();
      set_sinfo(e, t);
      *ret = e;
      expect_newline();
      done = true;
      continue;
    }
    if (parse_nested_stmt(cur, nullptr)) continue;
    if (is_name(t, "with")) {
      next();
      if (!(is_name(peek(), "R") && is_punct(peek(1), ".") && is_name(peek(2), "dataflow"))) expected("'R.dataflow'");
      next(), next(), next();
      expect("(");
      expect(")");
      expect(":");
      expect_newline();
      expect_kind(Tok::Indent, "an indented dataflow block");
      if (!cur->empty()) blocks->push_back(make<BindingBlockNode>(std::move(*cur), false));
      cur->clear();
      std::vector<Binding> df;
      parse_dataflow(&df);
      blocks->push_back(make<BindingBlockNode>(std::move(df), true));
      continue;
    }
    if (is_name(t, "R") && is_punct(peek(1), ".") && is_name(peek(2), "func_attr")) {
      if (!attrs) fail_at(t, "R.func_attr is only allowed at the top of a function body");
      next(), next(), next();
      expect("(");
      expect("{");
      while (!is_punct(peek(), "}")) {
        const Token& kt = peek();
        if (kt.kind != Tok::String) expected("a string key");
        next();
        std::string key = detail::unquote(kt, file_);
        expect(":");
        const Token& vt = peek();
        Literal l = parse_literal();
        (*attrs)[key] = literal_to_attr(l, vt);
        if (!accept(",")) break;
      }
      expect("}");
      expect(")");
      expect_newline();
      continue;
    }
    if (t.kind == Tok::Name && is_punct(peek(1), "=") && !is_name(t, "R") && !is_name(t, "T")) {
      // `n = T.int64()` and `cls = Module` are declarations, not bindings.
      const Token& v = peek(2);
      if (is_name(v, "T") && is_punct(peek(3), ".") && peek(4).kind == Tok::Name && is_punct(peek(5), "(") &&
          is_punct(peek(6), ")")) {
        std::string name(t.text);
        check_not_keyword(name, t, "a symbolic variable");
        DataType dt = dtype_from(std::string(peek(4).text), peek(4));
        if (!dt.is_int()) fail_at(peek(4), "symbolic variables must have an integer dtype");
        pos_ += 7;
        expect_newline();
        // The function scope (below the body scope) owns symbolic variables. The declaration
        // of a variable the signature introduced names that variable; any other declares a new
        // one of this function, shadowing an outer function's variable of the same name.
        Scope& fs = scopes_.size() >= 2 ? scopes_[scopes_.size() - 2] : scopes_.back();
        auto known = fs.tir.find(name);
        if (known == fs.tir.end()) fs.tir[name] = make<PrimVarNode>(name, dt);
        else if (known->second->dtype != dt)
          fail_at(t, "symbolic variable '" + name + "' is declared " + dt.str() + " but the signature uses it as " +
                         known->second->dtype.str());
        continue;
      }
      if (skip_type_var_declaration()) continue;
      if (v.kind == Tok::Name && module_aliases_.count(std::string(v.text)) && peek(3).kind == Tok::Newline) {
        module_aliases_.insert(std::string(t.text));
        pos_ += 4;
        continue;
      }
    }
    bool is_result = false;
    Expr branch_value;
    Binding b = parse_binding(false, nullptr, &is_result, branch_var, &branch_value, branch_ann);
    if (is_result) {
      // As TVM's parser: a branch ends in a leaf; a call or other value assigned last is bound
      // first to `<var>_then` / `<var>_else`.
      if (!is_leaf_or_tuple(branch_value)) {
        Var v = make_var(*branch_var + branch_suffix_, branch_value->struct_info_, false);
        cur->push_back(make<VarBindingNode>(v, branch_value));
        branch_value = v;
      }
      *ret = branch_value;
      done = true;
      continue;
    }
    cur->push_back(b);
    scopes_.back().vars[b->var->name_hint] = b->var;
  }
  if (peek().kind == Tok::Dedent) next();
}

// The statements that nest a body, in a plain block or a dataflow block (`outputs` given): an
// if/else binding its variable, and a local function bound to its name. False when the next
// statement is neither.
bool Parser::parse_nested_stmt(std::vector<Binding>* cur, const std::unordered_set<std::string>* outputs) {
  const Token& t = peek();
  if (is_name(t, "if")) {
    next();
    Expr cond = parse_expr();
    set_sinfo(cond, t);
    expect(":");
    expect_newline();
    // The variable assigned at the end of both branches; its name is found by the branch parser.
    finish_if(cond, cur, outputs);
    return true;
  }
  if (!is_punct(t, "@")) return false;
  Decorator dec = parse_function_decorator();
  if (dec.private_) fail_at(t, "local functions cannot be private");
  std::string name;
  Function f = parse_function_def(nullptr, false, dec, &name);
  Var v = make_var(name, f->struct_info_, outputs && !outputs->count(name));
  cur->push_back(make<VarBindingNode>(v, f));
  scopes_.back().vars[name] = v;
  return true;
}

void Parser::finish_if(const Expr& cond, std::vector<Binding>* cur, const std::unordered_set<std::string>* outputs) {
  std::string var_name;
  StructInfo ann;
  Expr branches[2];
  const char* outer_suffix = branch_suffix_;  // an if nested in a branch of another
  for (int br = 0; br < 2; ++br) {
    if (br == 1) {
      if (!is_name(peek(), "else")) expected("'else' (an if needs both branches)");
      next();
      expect(":");
      expect_newline();
    }
    const Token& bt = peek();
    expect_kind(Tok::Indent, "an indented branch");
    scopes_.emplace_back();
    std::vector<BindingBlock> blocks;
    std::vector<Binding> bcur;
    Expr result;
    // The last statement `v: ann = expr` names the if's variable; find it by scanning ahead.
    std::string branch_var;
    {
      int depth = 0;
      size_t last_stmt = pos_;
      bool ls = true;
      for (size_t k = pos_; k < toks_.size(); ++k) {
        const Token& t = toks_[k];
        if (t.kind == Tok::Indent) { ++depth; continue; }
        if (t.kind == Tok::Dedent) { if (--depth < 0) break; continue; }
        if (t.kind == Tok::End) break;
        if (t.kind == Tok::Newline) { ls = true; continue; }
        if (ls && depth == 0) last_stmt = k;
        ls = false;
      }
      if (toks_[last_stmt].kind == Tok::Name) branch_var = std::string(toks_[last_stmt].text);
    }
    if (br == 1 && branch_var != var_name)
      fail_at(bt, "both branches of an if must end by assigning '" + var_name + "'");
    StructInfo bann;
    branch_suffix_ = br == 0 ? "_then" : "_else";
    parse_block_stmts(&blocks, &bcur, &result, false, &branch_var, &bann, nullptr, nullptr);
    if (!bcur.empty()) blocks.push_back(make<BindingBlockNode>(std::move(bcur), false));
    scopes_.pop_back();
    if (!result.defined()) fail_at(bt, "an if branch must end with an assignment to the if's variable");
    SeqExpr seq = make<SeqExprNode>(std::move(blocks), result);
    seq->struct_info_ = result->struct_info_;
    branches[br] = seq;
    if (br == 0) {
      var_name = branch_var;
      ann = bann;
    }
  }
  branch_suffix_ = outer_suffix;
  If node = make<IfNode>(cond, branches[0], branches[1]);
  StructInfo s = ann.defined() ? ann : branches[0]->struct_info_;
  node->struct_info_ = s;
  Var v = make_var(var_name, s, outputs && !outputs->count(var_name));
  cur->push_back(make<VarBindingNode>(v, node));
  scopes_.back().vars[var_name] = v;
}

void Parser::parse_dataflow(std::vector<Binding>* out) {
  std::unordered_set<std::string> outputs = scan_outputs();
  const size_t first = out->size();
  bool saw_output = false;
  while (peek().kind != Tok::Dedent && peek().kind != Tok::End) {
    const Token& t = peek();
    if (saw_output) fail_at(t, "R.output(...) must be the last statement of a dataflow block");
    if (is_name(t, "R") && is_punct(peek(1), ".") && is_name(peek(2), "output")) {
      next(), next(), next();
      expect("(");
      while (!is_punct(peek(), ")")) {
        const Token& nt = peek();
        std::string n = expect_name("a variable name");
        Expr* v = lookup_var(n);
        if (!v) fail_at(nt, "R.output names undefined variable '" + n + "'");
        if (!accept(",")) break;
      }
      expect(")");
      expect_newline();
      saw_output = true;
      continue;
    }
    if (parse_nested_stmt(out, &outputs) || skip_type_var_declaration()) continue;
    bool is_result = false;
    Binding b = parse_binding(true, &outputs, &is_result, nullptr, nullptr, nullptr);
    out->push_back(b);
    scopes_.back().vars[b->var->name_hint] = b->var;
  }
  if (!saw_output) fail_at(peek(), "a dataflow block must end with R.output(...)");
  if (peek().kind == Tok::Dedent) next();
  // The block's dataflow variables (those R.output does not name) end with it: a later use is
  // an undefined variable, not an ill-formed module (found by fuzz_parser).
  for (size_t k = first; k < out->size(); ++k) {
    const Var& v = (*out)[k]->var;
    if (!v || !v.as<DataflowVarNode>()) continue;
    auto it = scopes_.back().vars.find(v->name_hint);
    if (it != scopes_.back().vars.end() && it->second.get() == v.get()) scopes_.back().vars.erase(it);
  }
}

Binding Parser::parse_binding(bool in_dataflow, const std::unordered_set<std::string>* outputs, bool* is_result,
                              const std::string* branch_var, Expr* branch_value, StructInfo* branch_ann) {
  const Token& t = peek();
  if (t.kind != Tok::Name) expected("a statement");
  std::string name(t.text);
  if (!is_punct(peek(1), ":") && !is_punct(peek(1), "=")) {
    next();
    expected("':' or '=' after '" + name + "'");
  }
  next();
  StructInfo ann;
  if (accept(":")) ann = parse_annotation();
  expect("=");
  const Token& rt = peek();
  bool is_match_cast = is_name(rt, "R") && is_punct(peek(1), ".") && is_name(peek(2), "match_cast");
  Expr value;
  StructInfo cast_sinfo;
  if (is_match_cast) {
    next(), next(), next();
    expect("(");
    value = parse_expr();
    set_sinfo(value, rt);
    expect(",");
    cast_sinfo = parse_sinfo();
    expect(")");
  } else {
    value = parse_rhs();
    set_sinfo(value, rt);
  }
  expect_newline();
  // The last assignment of an if branch is the branch's result, not a binding.
  if (branch_var && name == *branch_var && (peek().kind == Tok::Dedent || peek().kind == Tok::End) &&
      !is_match_cast) {
    *is_result = true;
    *branch_value = value;
    *branch_ann = ann;
    return {};
  }
  StructInfo s = is_match_cast ? cast_sinfo : (ann.defined() ? ann : value->struct_info_);
  if (!s.defined()) s = object_sinfo();
  bool df = in_dataflow && outputs && !outputs->count(name);
  Var v = make_var(name, s, df);
  if (is_match_cast) return make<MatchCastNode>(v, value, cast_sinfo);
  return make<VarBindingNode>(v, value);
}

// ---- struct info and symbolic shapes ------------------------------------------------------------

StructInfo Parser::parse_annotation() {
  // The annotation ends at the `=` at bracket depth 0 (brackets are balanced by the lexer).
  size_t end = pos_;
  int depth = 0;
  for (; end < toks_.size(); ++end) {
    const Token& t = toks_[end];
    if (t.kind == Tok::Newline || t.kind == Tok::End) return parse_sinfo();
    if (t.kind != Tok::Punct) continue;
    char c = t.text[0];
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (depth == 0 && t.text == "=") break;
  }
  if (end == pos_ || end >= toks_.size()) return parse_sinfo();
  const Token& first = toks_[pos_];
  const Token& last = toks_[end - 1];
  std::string_view key(first.text.data(), size_t(last.text.data() + last.text.size() - first.text.data()));
  auto it = annotation_cache_.find(key);
  if (it != annotation_cache_.end()) {
    pos_ = end;
    return it->second;
  }
  StructInfo s = parse_sinfo();
  if (pos_ == end) annotation_cache_.emplace(key, s);
  return s;
}

DataType Parser::dtype_from(const std::string& s, const Token& at) {
  if (s == "void") return DataType::Void();
  if (!DataType::is_valid(s) || s.empty()) fail_at(at, "unknown dtype \"" + s + "\"");
  return DataType::parse(s);
}

DataType Parser::parse_dtype_literal() {
  const Token& t = peek();
  if (is_name(t, "None")) {
    next();
    return DataType::Void();
  }
  if (t.kind != Tok::String) expected("a dtype string");
  next();
  return dtype_from(detail::unquote(t, file_), t);
}

StructInfo Parser::parse_sinfo() {
  DepthGuard guard(this);
  const Token& t = peek();
  // TVM's short form of R.Prim("dtype"): a bare T.<dtype> (`s: T.float32`).
  if (is_name(t, "T") && is_punct(peek(1), ".") && peek(2).kind == Tok::Name && !is_punct(peek(3), "(")) {
    next(), next();
    const Token& dt = next();
    return prim_sinfo(dtype_from(std::string(dt.text), dt));
  }
  // TVM 0.27 annotates a string (R.str) as I.StringType(), which Partita's IR has as R.Object.
  if (is_name(t, "I") && is_punct(peek(1), ".") && is_name(peek(2), "StringType") && is_punct(peek(3), "(") &&
      is_punct(peek(4), ")")) {
    pos_ += 5;
    return object_sinfo();
  }
  if (!(is_name(t, "R") && is_punct(peek(1), ".")))
    expected("struct info (R.Tensor, R.Tuple, R.Prim, T.<dtype>, ...)");
  next(), next();
  const Token& kt = peek();
  std::string kind = expect_name("a struct info kind");
  bool call = is_punct(peek(), "(");
  if (kind == "Object" || kind == "Any") {  // R.Any: TVM >= 0.26's name of R.Object
    if (call) fail_at(peek(), "R." + kind + " takes no arguments");
    return object_sinfo();
  }
  if (kind == "Tensor") {
    if (!call) return tensor_sinfo_ndim(DataType::Void(), -1);
    next();
    std::optional<std::vector<PrimExpr>> shape;
    DataType dtype;
    int ndim = -1;
    VDevice vdevice;
    bool positional = true;
    int index = 0;
    while (!is_punct(peek(), ")")) {
      if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
        positional = false;
        const Token& key_tok = peek();
        std::string key = expect_name();
        expect("=");
        if (key == "dtype") dtype = parse_dtype_literal();
        else if (key == "ndim") {
          bool neg = accept("-");
          const Token& it = expect_kind(Tok::Int, "an integer ndim");
          int64_t v = 0;
          std::from_chars(it.text.data(), it.text.data() + it.text.size(), v);
          if (v > 64) fail_at(it, "ndim too large");
          ndim = int(neg ? -v : v);
        } else if (key == "shape") {
          if (accept("(")) shape = parse_shape_dims(")");
          else if (accept("[")) shape = parse_shape_dims("]");
          else expected("a shape tuple");
        } else if (key == "vdevice") {
          const Token& vt = expect_kind(Tok::String, "a vdevice name such as \"cuda:0\"");
          vdevice = resolve_vdevice(detail::unquote(vt, file_), vt);
        } else {
          fail_at(key_tok, "unknown R.Tensor keyword '" + key + "' (expected shape, dtype, vdevice or ndim)");
        }
      } else {
        if (!positional) expected("a keyword argument");
        // TVM's signature: R.Tensor(shape, dtype, vdevice, ndim); a leading string is the dtype.
        if (index == 0 && accept("(")) shape = parse_shape_dims(")");
        else if (index == 0 && accept("[")) shape = parse_shape_dims("]");
        else if (index <= 1 && (peek().kind == Tok::String || is_name(peek(), "None"))) dtype = parse_dtype_literal();
        else if (index == 2 && peek().kind == Tok::String) {
          const Token& vt = next();
          vdevice = resolve_vdevice(detail::unquote(vt, file_), vt);
        } else if (index == 2 && is_name(peek(), "None")) next();
        else if (index == 3 && (peek().kind == Tok::Int || is_punct(peek(), "-"))) {
          bool neg = accept("-");
          const Token& it = expect_kind(Tok::Int, "an integer ndim");
          int64_t v = 0;
          std::from_chars(it.text.data(), it.text.data() + it.text.size(), v);
          if (v > 64) fail_at(it, "ndim too large");
          ndim = int(neg ? -v : v);
        } else expected(index == 2 ? "a vdevice name" : index == 3 ? "an integer ndim" : "a shape tuple or a dtype");
        ++index;
      }
      if (!accept(",")) break;
    }
    expect(")");
    if (shape) {
      if (ndim >= 0 && ndim != int(shape->size())) fail_at(kt, "ndim does not match the shape's length");
      return make<TensorStructInfoNode>(std::move(*shape), dtype, std::move(vdevice));
    }
    if (ndim < -1) fail_at(kt, "ndim must be -1 or more");
    return make<TensorStructInfoNode>(dtype, ndim, std::move(vdevice));
  }
  if (kind == "Tuple") {
    std::vector<StructInfo> fields;
    if (call) {
      next();
      // TVM also accepts the fields as one list: R.Tuple([R.Tensor(...), ...]).
      bool list = accept("[");
      while (!is_punct(peek(), list ? "]" : ")")) {
        fields.push_back(parse_sinfo());
        if (!accept(",")) break;
      }
      if (list) expect("]");
      expect(")");
    }
    return tuple_sinfo(std::move(fields));
  }
  if (kind == "Shape") {
    if (!call) return make<ShapeStructInfoNode>(-1);
    next();
    StructInfo r;
    if (accept("[")) {
      r = shape_sinfo(parse_shape_dims("]"));
    } else if (accept("(")) {
      r = shape_sinfo(parse_shape_dims(")"));
    } else if (is_name(peek(), "ndim")) {
      next();
      expect("=");
      bool neg = accept("-");
      const Token& it = expect_kind(Tok::Int, "an integer ndim");
      int64_t v = 0;
      std::from_chars(it.text.data(), it.text.data() + it.text.size(), v);
      if (v > 64) fail_at(it, "ndim too large");
      r = make<ShapeStructInfoNode>(int(neg ? -v : v));
    } else {
      r = make<ShapeStructInfoNode>(-1);
    }
    expect(")");
    return r;
  }
  if (kind == "Prim") {
    if (!call) expected("'(' after R.Prim");
    next();
    StructInfo r;
    if (is_name(peek(), "value")) {
      next();
      expect("=");
      PrimExpr v = parse_prim();
      r = prim_sinfo(v->dtype, v);
    } else {
      if (is_name(peek(), "dtype")) {
        next();
        expect("=");
      }
      r = prim_sinfo(parse_dtype_literal());
    }
    expect(")");
    return r;
  }
  if (kind == "Callable") return parse_callable_sinfo(call);
  fail_at(kt, "unknown struct info 'R." + kind + "' (expected Tensor, Tuple, Shape, Prim, Object or Callable)");
}

// R.Callable, R.Callable((params), ret), R.Callable((params), ret, purity) with the purity a
// positional bool (TVM >= 0.26 prints it) or `purity=`, and R.Callable(ret=..., purity=...) for
// an opaque function. Without a purity, as in TVM: pure with parameters, impure when opaque.
StructInfo Parser::parse_callable_sinfo(bool call) {
  if (!call) return make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
  next();
  std::optional<bool> purity;
  std::optional<std::vector<StructInfo>> params;
  StructInfo ret;
  auto read_bool = [&]() {
    if (!is_name(peek(), "True") && !is_name(peek(), "False")) expected("True or False");
    return is_name(next(), "True");
  };
  size_t index = 0;
  while (!is_punct(peek(), ")")) {
    const Token& at = peek();
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      std::string key = expect_name();
      expect("=");
      if (key == "purity" && !purity) purity = read_bool();
      else if (key == "ret" && !ret.defined()) ret = parse_sinfo();
      else fail_at(at, "R.Callable: unexpected keyword '" + key + "' (takes params, ret, purity)");
    } else if (index == 0 && is_punct(peek(), "(")) {
      next();
      params.emplace();
      while (!is_punct(peek(), ")")) {
        params->push_back(parse_sinfo());
        if (!accept(",")) break;
      }
      expect(")");
      ++index;
    } else if (index == 1 && !ret.defined()) {
      ret = parse_sinfo();
      ++index;
    } else if (index == 2 && !purity) {
      purity = read_bool();
      ++index;
    } else {
      expected(index == 0 ? "the parameters' struct info as a tuple" : "')'");
    }
    if (!accept(",")) break;
  }
  expect(")");
  if (params && !ret.defined()) fail_at(peek(), "R.Callable with parameters needs a return struct info");
  const bool pure = purity.value_or(params.has_value());
  return make<FuncStructInfoNode>(std::move(params), ret.defined() ? ret : object_sinfo(), pure);
}

std::vector<PrimExpr> Parser::parse_shape_dims(const std::string& close) {
  std::vector<PrimExpr> dims;
  while (!is_punct(peek(), close)) {
    dims.push_back(parse_prim());
    if (!accept(",")) break;
  }
  expect(close);
  return dims;
}

PrimExpr Parser::parse_prim() {
  DepthGuard guard(this);
  return parse_prim_add();
}

PrimExpr Parser::parse_prim_add() {
  PrimExpr a = parse_prim_mul();
  while (is_punct(peek(), "+") || is_punct(peek(), "-")) {
    PrimOp op = peek().text == "+" ? PrimOp::Add : PrimOp::Sub;
    next();
    PrimExpr b = parse_prim_mul();
    a = make<PrimBinaryNode>(op, a, b);
  }
  return a;
}

PrimExpr Parser::parse_prim_mul() {
  PrimExpr a = parse_prim_unary();
  while (is_punct(peek(), "*") || is_punct(peek(), "//") || is_punct(peek(), "%")) {
    PrimOp op = peek().text == "*" ? PrimOp::Mul : peek().text == "//" ? PrimOp::FloorDiv : PrimOp::FloorMod;
    next();
    PrimExpr b = parse_prim_unary();
    a = make<PrimBinaryNode>(op, a, b);
  }
  return a;
}

PrimExpr Parser::parse_prim_unary() {
  if (is_punct(peek(), "-") && peek(1).kind == Tok::Int) {
    next();
    const Token& t = next();
    int64_t v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc()) fail_at(t, "integer out of range");
    return make<IntImmNode>(-v);
  }
  if (is_punct(peek(), "-")) {
    DepthGuard guard(this);
    next();
    PrimExpr a = parse_prim_unary();
    return make<PrimBinaryNode>(PrimOp::Sub, make<IntImmNode>(0, a->dtype), a);
  }
  return parse_prim_atom();
}

PrimExpr Parser::parse_prim_string(const Token& t) {
  // A stringified shape expression ("n + 1"): parse its contents with a nested parser.
  std::string s = detail::unquote(t, file_);
  std::vector<Token> saved = std::move(toks_);
  size_t saved_pos = pos_;
  PrimExpr e;
  try {
    toks_ = detail::tokenize(s, file_);
    for (Token& k : toks_) {  // report positions at the string literal
      k.line = t.line;
      k.column = t.column;
    }
    pos_ = 0;
    e = parse_prim();
    if (peek().kind != Tok::Newline && peek().kind != Tok::End) expected("end of the shape expression");
  } catch (...) {
    toks_ = std::move(saved);
    pos_ = saved_pos;
    throw;
  }
  toks_ = std::move(saved);
  pos_ = saved_pos;
  return e;
}

PrimExpr Parser::parse_prim_atom() {
  const Token& t = peek();
  if (t.kind == Tok::Int) {
    next();
    int64_t v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc()) fail_at(t, "integer out of range");
    return make<IntImmNode>(v);
  }
  if (t.kind == Tok::String) {
    next();
    return parse_prim_string(t);
  }
  if (accept("(")) {
    PrimExpr e = parse_prim();
    expect(")");
    return e;
  }
  if (is_name(t, "T") && is_punct(peek(1), ".")) {
    next(), next();
    const Token& ft = peek();
    std::string fn = expect_name("a T function");
    expect("(");
    if (fn == "min" || fn == "max") {
      PrimExpr a = parse_prim();
      expect(",");
      PrimExpr b = parse_prim();
      expect(")");
      return make<PrimBinaryNode>(fn == "min" ? PrimOp::Min : PrimOp::Max, a, b);
    }
    DataType dt = dtype_from(fn, ft);
    bool neg = accept("-");
    const Token& vt = peek();
    PrimExpr r;
    if (vt.kind == Tok::Int && dt.is_int()) {
      next();
      int64_t v = 0;
      auto rr = std::from_chars(vt.text.data(), vt.text.data() + vt.text.size(), v);
      if (rr.ec != std::errc()) fail_at(vt, "integer out of range");
      r = make<IntImmNode>(neg ? -v : v, dt);
    } else if ((vt.kind == Tok::Float || vt.kind == Tok::Int) && dt.is_float()) {
      next();
      double v = std::strtod(std::string(vt.text).c_str(), nullptr);
      r = make<FloatImmNode>(neg ? -v : v, dt);
    } else if (vt.kind == Tok::String && dt.is_float()) {
      next();
      std::string s = detail::unquote(vt, file_);
      double v = s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : s == "nan" ? NAN : std::strtod(s.c_str(), nullptr);
      r = make<FloatImmNode>(neg ? -v : v, dt);
    } else if ((is_name(vt, "True") || is_name(vt, "False")) && dt.is_bool()) {
      next();
      r = make<IntImmNode>(is_name(vt, "True") ? 1 : 0, dt);
    } else {
      expected("a " + fn + " literal");
    }
    expect(")");
    return r;
  }
  if (is_name(t, "True") || is_name(t, "False")) {
    next();
    return make<IntImmNode>(is_name(t, "True") ? 1 : 0, DataType::Bool());
  }
  if (t.kind == Tok::Name) {
    next();
    std::string name(t.text);
    PrimVar v = lookup_tir(name);
    if (v.defined()) return v;
    if (in_return_annotation_)
      fail_at(t, "symbolic variable '" + name +
                     "' in the return annotation is not defined by any parameter's annotation");
    if (in_signature_) {
      // A symbolic variable introduced by the signature; it belongs to the function's scope.
      check_not_keyword(name, t, "a symbolic variable");
      PrimVar nv = make<PrimVarNode>(name);
      scopes_.back().tir[name] = nv;
      return nv;
    }
    fail_at(t, "undefined symbolic variable '" + name + "' (declare it with " + name + " = T.int64())");
  }
  expected("a shape dimension");
}

// ---- expressions ------------------------------------------------------------------------------

Expr Parser::parse_rhs() {
  const Token& t = peek();
  Expr first = parse_expr();
  if (!is_punct(peek(), ",")) return first;
  std::vector<Expr> fields{first};
  while (accept(",")) {
    if (peek().kind == Tok::Newline) break;
    fields.push_back(parse_expr());
  }
  // A bare tuple's fields are leaves, as in the normalized form (found by fuzz_parser: a
  // trailing comma after a call made a tuple of a call).
  for (const Expr& f : fields)
    if (f && !is_leaf_or_tuple(f)) fail_at(t, "a tuple's fields must be variables, constants or tuples (bind the call first)");
  Expr tup = make<TupleNode>(std::move(fields));
  set_sinfo(tup, t);
  return tup;
}

Expr Parser::parse_expr() {
  DepthGuard guard(this);
  const Token& t = peek();
  Expr e = parse_primary();
  return parse_postfix(e, t);
}

Expr Parser::parse_postfix(Expr e, const Token& start) {
  while (true) {
    if (is_punct(peek(), "[")) {
      const Token& bt = next();
      const Token& it = expect_kind(Tok::Int, "a tuple index");
      int64_t idx = 0;
      auto r = std::from_chars(it.text.data(), it.text.data() + it.text.size(), idx);
      if (r.ec != std::errc() || idx > (1 << 30)) fail_at(it, "tuple index out of range");
      expect("]");
      set_sinfo(e, start);
      Expr g = make<TupleGetItemNode>(e, int(idx));
      set_sinfo(g, bt);
      e = g;
    } else if (is_punct(peek(), "(")) {
      if (!e.as<VarNode>() && !e.as<GlobalVarNode>() && !e.as<ExternFuncNode>())
        fail_at(peek(), "only functions can be called");
      e = parse_call_args(e, start);
    } else {
      return e;
    }
  }
}

// `sinfo_args=` (TVM >= 0.26 writes `ty_args=`): one struct info or a tuple of them.
void Parser::parse_sinfo_args(std::vector<StructInfo>& sinfo_args) {
  if (!accept("(")) {
    sinfo_args.push_back(parse_sinfo());
    return;
  }
  while (!is_punct(peek(), ")")) {
    sinfo_args.push_back(parse_sinfo());
    if (!accept(",")) break;
  }
  expect(")");
}

// Call operands up to the closing ')': arguments, and `sinfo_args=` one struct info or a tuple.
void Parser::parse_call_operands(const Token& start, std::vector<Expr>& args, std::vector<StructInfo>& sinfo_args) {
  while (!is_punct(peek(), ")")) {
    if (is_sinfo_args_keyword(peek()) && is_punct(peek(1), "=")) {
      next(), next();
      parse_sinfo_args(sinfo_args);
    } else {
      Expr a = parse_expr();
      set_sinfo(a, start);
      args.push_back(a);
    }
    if (!accept(",")) break;
  }
}

Expr Parser::parse_call_args(const Expr& callee, const Token& start) {
  expect("(");
  std::vector<Expr> args;
  std::vector<StructInfo> sinfo_args;
  parse_call_operands(start, args, sinfo_args);
  expect(")");
  Call c = make<CallNode>(callee, std::move(args), Attrs(), std::move(sinfo_args));
  if (callee.as<GlobalVarNode>() && !module_funcs_.count(callee.as<GlobalVarNode>()->name_hint)) {
    pending_global_calls_.emplace_back(c, start);
    c->struct_info_ = object_sinfo();  // replaced once the callee is parsed
  } else {
    set_sinfo(c, start);
  }
  return c;
}

const op::OpDef* Parser::find_script_op(const std::string& dotted) {
  if (script_ops_.empty()) {
    for (const std::string& n : op::list_ops()) {
      const op::OpDef* d = op::find_op_def(n);
      if (d && d->script_name.rfind("R.", 0) == 0) script_ops_[d->script_name.substr(2)] = d;
    }
  }
  auto it = script_ops_.find(dotted);
  return it == script_ops_.end() ? nullptr : it->second;
}

Expr Parser::parse_primary() {
  const Token& t = peek();
  switch (t.kind) {
    case Tok::Int: return parse_prim_value(t);
    case Tok::Punct: {
      if (is_punct(t, "-") && peek(1).kind == Tok::Int) return parse_prim_value(t);
      if (is_punct(t, "[")) {  // a Python list where an expression goes is a tuple, as in TVM
        next();
        std::vector<Expr> fields;
        while (!is_punct(peek(), "]")) {
          fields.push_back(parse_expr());
          if (!accept(",")) break;
        }
        expect("]");
        Expr e = make<TupleNode>(std::move(fields));
        set_sinfo(e, t);
        return e;
      }
      if (is_punct(t, "(")) {
        next();
        std::vector<Expr> fields;
        bool trailing_comma = false;
        while (!is_punct(peek(), ")")) {
          fields.push_back(parse_expr());
          trailing_comma = false;
          if (!accept(",")) break;
          trailing_comma = true;
        }
        expect(")");
        if (fields.size() == 1 && !trailing_comma) return fields[0];
        if (fields.empty()) fail_at(t, "an empty tuple is written R.tuple()");
        Expr e = make<TupleNode>(std::move(fields));
        set_sinfo(e, t);
        return e;
      }
      break;
    }
    case Tok::Name: {
      std::string name(t.text);
      if (name == "R" && is_punct(peek(1), ".")) return parse_r_expr(t);
      // A primitive value in any argument position, as TVM prints one: T.float64(-1.0),
      // T.int64(3), True, a symbolic variable or an expression of them (n * 2).
      if ((name == "T" && is_punct(peek(1), ".")) || name == "True" || name == "False" ||
          (!lookup_var(name) && lookup_tir(name).defined()))
        return parse_prim_value(t);
      if (name == "metadata" && is_punct(peek(1), "[")) {
        next(), next();
        const Token& kt = expect_kind(Tok::String, "\"relax.expr.Constant\"");
        if (detail::unquote(kt, file_) != "relax.expr.Constant")
          fail_at(kt, "only metadata[\"relax.expr.Constant\"] is supported");
        expect("]");
        expect("[");
        const Token& it = expect_kind(Tok::Int, "a metadata index");
        int64_t idx = -1;
        std::from_chars(it.text.data(), it.text.data() + it.text.size(), idx);
        expect("]");
        if (idx < 0 || idx >= int64_t(metadata_.size()))
          fail_at(it, "metadata index " + std::string(it.text) + " out of range (the metadata section has " +
                          std::to_string(metadata_.size()) + " constants)");
        Constant& c = metadata_nodes_[size_t(idx)];
        if (!c.defined()) {
          c = make<ConstantNode>(metadata_[size_t(idx)]);
          set_sinfo(c, t);
        }
        return c;
      }
      if (module_aliases_.count(name) && is_punct(peek(1), ".") && !lookup_var(name)) {
        next(), next();
        const Token& ft = peek();
        std::string fname = expect_name("a function name");
        return global(fname, ft);
      }
      if (Expr* v = lookup_var(name)) {
        next();
        return *v;
      }
      next();
      fail_at(t, "undefined variable '" + name + "'");
    }
    default: break;
  }
  expected("an expression");
}

Expr Parser::parse_prim_value(const Token& start) {
  PrimExpr v = parse_prim();
  Expr e = make<PrimValueNode>(std::move(v));
  set_sinfo(e, start);
  return e;
}

Literal Parser::parse_literal() {
  DepthGuard guard(this);
  const Token& t = peek();
  Literal l;
  if (is_name(t, "None")) {
    next();
    return l;
  }
  if (is_name(t, "True") || is_name(t, "False")) {
    next();
    l.value = is_name(t, "True");
    return l;
  }
  if (t.kind == Tok::String) {
    next();
    l.value = detail::unquote(t, file_);
    return l;
  }
  if (is_punct(t, "[") || is_punct(t, "(")) {
    std::string close = is_punct(t, "[") ? "]" : ")";
    next();
    l.is_list = true;
    while (!is_punct(peek(), close)) {
      l.list.push_back(parse_literal());
      if (!accept(",")) break;
    }
    expect(close);
    return l;
  }
  bool neg = false;
  if (is_punct(t, "-")) {
    next();
    neg = true;
  }
  const Token& nt = peek();
  if (nt.kind == Tok::Int) {
    next();
    int64_t v = 0;
    auto r = std::from_chars(nt.text.data(), nt.text.data() + nt.text.size(), v);
    if (r.ec != std::errc()) fail_at(nt, "integer out of range");
    l.value = neg ? -v : v;
    return l;
  }
  if (nt.kind == Tok::Float) {
    next();
    double v = std::strtod(std::string(nt.text).c_str(), nullptr);
    l.value = neg ? -v : v;
    return l;
  }
  expected("a literal (number, string, True/False/None or a list)");
}

AttrValue Parser::literal_to_attr(const Literal& l, const Token& at) {
  if (!l.is_list) {
    if (const auto* s = std::get_if<std::string>(&l.value)) {
      (void)s;
    }
    return l.value;
  }
  std::vector<int64_t> ints;
  for (const Literal& e : l.list) {
    const auto* i = std::get_if<int64_t>(&e.value);
    if (e.is_list || !i) fail_at(at, "attribute lists must hold integers");
    ints.push_back(*i);
  }
  return ints;
}

Expr Parser::make_const(const Literal& l, DataType dtype, const Token& at) {
  std::vector<int64_t> shape;
  std::vector<const Literal*> flat;
  // Shape from the nesting of lists; all rows must agree.
  std::function<void(const Literal&, size_t)> walk = [&](const Literal& x, size_t depth) {
    if (x.is_list) {
      if (depth == shape.size()) shape.push_back(int64_t(x.list.size()));
      else if (depth > shape.size() || shape[depth] != int64_t(x.list.size()))
        fail_at(at, "R.const: ragged nested list");
      for (const Literal& e : x.list) walk(e, depth + 1);
    } else {
      if (depth != shape.size()) fail_at(at, "R.const: ragged nested list");
      flat.push_back(&x);
    }
  };
  walk(l, 0);
  if (dtype.is_void()) {
    dtype = DataType::Float(32);
    if (!flat.empty() && std::holds_alternative<int64_t>(flat[0]->value)) dtype = DataType::Int(64);
    if (!flat.empty() && std::holds_alternative<bool>(flat[0]->value)) dtype = DataType::Bool();
  }
  Tensor t = Tensor::empty(shape, dtype);
  if (size_t(t.numel()) != flat.size()) fail_at(at, "R.const: ragged nested list");
  auto* p = static_cast<uint8_t*>(t.data());
  for (size_t k = 0; k < flat.size(); ++k) {
    double d;
    int64_t i;
    const AttrValue& v = flat[k]->value;
    if (const auto* x = std::get_if<int64_t>(&v)) i = *x, d = double(*x);
    else if (const auto* x = std::get_if<double>(&v)) d = *x, i = int64_t(*x);
    else if (const auto* x = std::get_if<bool>(&v)) i = *x, d = *x;
    else fail_at(at, "R.const: values must be numbers or booleans");
    uint8_t* dst = p + k * size_t(dtype.bytes());
    if (dtype == DataType::Float(32)) { float f = float(d); std::memcpy(dst, &f, 4); }
    else if (dtype == DataType::Float(64)) std::memcpy(dst, &d, 8);
    else if (dtype == DataType::Float(16)) {
      // Round-to-nearest conversion to IEEE half.
      float f = float(d);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint32_t sign = (b >> 16) & 0x8000;
      int32_t exp = int32_t((b >> 23) & 0xff) - 127 + 15;
      uint32_t mant = b & 0x7fffff;
      uint16_t h;
      if (((b >> 23) & 0xff) == 0xff) h = uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
      else if (exp >= 31) h = uint16_t(sign | 0x7c00);
      else if (exp <= 0) {
        if (exp < -10) h = uint16_t(sign);
        else {
          mant |= 0x800000;
          uint32_t shift = uint32_t(14 - exp);
          uint32_t hm = mant >> shift;
          if ((mant >> (shift - 1)) & 1) ++hm;
          h = uint16_t(sign | hm);
        }
      } else {
        h = uint16_t(sign | (uint32_t(exp) << 10) | (mant >> 13));
        if (mant & 0x1000) ++h;
      }
      std::memcpy(dst, &h, 2);
    } else if (dtype.is_bool()) *dst = i != 0;
    else if (dtype.is_int() || dtype.is_uint()) std::memcpy(dst, &i, size_t(dtype.bytes()));
    else fail_at(at, "R.const: unsupported dtype " + dtype.str());
  }
  Expr c = make<ConstantNode>(t);
  set_sinfo(c, at);
  return c;
}

Expr Parser::parse_r_expr(const Token& start) {
  next(), next();  // R .
  std::string dotted = expect_name("an R function");
  while (is_punct(peek(), ".") && peek(1).kind == Tok::Name) {
    next();
    dotted += "." + std::string(next().text);
  }
  Expr e;
  if (dotted == "const") {
    expect("(");
    const Token& vt = peek();
    Literal l = parse_literal();
    DataType dt;
    if (accept(",")) {
      if (is_name(peek(), "dtype")) next(), expect("=");
      dt = parse_dtype_literal();
    }
    accept(",");
    expect(")");
    e = make_const(l, dt, vt);
  } else if (dotted == "shape") {
    expect("(");
    expect("[");
    std::vector<PrimExpr> dims = parse_shape_dims("]");
    expect(")");
    e = make<ShapeExprNode>(std::move(dims));
  } else if (dotted == "prim_value") {
    expect("(");
    PrimExpr v = parse_prim();
    expect(")");
    e = make<PrimValueNode>(v);
  } else if (dotted == "str") {
    expect("(");
    const Token& st = expect_kind(Tok::String, "a string");
    expect(")");
    e = make<StringImmNode>(detail::unquote(st, file_));
  } else if (dotted == "dtype") {
    expect("(");
    DataType dt = parse_dtype_literal();
    expect(")");
    e = make<DataTypeImmNode>(dt);
  } else if (dotted == "tuple") {
    expect("(");
    std::vector<Expr> fields;
    while (!is_punct(peek(), ")")) {
      fields.push_back(parse_expr());
      if (!accept(",")) break;
    }
    expect(")");
    e = make<TupleNode>(std::move(fields));
  } else if (dotted == "ExternFunc") {
    // R.ExternFunc("sym") or R.ExternFunc("sym", R.Callable(...)): an opaque impure function
    // unless its struct info says more.
    expect("(");
    const Token& st = expect_kind(Tok::String, "a symbol name");
    StructInfo sinfo = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
    if (accept(",") && !is_punct(peek(), ")")) {
      const Token& at = peek();
      sinfo = parse_sinfo();
      if (!sinfo.as<FuncStructInfoNode>()) fail_at(at, "the struct info of an R.ExternFunc must be an R.Callable");
      accept(",");
    }
    expect(")");
    e = make<ExternFuncNode>(detail::unquote(st, file_));
    e->struct_info_ = sinfo;
  } else if (dotted == "call_packed" || dotted == "call_pure_packed") {
    // R.call_packed("sym", args..., sinfo_args=...) calls the ExternFunc itself (impure);
    // R.call_pure_packed is the operator taking it as its first argument.
    if (!is_punct(peek(), "(") || peek(1).kind != Tok::String) {
      if (!is_punct(peek(), "(")) expected("'('");
      next();
      expected("the packed function's name");
    }
    Expr callee = make<ExternFuncNode>(detail::unquote(peek(1), file_));
    callee->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
    next();  // (
    next();  // "sym"
    std::vector<Expr> args;
    std::vector<StructInfo> sinfo_args;
    if (dotted == "call_pure_packed") args.push_back(callee);
    if (accept(",")) parse_call_operands(start, args, sinfo_args);
    expect(")");
    Expr op = dotted == "call_packed" ? callee : Expr(op::get_op("relax.call_pure_packed"));
    Call c = make<CallNode>(op, std::move(args), Attrs(), std::move(sinfo_args));
    set_sinfo(c, start);
    return c;
  } else if (dotted == "match_cast") {
    fail_at(start, "R.match_cast can only be the right-hand side of a binding");
  } else if (dotted == "to_vdevice") {
    return parse_to_vdevice(start);
  } else if (dotted == "hint_on_device") {
    return parse_hint_on_device(start);
  } else if (const op::OpDef* def = find_script_op(dotted)) {
    return parse_op_call(*def, start);
  } else {
    fail_at(start, "unknown operator 'R." + dotted + "'");
  }
  set_sinfo(e, start);
  return e;
}

Expr Parser::parse_op_call(const op::OpDef& def, const Token& start) {
  expect("(");
  std::vector<Expr> args;
  std::vector<std::optional<Expr>> named(def.args.size());
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::vector<StructInfo> sinfo_args;
  while (!is_punct(peek(), ")")) {
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      const Token& kt = peek();
      std::string key = expect_name();
      expect("=");
      if (is_sinfo_args_keyword(kt)) {
        parse_sinfo_args(sinfo_args);
      } else {
        size_t ai = def.args.size();
        for (size_t k = 0; k < def.args.size(); ++k)
          if (def.args[k].name == key) ai = k;
        if (ai < def.args.size()) {
          Expr a = parse_expr();
          set_sinfo(a, kt);
          named[ai] = a;
        } else {
          bool known = false;
          for (const auto& s : def.attrs) known |= s.name == key;
          if (!known) {
            std::string valid;
            for (const auto& s : def.args) valid += (valid.empty() ? "" : ", ") + s.name;
            for (const auto& s : def.attrs) valid += (valid.empty() ? "" : ", ") + s.name;
            fail_at(kt, def.script_name + ": unknown keyword argument '" + key + "' (valid: " + valid + ")");
          }
          const Token& vt = peek();
          if (is_name(vt, "R") && is_punct(peek(1), ".") && is_name(peek(2), "dtype")) {
            next(), next(), next();
            expect("(");
            DataType d = parse_dtype_literal();
            expect(")");
            attrs.emplace_back(key, d);
          } else if (is_name(vt, "T") && is_punct(peek(1), ".") && peek(2).kind == Tok::Name &&
                     peek(2).text.rfind("float", 0) == 0 && is_punct(peek(3), "(")) {
            // T.float32(0.125): a typed float immediate (TVM's Optional<FloatImm> attributes).
            next(), next(), next();
            expect("(");
            attrs.emplace_back(key, literal_to_attr(parse_literal(), vt));
            expect(")");
          } else {
            attrs.emplace_back(key, literal_to_attr(parse_literal(), vt));
          }
        }
      }
    } else {
      if (!attrs.empty()) expected("a keyword argument (positional arguments come first)");
      Expr a = parse_expr();
      set_sinfo(a, start);
      args.push_back(a);
    }
    if (!accept(",")) break;
  }
  const Token& close = expect(")");
  for (size_t k = 0; k < named.size(); ++k) {
    if (!named[k]) continue;
    if (k < args.size()) fail_at(close, def.script_name + ": argument '" + def.args[k].name + "' given twice");
    while (args.size() < k) {
      if (!named[args.size()]) fail_at(close, def.script_name + ": missing argument '" + def.args[args.size()].name + "'");
      args.push_back(*named[args.size()]);
    }
    args.push_back(*named[k]);
  }
  Call c;
  try {
    // TVM's R.nn.attention(q, k, v, bias, ...) is the operator relax.nn.attention_bias.
    const bool attention_bias = def.name == "relax.nn.attention" && args.size() == 4;
    c = op::make_call(attention_bias ? "relax.nn.attention_bias" : def.name, std::move(args), std::move(attrs));
    if (!sinfo_args.empty()) {
      Call c2 = make<CallNode>(c->op, c->args, c->attrs, std::move(sinfo_args));
      c = c2;
    }
    c->struct_info_ = bb_.derive_struct_info(c);
  } catch (const Error& err) {
    if (err.kind() == "ParseError") throw;
    fail_at(start, err.kind() + ": " + err.message());
  }
  return c;
}

// ---- virtual devices ------------------------------------------------------------------------------

// `I.<statement>({"key": value, ...})`, a module-level statement given at most once: `entry`
// parses the value of each key (the key's token is for errors).
void Parser::parse_module_dict(const Token& start, bool* seen, const std::string& statement,
                               const std::function<void(const Token&, const std::string&)>& entry) {
  next(), next(), next();  // I . <statement>
  if (*seen) fail_at(start, "I." + statement + " is given twice");
  *seen = true;
  expect("(");
  expect("{");
  while (!is_punct(peek(), "}")) {
    const Token& kt = expect_kind(Tok::String, statement == "module_attrs" ? "an attribute name (a string)"
                                                                          : "a global info name such as \"vdevice\"");
    std::string key = detail::unquote(kt, file_);
    expect(":");
    entry(kt, key);
    if (!accept(",")) break;
  }
  expect("}");
  expect(")");
  expect_newline();
}

// I.module_global_infos({"vdevice": [I.vdevice(...), ...]}): the module's virtual devices, which
// later annotations ("cuda:0") and R.to_vdevice name, so the statement comes before the functions.
void Parser::parse_module_global_infos(const Token& start) {
  parse_module_dict(start, &global_infos_seen_, "module_global_infos", [&](const Token& kt, const std::string& key) {
    if (key != "vdevice") fail_at(kt, "unsupported global info \"" + key + "\" (Partita knows \"vdevice\")");
    if (global_infos_.count(key)) fail_at(kt, "global info \"" + key + "\" is given twice");
    expect("[");
    std::vector<GlobalInfo> infos;
    while (!is_punct(peek(), "]")) {
      infos.push_back(parse_vdevice_decl());
      if (!accept(",")) break;
    }
    expect("]");
    global_infos_[key] = std::move(infos);
  });
}

// I.module_attrs({"name": value, ...}): the module's attributes; values are ints, floats,
// bools and strings (IntImm, FloatImm, StringImm in IRModuleNode::attrs).
void Parser::parse_module_attrs(const Token& start, IRModule& mod) {
  parse_module_dict(start, &module_attrs_seen_, "module_attrs", [&](const Token& kt, const std::string& key) {
    const Token& vt = peek();
    Literal l = parse_literal();
    ObjectRef value;
    if (l.is_list) fail_at(vt, "module attribute \"" + key + "\": lists are not supported");
    if (const auto* b = std::get_if<bool>(&l.value)) value = make<IntImmNode>(*b, DataType::Bool());
    else if (const auto* i = std::get_if<int64_t>(&l.value)) value = make<IntImmNode>(*i);
    else if (const auto* d = std::get_if<double>(&l.value)) value = make<FloatImmNode>(*d, DataType::Float(64));
    else if (const auto* str = std::get_if<std::string>(&l.value)) value = make<StringImmNode>(*str);
    else fail_at(vt, "module attribute \"" + key + "\" needs a value (an int, float, bool or string)");
    if (!mod.cow()->attrs.emplace(key, value).second) fail_at(kt, "module attribute \"" + key + "\" is given twice");
  });
}

// I.vdevice(target, vdevice_id=0, memory_scope="global"), target a string or a dictionary.
VDevice Parser::parse_vdevice_decl() {
  const Token& start = peek();
  if (!(is_name(peek(), "I") && is_punct(peek(1), ".") && is_name(peek(2), "vdevice"))) expected("I.vdevice(...)");
  next(), next(), next();
  expect("(");
  static const char* const kParams[] = {"target", "vdevice_id", "memory_scope"};
  TargetDesc target;
  int64_t id = 0;
  std::string scope = "global";
  std::unordered_set<std::string> given;
  size_t index = 0;
  bool keywords = false;
  while (!is_punct(peek(), ")")) {
    const Token& at = peek();
    std::string key;
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      key = expect_name();
      expect("=");
      keywords = true;
    } else {
      if (keywords) expected("a keyword argument (positional arguments come first)");
      if (index >= 3) fail_at(at, "I.vdevice takes at most 3 arguments (target, vdevice_id, memory_scope)");
      key = kParams[index++];
    }
    if (!given.insert(key).second) fail_at(at, "I.vdevice: '" + key + "' is given twice");
    if (key == "target") {
      target = parse_target_literal();
    } else if (key == "vdevice_id") {
      const Token& it = expect_kind(Tok::Int, "a device id (0, 1, ...)");
      auto r = std::from_chars(it.text.data(), it.text.data() + it.text.size(), id);
      if (r.ec != std::errc() || id > (int64_t(1) << 30)) fail_at(it, "device id out of range");
    } else if (key == "memory_scope") {
      scope = detail::unquote(expect_kind(Tok::String, "a memory scope string"), file_);
    } else {
      fail_at(at, "I.vdevice: unknown keyword '" + key + "' (valid: target, vdevice_id, memory_scope)");
    }
    if (!accept(",")) break;
  }
  expect(")");
  if (!target) fail_at(start, "I.vdevice needs a target (\"cuda\", \"llvm\" or a target dictionary)");
  return make<VDeviceNode>(target, int(id), scope);
}

TargetDesc Parser::parse_target_literal() {
  const Token& t = peek();
  try {
    if (t.kind == Tok::String) {
      next();
      return make_target(detail::unquote(t, file_));
    }
    if (is_punct(t, "{")) {
      next();
      TargetConfig config;
      TargetDesc host;
      std::unordered_set<std::string> given;
      while (!is_punct(peek(), "}")) {
        const Token& kt = expect_kind(Tok::String, "a target option name (a string)");
        std::string key = detail::unquote(kt, file_);
        expect(":");
        if (!given.insert(key).second) fail_at(kt, "target option \"" + key + "\" is given twice");
        if (key == "host" && is_punct(peek(), "{")) host = parse_target_literal();
        else config[key] = parse_target_value(key);
        if (!accept(",")) break;
      }
      expect("}");
      return make_target(config, host);
    }
  } catch (const Error& err) {
    if (err.kind() == "ParseError") throw;
    fail_at(t, err.kind() + ": " + err.message());
  }
  expected("a target (a string such as \"cuda\" or a dictionary)");
}

TargetAttrValue Parser::parse_target_value(const std::string& key) {
  const Token& at = peek();
  Literal l = parse_literal();
  if (!l.is_list) {
    if (const auto* b = std::get_if<bool>(&l.value)) return *b;
    if (const auto* i = std::get_if<int64_t>(&l.value)) return *i;
    if (const auto* s = std::get_if<std::string>(&l.value)) return *s;
    fail_at(at, "target option \"" + key + "\": expected a string, an integer, a bool or a list of strings");
  }
  std::vector<std::string> strings;
  for (const Literal& e : l.list) {
    const auto* s = std::get_if<std::string>(&e.value);
    if (e.is_list || !s) fail_at(at, "target option \"" + key + "\": a list must hold strings");
    strings.push_back(*s);
  }
  return strings;
}

VDevice Parser::resolve_vdevice(const std::string& name, const Token& at) {
  auto it = global_infos_.find("vdevice");
  static const std::vector<GlobalInfo> kNone;
  try {
    return lookup_vdevice(name, it == global_infos_.end() ? kNone : it->second);
  } catch (const Error& err) {
    fail_at(at, err.message());
  }
}

// R.to_vdevice(data, dst_vdevice) with dst_vdevice a vdevice name ("cuda", "cuda:1:global").
Expr Parser::parse_to_vdevice(const Token& start) {
  expect("(");
  Expr data;
  VDevice dst;
  size_t index = 0;
  while (!is_punct(peek(), ")")) {
    const Token& at = peek();
    std::string key;
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      key = expect_name();
      expect("=");
    } else {
      if (index >= 2) fail_at(at, "R.to_vdevice takes 2 arguments (data, dst_vdevice)");
      key = index++ == 0 ? "data" : "dst_vdevice";
    }
    if (key == "data" && !data) {
      data = parse_expr();
      set_sinfo(data, at);
    } else if (key == "dst_vdevice" && !dst) {
      const Token& vt = expect_kind(Tok::String, "a vdevice name such as \"cuda:0\"");
      dst = resolve_vdevice(detail::unquote(vt, file_), vt);
    } else {
      fail_at(at, "R.to_vdevice: unexpected argument '" + key + "' (takes data, dst_vdevice)");
    }
    if (!accept(",")) break;
  }
  const Token& close = expect(")");
  if (!data || !dst) fail_at(close, "R.to_vdevice needs data and dst_vdevice");
  try {
    Call c = op::make_call("relax.to_vdevice", {data}, {{"dst_vdevice", dst}});
    c->struct_info_ = op::infer_struct_info(*c);
    return c;
  } catch (const Error& err) {
    if (err.kind() == "ParseError") throw;
    fail_at(start, err.kind() + ": " + err.message());
  }
}

// A runtime device, as TVMScript writes one: R.device(2, 0), R.device(device_type=2, index=0),
// R.device("cuda", 1), R.device("cuda:1"), R.cuda(1), tvm.cpu(), tvm.runtime.cuda(0).
std::pair<int64_t, int64_t> Parser::parse_device() {
  const Token& start = peek();
  std::string first = expect_name("a device such as R.cpu() or R.device(2, 0)");
  if (first != "R" && first != "tvm" && first != "partita") fail_at(start, "expected a device such as R.cpu() or R.device(2, 0)");
  std::string fn;
  while (accept(".")) fn = expect_name("a device function");  // R.cuda, tvm.runtime.cuda: the last name
  std::optional<int> named = fn == "device" ? std::nullopt : device_type_from_name(fn);
  if (fn != "device" && !named)
    fail_at(start, "unknown device function '" + first + "." + fn + "' (R.device, R.cpu, R.cuda, ...)");
  expect("(");
  std::optional<int64_t> type = named ? std::optional<int64_t>(*named) : std::nullopt;
  std::optional<int64_t> index;
  size_t pos = 0;
  auto read_int = [&]() -> int64_t {
    const Token& it = expect_kind(Tok::Int, "an integer");
    int64_t v = 0;
    auto r = std::from_chars(it.text.data(), it.text.data() + it.text.size(), v);
    if (r.ec != std::errc() || v > (int64_t(1) << 30)) fail_at(it, "integer out of range");
    return v;
  };
  while (!is_punct(peek(), ")")) {
    const Token& at = peek();
    std::string key;
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      key = expect_name();
      expect("=");
    } else if (named) {
      key = pos++ == 0 ? "index" : "";
    } else {
      key = pos == 0 ? "device_type" : pos == 1 ? "index" : "";
      ++pos;
    }
    if (key == "dev_type") key = "device_type";
    if (key == "dev_id" || key == "device_id") key = "index";
    if (key == "device_type" && !named && !type) {
      if (peek().kind == Tok::String) {
        std::string text = detail::unquote(next(), file_);
        std::string name = text.substr(0, text.find(':'));
        auto t = device_type_from_name(name);
        if (!t) fail_at(at, "unknown device \"" + name + "\"");
        type = *t;
        if (text.find(':') != std::string::npos) {
          std::string rest = text.substr(text.find(':') + 1);
          int64_t v = -1;
          auto r = std::from_chars(rest.data(), rest.data() + rest.size(), v);
          if (r.ec != std::errc() || r.ptr != rest.data() + rest.size() || v < 0)
            fail_at(at, "bad device index in \"" + text + "\"");
          index = v;
        }
      } else {
        type = read_int();
      }
    } else if (key == "index" && !index) {
      index = read_int();
    } else {
      fail_at(at, key.empty() ? "too many arguments to the device" : "unexpected device argument '" + key + "'");
    }
    if (!accept(",")) break;
  }
  expect(")");
  if (!type) fail_at(start, "the device has no device type");
  return {*type, index.value_or(0)};
}

// R.hint_on_device(data, device, memory_scope="global").
Expr Parser::parse_hint_on_device(const Token& start) {
  expect("(");
  Expr data;
  std::optional<std::pair<int64_t, int64_t>> device;
  std::optional<std::string> scope;
  size_t index = 0;
  static const char* const kParams[] = {"data", "dst_vdevice", "memory_scope"};
  while (!is_punct(peek(), ")")) {
    const Token& at = peek();
    std::string key;
    if (peek().kind == Tok::Name && is_punct(peek(1), "=")) {
      key = expect_name();
      expect("=");
    } else {
      if (index >= 3) fail_at(at, "R.hint_on_device takes at most 3 arguments (data, device, memory_scope)");
      key = kParams[index++];
    }
    if (key == "data" && !data) {
      data = parse_expr();
      set_sinfo(data, at);
    } else if ((key == "dst_vdevice" || key == "device") && !device) {
      device = parse_device();
    } else if (key == "memory_scope" && !scope) {
      scope = detail::unquote(expect_kind(Tok::String, "a memory scope string"), file_);
    } else {
      fail_at(at, "R.hint_on_device: unexpected argument '" + key + "' (takes data, device, memory_scope)");
    }
    if (!accept(",")) break;
  }
  const Token& close = expect(")");
  if (!data || !device) fail_at(close, "R.hint_on_device needs data and a device");
  try {
    Call c = op::make_call("relax.hint_on_device", {data},
                           {{"device_type", device->first}, {"index", device->second},
                            {"memory_scope", scope.value_or("global")}});
    c->struct_info_ = op::infer_struct_info(*c);
    return c;
  } catch (const Error& err) {
    if (err.kind() == "ParseError") throw;
    fail_at(start, err.kind() + ": " + err.message());
  }
}

// ---- struct info ---------------------------------------------------------------------------------

StructInfo Parser::deduce(const Expr& e, const Token& at) {
  if (auto* t = e.as<TupleNode>())
    for (const Expr& f : t->fields) set_sinfo(f, at);
  if (auto* g = e.as<TupleGetItemNode>()) set_sinfo(g->tuple, at);
  try {
    return bb_.derive_struct_info(e);
  } catch (const Error& err) {
    if (err.kind() == "ParseError") throw;
    fail_at(at, err.kind() + ": " + err.message());
  }
}

}  // namespace

IRModule parse_module(std::string_view text, const std::string& filename) {
  Parser p(text, filename);
  return p.parse_module_text();
}

Function parse_function(std::string_view text, const std::string& filename) {
  Parser p(text, filename);
  return p.parse_function_text();
}

}  // namespace partita::script
