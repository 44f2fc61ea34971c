#!/usr/bin/env bash
# The ir layer depends on nothing above it: no file in src/ir or include/partita/ir includes a
# header of op, script, dpl, transform, codegen, backend, frontend or the Python bindings. (The
# op layer reaches the IR through ir/op_interface.h, which the IR declares and op fills.)
# Run by ctest (check_ir_layer); prints each offending include and exits 1.
#
#   bash scripts/check_ir_layer.sh [project-root]     (default: this script's project)
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
above='op|script|dpl|transform|codegen|backend|frontend|python'
dirs=()
for d in "$root/src/ir" "$root/include/partita/ir"; do
  [ -d "$d" ] && dirs+=("$d")
done
if [ ${#dirs[@]} -eq 0 ]; then
  echo "check_ir_layer.sh: no src/ir or include/partita/ir under $root" >&2
  exit 2
fi
# Both spellings: "partita/<layer>/..." and a relative path into a sibling layer ("../op/...").
pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<](partita/|(\\.\\./)+)($above)/"
if bad=$(grep -rnE "$pattern" "${dirs[@]}"); then
  echo "check_ir_layer.sh: the ir layer includes headers of layers above it:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check_ir_layer.sh: ir includes nothing above it"
