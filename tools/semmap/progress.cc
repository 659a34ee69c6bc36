#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace semmap_cli {
namespace {

constexpr auto kDelay = std::chrono::milliseconds(500);
constexpr auto kTick = std::chrono::milliseconds(150);

}  // namespace

Progress::Progress(std::string label) : label_(std::move(label)) {
  if (::isatty(STDERR_FILENO)) thread_ = std::thread([this] { Run(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Progress::Run() {
  static constexpr char kFrames[] = "|/-\\";
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, kDelay, [this] { return done_; })) return;
  const auto start = std::chrono::steady_clock::now() - kDelay;
  for (int frame = 0; !done_; ++frame) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\rsemmap: %s %c %.1fs", label_.c_str(), kFrames[frame % 4], seconds);
    std::fflush(stderr);
    cv_.wait_for(lock, kTick, [this] { return done_; });
  }
  std::fputs("\r\033[K", stderr);  // erase the line so output starts clean
  std::fflush(stderr);
}

}  // namespace semmap_cli
