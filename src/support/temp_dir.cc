#include "partita/support/temp_dir.h"

#include <cstdlib>

#include "partita/support/error.h"

namespace partita {

std::filesystem::path make_temp_dir(const std::string& prefix, const std::string& owner) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw_error("IOError", owner + ": cannot create a temporary directory");
  return tmpl;
}

}  // namespace partita
