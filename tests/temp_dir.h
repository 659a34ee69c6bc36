// A scratch directory removed at scope exit, for tests that write files.
#ifndef SEMMAP_TESTS_TEMP_DIR_H_
#define SEMMAP_TESTS_TEMP_DIR_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace semmap_test {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "semmap-test-XXXXXX").string();
    path_ = ::mkdtemp(&pattern[0]) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ignored;
    ::chmod(path_.c_str(), 0700);  // a test may have made it read-only
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_TEMP_DIR_H_
