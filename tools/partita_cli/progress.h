// Progress display for long stages on stderr: on a terminal a spinner with the stage name and
// elapsed time is redrawn in place (from a helper thread) until the stage ends; otherwise one
// plain line per finished stage, so logs stay readable.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace partita::cli {

class Stage {
 public:
  /// Starts stage `name`; `enabled` false prints nothing (--quiet).
  explicit Stage(std::string name, bool enabled = true);
  /// Ends the stage (marks it failed unless done() was called).
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  /// Ends the stage successfully; `detail` is appended to its line.
  void done(const std::string& detail = "");
  double elapsed_s() const;

 private:
  void finish(const std::string& status);
  std::string name_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::thread spinner_;
  bool finished_ = false;
};

}  // namespace partita::cli
