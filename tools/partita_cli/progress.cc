#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace partita::cli {

Stage::Stage(std::string name, bool enabled)
    : name_(std::move(name)), enabled_(enabled), tty_(enabled && isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {
  if (!tty_) return;
  spinner_ = std::thread([this] {
    static const char kFrames[] = "|/-\\";
    for (int i = 0; !stop_.load(); ++i) {
      std::fprintf(stderr, "\r\033[K%c %-24s %6.1fs", kFrames[i % 4], name_.c_str(), elapsed_s());
      std::fflush(stderr);
      for (int k = 0; k < 10 && !stop_.load(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

Stage::~Stage() {
  if (!finished_) finish("failed");
}

double Stage::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Stage::done(const std::string& detail) { finish(detail.empty() ? "done" : detail); }

void Stage::finish(const std::string& status) {
  finished_ = true;
  stop_.store(true);
  if (spinner_.joinable()) spinner_.join();
  if (!enabled_) return;
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s %-24s %6.3fs  %s\n", tty_ ? "*" : "partita:", name_.c_str(), elapsed_s(), status.c_str());
  std::fflush(stderr);
}

}  // namespace partita::cli
