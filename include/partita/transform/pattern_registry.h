// The fusion-pattern registry (TVM's relax.backend.pattern_registry): backends register their
// FusionPatterns by name ("<codegen>.<name>"); partitioning looks them up by prefix.
//
// Each backend registers its table with its backend record (partita/backend/registry.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/ir/module.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {

/// Adds `patterns` to the registry. A pattern registered later has higher priority in
/// get_patterns_with_prefix (as in TVM, so a backend lists general patterns first and more
/// specific ones after). Re-registering a name replaces the old entry.
void register_patterns(const std::vector<FusionPattern>& patterns);
/// Registered patterns whose name starts with `prefix`, highest priority first.
std::vector<FusionPattern> get_patterns_with_prefix(const std::string& prefix);
/// The pattern registered as `name`, if any.
std::optional<FusionPattern> get_pattern(const std::string& name);
/// Every registered pattern name, in registration order.
std::vector<std::string> list_pattern_names();

/// Partitions `mod` for the backend whose patterns start with `backend_prefix` (its name):
/// path 1 (`merge` false) is FuseOpsByPattern(annotate_codegen=true); path 2
/// (`merge` true) is FuseOpsByPattern(annotate_codegen=false) + MergeCompositeFunctions.
/// A backend without patterns that fuses by operator kind (transform::register_kind_fusion)
/// is partitioned with FuseOpsByKind. Throws Error("KeyError") otherwise when no
/// pattern has that prefix.
IRModule partition_for(const std::string& backend_prefix, IRModule mod, bool merge = true,
                       bool bind_constants = true);

}  // namespace partita::transform
