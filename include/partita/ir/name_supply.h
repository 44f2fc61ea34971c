// NameSupply: TVM's rule for fresh names — `hint`, then `hint1`, `hint2`, ... ('.' becomes '_').
// The one name supply of the project: BlockBuilder names variables and functions with it, and
// the passes name the functions they make.
#pragma once

#include <string>
#include <unordered_map>

namespace partita {

class NameSupply {
 public:
  /// A name not handed out before: `hint` itself the first time, else `hint` with the next
  /// counter that makes it new.
  std::string fresh(std::string hint);

 private:
  std::unordered_map<std::string, int> counters_;  // every name handed out -> its next suffix
};

}  // namespace partita
