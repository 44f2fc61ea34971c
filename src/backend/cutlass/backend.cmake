# The CUTLASS backend: so far its pattern table only (compiler half), always built.
partita_add_backend(cutlass PYTHON_PACKAGE relax/backend/cuda)
