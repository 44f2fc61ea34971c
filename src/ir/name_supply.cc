// NameSupply (see name_supply.h).
#include "partita/ir/name_supply.h"

namespace partita {

std::string NameSupply::fresh(std::string hint) {
  for (char& c : hint)
    if (c == '.') c = '_';
  auto [it, fresh] = counters_.emplace(hint, 0);
  if (fresh) return hint;
  std::string candidate;
  do {
    candidate = hint + std::to_string(++it->second);
  } while (!counters_.emplace(candidate, 0).second);
  return candidate;
}

}  // namespace partita
