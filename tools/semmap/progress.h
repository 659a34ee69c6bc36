// A spinner on stderr for slow steps: shown only when stderr is a terminal
// and the step has taken longer than half a second, so scripts and quick
// runs see nothing.
#ifndef SEMMAP_TOOLS_SEMMAP_PROGRESS_H_
#define SEMMAP_TOOLS_SEMMAP_PROGRESS_H_

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace semmap_cli {

class Progress {
 public:
  // Starts timing `label` ("loading model.onnx"); the line is cleared when
  // the Progress is destroyed.
  explicit Progress(std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  void Run();

  std::string label_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_PROGRESS_H_
