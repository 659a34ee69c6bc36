#include "standard_output.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <string>

#include "cli_util.h"

namespace semmap_cli {
namespace {

// What a default SIGPIPE does at the first write to a pipe without readers.
[[noreturn]] void EndLikeSigpipe() {
  std::signal(SIGPIPE, SIG_DFL);
  std::raise(SIGPIPE);
  std::_Exit(128 + SIGPIPE);  // SIGPIPE blocked: the status a shell shows for it
}

// Passes everything to std::cout's own buffer and keeps the errno of the
// first write that failed (the stream only keeps a bad bit, and errno is
// overwritten by whatever runs next).
class WatchedBuffer : public std::streambuf {
 public:
  explicit WatchedBuffer(std::streambuf* inner) : inner_(inner) {}
  int first_error() const { return first_error_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return sync() == 0 ? 0 : c;
    errno = 0;
    if (traits_type::eq_int_type(inner_->sputc(traits_type::to_char_type(c)), traits_type::eof())) {
      return Failed();
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    errno = 0;
    const std::streamsize written = inner_->sputn(s, n);
    if (written < n) Failed();
    return written;
  }
  int sync() override {
    errno = 0;
    if (inner_->pubsync() != 0) {
      Failed();
      return -1;
    }
    return 0;
  }

 private:
  int_type Failed() {
    if (errno == EPIPE) EndLikeSigpipe();
    if (first_error_ == 0) first_error_ = errno != 0 ? errno : EIO;
    return traits_type::eof();
  }

  std::streambuf* inner_;
  int first_error_ = 0;
};

}  // namespace

int RunWithStandardOutput(const char* tool, int (*run)(int argc, char** argv), int argc,
                          char** argv) {
  WatchedBuffer watched(std::cout.rdbuf());
  std::streambuf* const original = std::cout.rdbuf(&watched);
  int exit_code = run(argc, argv);
  std::cout.flush();
  std::cout.rdbuf(original);
  if (watched.first_error() != 0 || !std::cout) {
    const int err = watched.first_error();
    std::cerr << tool << ": cannot write the output to standard output"
              << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
    exit_code = kExitBadInput;
  }
  return exit_code;
}

}  // namespace semmap_cli
