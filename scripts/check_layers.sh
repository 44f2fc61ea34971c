#!/usr/bin/env bash
# The layering as built (docs/architecture.md), run by ctest as `check_layers`:
#  1. libpartita_runtime.so needs nothing but the C/C++ runtime, libm, libdl and OpenMP: no
#     backend library (oneDNN, OpenBLAS, ...), no protobuf/ONNX, no compiler library.
#  2. Each runtime plug-in libpartita_runtime_<name>.so needs no compiler library.
#  3. The runtime's sources and headers (src/runtime, include/partita/runtime) and the backends'
#     runtime halves and start-up code (src/backend/*/runtime, src/backend/*/startup) include nothing of the compiler's layers (ir, op,
#     script, dpl, transform, codegen, backend, frontend) and no private header of src/.
#  4. No file outside src/backend/<name>/ includes a header of that folder, and no backend source
#     includes a file outside its folder by relative path (only public headers).
#  5. The ir layer (src/ir, include/partita/ir) includes nothing of the layers above it: op,
#     script, dpl, transform, codegen, backend, frontend, python — in either spelling
#     ("partita/op/..." or "../op/..."). The op layer reaches the IR through ir/op_interface.h,
#     which the IR declares and op fills.
# Prints each offending library or include and exits 1.
#
# Usage: scripts/check_layers.sh [build dir | -] [project root]
#   (defaults: <root>/build and this script's project; "-" checks the sources only, 3 to 5)
set -uo pipefail
root="${2:-$(cd "$(dirname "$0")/.." && pwd)}"
build="${1:-$root/build}"
fail=0
say() { echo "check_layers: $*" >&2; fail=1; }

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

runtime_lib="$build/libpartita_runtime.so"
if [[ "$build" == "-" ]]; then
  :  # sources only
elif [[ ! -f "$runtime_lib" ]]; then
  say "$runtime_lib not built"
else
  allowed='^(libstdc\+\+\.so\.[0-9]+|libm\.so\.[0-9]+|libgcc_s\.so\.[0-9]+|libc\.so\.[0-9]+|libdl\.so\.[0-9]+|libgomp\.so\.[0-9]+|ld-linux-x86-64\.so\.[0-9]+)$'
  while read -r lib; do
    [[ -z "$lib" ]] && continue
    [[ "$lib" =~ $allowed ]] || say "libpartita_runtime.so needs $lib (only the C++ standard library, OpenMP and libdl are allowed)"
  done < <(needed "$runtime_lib")
  # ldd follows the whole closure: nothing of a backend or the ONNX frontend may come in indirectly.
  if ldd "$runtime_lib" | grep -Ei 'dnnl|openblas|blas|protobuf|onnx|libpartita\.so|cuda' >&2; then
    say "libpartita_runtime.so pulls in the libraries above"
  fi
fi

[[ "$build" == "-" ]] || for plugin in "$build"/libpartita_runtime_*.so "$build"/test_plugins/libpartita_runtime_*.so; do
  [[ -f "$plugin" ]] || continue
  if needed "$plugin" | grep -Eq '^(libpartita\.so|libpartita_frontend_onnx\.so)$'; then
    say "$(basename "$plugin") links the compiler library"
  fi
done

compiler_layers='ir|op|script|dpl|transform|codegen|backend|frontend'
check_includes() {  # <description> <files...>
  local what="$1"; shift
  local hits
  hits=$(grep -HnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](partita/($compiler_layers)/|(\.\./)*(src/)?(runtime|ir|op|script|dpl|transform|codegen|backend|frontend|support)/)" "$@" 2>/dev/null)
  if [[ -n "$hits" ]]; then
    echo "$hits" >&2
    say "$what include compiler headers or private src/ headers (above)"
  fi
}
existing() { for d in "$@"; do [[ -d "$d" ]] && echo "$d"; done; }
mapfile -t runtime_dirs < <(existing "$root/src/runtime" "$root/include/partita/runtime" "$root/src/support" \
                                     "$root/include/partita/support")
if ((${#runtime_dirs[@]})); then
  mapfile -t runtime_files < <(find "${runtime_dirs[@]}" -name '*.h' -o -name '*.cc' | sort)
  check_includes "the runtime's sources" "${runtime_files[@]}"
fi
mapfile -t plugin_files < <(find "$root"/src/backend/*/runtime "$root"/src/backend/*/startup -name '*.h' -o -name '*.cc' 2>/dev/null | sort)
if ((${#plugin_files[@]})); then
  check_includes "backends' runtime plug-ins and start-up code" "${plugin_files[@]}"
fi

# A backend reaches other code through public headers only: no relative include leaves its folder.
hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*"(\.\./){2,}' "$root"/src/backend/*/ 2>/dev/null || true)
if [[ -n "$hits" ]]; then
  echo "$hits" >&2
  say "backend sources include files outside their folder by relative path (above)"
fi

# A backend's folder is private to it: includes of src/backend/<name>/... from elsewhere.
hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*"[^"]*backend/[a-z0-9_]+/' "$root/src" "$root/include" "$root/tools" \
         "$root/tests" "$root/benchmarks" 2>/dev/null | grep -v "^$root/src/backend/" || true)
if [[ -n "$hits" ]]; then
  echo "$hits" >&2
  say "files outside a backend's folder include its headers (above)"
fi

# 5. The ir layer includes nothing above it.
mapfile -t ir_dirs < <(existing "$root/src/ir" "$root/include/partita/ir")
above='op|script|dpl|transform|codegen|backend|frontend|python'
if ((${#ir_dirs[@]})); then
  hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<](partita/|(\.\./)+)($above)/" "${ir_dirs[@]}" || true)
  if [[ -n "$hits" ]]; then
    echo "$hits" >&2
    say "the ir layer includes headers of layers above it (above)"
  fi
fi

if ((fail)); then
  echo "check_layers: FAILED" >&2
  exit 1
fi
if [[ "$build" == "-" ]]; then
  echo "check_layers: sources ok"
else
  echo "check_layers: libpartita_runtime needs $(needed "$runtime_lib" | tr '\n' ' ')- layering ok"
fi
