# TensorRT's pattern table (src/backend/tensorrt/README.md): TVM's python/tvm/relax/backend/
# contrib/tensorrt.py, pure Python, so TensorRT's BYOC code partitions here. There is no TensorRT
# codegen or runtime (no TensorRT on these machines): only the Python module is installed.
partita_add_backend(tensorrt PYTHON_PACKAGE relax/backend/contrib)
