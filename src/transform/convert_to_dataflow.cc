// ConvertToDataflow (TVM relax.transform.ConvertToDataflow): runs of pure bindings outside
// dataflow blocks become dataflow blocks; CanonicalizeBindings then turns vars used only inside
// a new block into DataflowVars.
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/support/error.h"
#include "partita/transform/basic.h"

namespace partita::transform {

namespace {

class DataflowBlockExtractor : public ExprMutator {
 public:
  DataflowBlockExtractor(size_t min_size, IRModule mod) : ExprMutator(mod), min_size_(min_size) {}

  Expr visit_(const SeqExprNode* seq) override {
    std::vector<BindingBlock> new_blocks;
    std::vector<Binding> dataflow_bindings, plain_bindings;
    // Bindings taken from an existing dataflow block keep the run a dataflow block whatever its
    // size (they may define DataflowVars, which a plain block cannot hold).
    bool run_has_dataflow_block = false;
    bool changed = false;

    auto flush_dataflow = [&] {
      if (dataflow_bindings.empty()) return;
      bool as_dataflow = run_has_dataflow_block || dataflow_bindings.size() >= min_size_;
      new_blocks.push_back(make<BindingBlockNode>(std::move(dataflow_bindings), as_dataflow));
      dataflow_bindings = {};
      run_has_dataflow_block = false;
    };
    auto flush_plain = [&] {
      if (plain_bindings.empty()) return;
      new_blocks.push_back(make<BindingBlockNode>(std::move(plain_bindings), false));
      plain_bindings = {};
    };

    for (auto& block : seq->blocks) {
      BindingBlock nb = visit_binding_block(block);
      changed |= nb.get() != block.get();
      if (nb->is_dataflow) {
        flush_plain();
        dataflow_bindings.insert(dataflow_bindings.end(), nb->bindings.begin(), nb->bindings.end());
        run_has_dataflow_block = true;
        continue;
      }
      for (auto& b : nb->bindings) {
        const Expr& value = binding_value(*b);
        bool is_dataflow = !value.as<IfNode>() && !(value.as<CallNode>() && contains_impure_call(value));
        if (is_dataflow) {
          flush_plain();
          dataflow_bindings.push_back(b);
        } else {
          flush_dataflow();
          plain_bindings.push_back(b);
        }
      }
    }
    flush_dataflow();
    flush_plain();
    Expr body = visit_expr(seq->body);
    // Unchanged when the regrouping reproduces the original blocks.
    bool same = !changed && body.get() == seq->body.get() && new_blocks.size() == seq->blocks.size();
    for (size_t i = 0; same && i < new_blocks.size(); ++i)
      same = new_blocks[i]->is_dataflow == seq->blocks[i]->is_dataflow &&
             new_blocks[i]->bindings.size() == seq->blocks[i]->bindings.size();
    if (same) return Expr(seq);
    return make<SeqExprNode>(std::move(new_blocks), body);
  }

 private:
  size_t min_size_;
};

}  // namespace

Pass ConvertToDataflow(int min_size) {
  if (min_size < 1) throw_error("ValueError", "ConvertToDataflow: min_size must be at least 1");
  Pass extract = create_function_pass(
      [min_size](Function f, IRModule mod, const PassContext&) -> Function {
        DataflowBlockExtractor m(size_t(min_size), mod);
        return m.visit_expr(f).as_ref<FunctionNode>();
      },
      0, "ConvertToDataflow");
  return Sequential({extract, CanonicalizeBindings()}, "ConvertToDataflow");
}

}  // namespace partita::transform
