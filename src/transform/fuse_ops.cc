// FuseOps: see the header. The grouping is FuseOpsByKind's; this file only chooses its options.
#include "partita/transform/fuse_ops.h"

#include "partita/transform/fuse_ops_by_kind.h"

namespace partita::transform {

Pass FuseOps(int fuse_opt_level) {
  return create_module_pass(
      [fuse_opt_level](IRModule mod, const PassContext& ctx) -> IRModule {
        int level = fuse_opt_level == -1 ? ctx.opt_level : fuse_opt_level;
        if (level <= 0) return mod;
        FuseOpsByKindOptions options;
        options.codegen = "";                 // "Primitive" functions for the host, as TVM's
        options.keep_single_bindings = true;  // TVM's FuseOps makes no function of a lone call
        options.accepts = [](const CallNode& call) {
          return fusion_kind_of(call) != op::FusionKind::Opaque;
        };
        if (const AttrValue* depth = ctx.get_config("relax.FuseOps.max_depth"))
          if (const auto* n = std::get_if<int64_t>(depth)) options.max_group_size = int(*n);
        return fuse_ops_by_kind(std::move(mod), options);
      },
      0, "FuseOps");
}

}  // namespace partita::transform
