# The C-source backend: needs nothing but a C compiler at build time of a model (Target option
# "cc"), so it is always built.
partita_add_backend(ccompiler PYTHON_PACKAGE relax/backend/cpu)
