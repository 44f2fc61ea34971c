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
    // The run of bindings being gathered: pure ones (a dataflow block when long enough) or not.
    std::vector<Binding> run;
    bool run_pure = false;
    // Bindings taken from an existing dataflow block keep the run a dataflow block whatever its
    // size (they may define DataflowVars, which a plain block cannot hold).
    bool run_has_dataflow_block = false;
    bool changed = false;

    auto flush = [&] {
      if (run.empty()) return;
      bool as_dataflow = run_pure && (run_has_dataflow_block || run.size() >= min_size_);
      new_blocks.push_back(make<BindingBlockNode>(std::move(run), as_dataflow));
      run = {};
      if (run_pure) run_has_dataflow_block = false;
    };
    // Ends the run under way when it is of the other kind.
    auto start = [&](bool pure) {
      if (pure != run_pure) flush();
      run_pure = pure;
    };

    for (auto& block : seq->blocks) {
      BindingBlock nb = visit_binding_block(block);
      changed |= nb.get() != block.get();
      if (nb->is_dataflow) {
        start(true);
        run_has_dataflow_block = true;
      }
      for (auto& b : nb->bindings) {
        const Expr& value = binding_value(*b);
        start(nb->is_dataflow ||
              (!value.as<IfNode>() && !(value.as<CallNode>() && contains_impure_call(value))));
        run.push_back(b);
      }
    }
    flush();
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
        return DataflowBlockExtractor(size_t(min_size), mod).visit_expr(f).as_ref<FunctionNode>();
      },
      0, "ConvertToDataflow");
  return Sequential({extract, CanonicalizeBindings()}, "ConvertToDataflow");
}

}  // namespace partita::transform
