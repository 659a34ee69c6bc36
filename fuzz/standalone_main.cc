// A plain main for semmap's fuzz targets, used when they are not linked with
// libFuzzer: runs LLVMFuzzerTestOneInput once per file named on the command
// line, descending into directories. The normal build compiles every target
// with it, so the targets never rot, and ctest replays the seed corpora and
// the committed crash inputs (tests/regressions/) through it.
//
//   fuzz_manifest build/dev/fuzz/corpus/fuzz_manifest tests/regressions/fuzz_manifest
//
// Exits 0 when every input ran (a finding aborts, as under libFuzzer), 2 when
// an argument cannot be read or no input was found.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::size_t ran = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());  // deterministic order
      for (const auto& f : files) ran += RunFile(f) ? 1 : (ok = false, 0);
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      ran += RunFile(arg) ? 1 : (ok = false, 0);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      ok = false;
    }
  }
  std::printf("%s: ran %zu inputs\n", argv[0], ran);
  return ok && ran > 0 ? 0 : 2;
}
