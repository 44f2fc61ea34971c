# The example backend (docs/adding-a-backend.md walks through it): offloads relax.add to a plain
# C++ loop. It is a test fixture, built with the tests.
option(PARTITA_WITH_EXAMPLE_BACKEND "Build the example backend (src/backend/example)" ${PARTITA_BUILD_TESTS})
if(NOT PARTITA_WITH_EXAMPLE_BACKEND)
  return()
endif()
partita_add_backend(example PYTHON_PACKAGE relax/backend/cpu)
