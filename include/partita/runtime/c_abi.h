/* The plain-C calling convention of compiled external code (shared objects loaded by the
 * runtime's "dso_library" module). Kept C so generated sources can include or copy it. */
#ifndef PARTITA_RUNTIME_C_ABI_H_
#define PARTITA_RUNTIME_C_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A dense row-major tensor view. dtype codes follow DLPack (0 int, 1 uint, 2 float). */
typedef struct {
  void* data;
  const int64_t* shape;
  int32_t ndim;
  uint8_t dtype_code;
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
} PartitaTensorC;

/* Every exported function symbol has this signature. Outputs are allocated by the caller
 * (destination passing) with the shapes of the call's result; a tuple result is flattened.
 * Returns 0 on success; otherwise the optional `partita_last_error()` says why. */
typedef int32_t (*PartitaFuncC)(const PartitaTensorC* inputs, int32_t num_inputs,
                                PartitaTensorC* outputs, int32_t num_outputs);

/* Optional: called once per named constant at load, before any function runs. The tensor
 * stays alive for the life of the module. Returns 0 on success. */
typedef int32_t (*PartitaSetConstantC)(const char* name, const PartitaTensorC* tensor);
#define PARTITA_SET_CONSTANT_SYMBOL "partita_set_constant"

/* Optional: a message describing the last failure. */
typedef const char* (*PartitaLastErrorC)(void);
#define PARTITA_LAST_ERROR_SYMBOL "partita_last_error"

#ifdef __cplusplus
}
#endif

#endif /* PARTITA_RUNTIME_C_ABI_H_ */
