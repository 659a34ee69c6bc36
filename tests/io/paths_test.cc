// The path helpers (io/paths.h) and the module-path atoms
// (manifest/module_path.h), each written once: the lexical directory of a
// path with its root, bare-name, empty and trailing-slash cases; the
// resolved directory through ".", ".." and a symbolic link; the annotate
// note's directory (MovedExternalDataDirectory).
#include <filesystem>
#include <string>

#include "catch2/catch.hpp"
#include "io/paths.h"
#include "manifest/module_path.h"
#include "semmap/annotate.h"
#include "temp_dir.h"

namespace {

using semmap::internal::DirectoryOf;
using semmap::internal::ResolvedDirectoryOf;

TEST_CASE("DirectoryOf: the text before the last slash, the root and '.' decided") {
  auto [path, dir] = GENERATE(table<std::string, std::string>({
      {"a/b/c.onnx", "a/b"},
      {"c.onnx", "."},
      {"", "."},
      {"/c.onnx", "/"},
      {"/", "/"},
      {"//c.onnx", "/"},
      {"a/b/", "a/b"},
      {"a//c.onnx", "a/"},
      {"./c.onnx", "."},
      {"../c.onnx", ".."},
      {"/a/c.onnx", "/a"},
  }));
  CAPTURE(path);
  CHECK(DirectoryOf(path) == dir);
}

TEST_CASE("ResolvedDirectoryOf: absolute, '.', '..' and symbolic links resolved") {
  semmap_test::TempDir tmp;
  REQUIRE(!tmp.path().empty());
  const std::string real = std::filesystem::weakly_canonical(tmp.path()).string();
  std::filesystem::create_directory(real + "/sub");
  std::filesystem::create_directory_symlink(real + "/sub", real + "/link");

  CHECK(ResolvedDirectoryOf(real + "/m.onnx") == real);
  CHECK(ResolvedDirectoryOf(real + "/sub/../m.onnx") == real);
  CHECK(ResolvedDirectoryOf(real + "/./m.onnx") == real);
  CHECK(ResolvedDirectoryOf(real + "/link/m.onnx") == real + "/sub");
  // A directory that does not exist yet is still resolved as far as it goes.
  CHECK(ResolvedDirectoryOf(real + "/sub/missing/../m.onnx") == real + "/sub");
  CHECK(ResolvedDirectoryOf("/m.onnx") == "/");
  // A bare name is in the working directory.
  const std::string cwd = std::filesystem::weakly_canonical(std::filesystem::current_path()).string();
  CHECK(ResolvedDirectoryOf("m.onnx") == cwd);
  CHECK(ResolvedDirectoryOf("./m.onnx") == cwd);
}

TEST_CASE("MovedExternalDataDirectory: the output's directory as written, only when it moved") {
  semmap_test::TempDir tmp;
  REQUIRE(!tmp.path().empty());
  const std::string real = std::filesystem::weakly_canonical(tmp.path()).string();
  std::filesystem::create_directory(real + "/sub");
  std::filesystem::create_directory_symlink(real + "/sub", real + "/link");

  CHECK(semmap::MovedExternalDataDirectory(real + "/m.onnx", real + "/out.onnx") == "");
  CHECK(semmap::MovedExternalDataDirectory(real + "/m.onnx", real + "/sub/../out.onnx") == "");
  CHECK(semmap::MovedExternalDataDirectory(real + "/sub/m.onnx", real + "/link/out.onnx") == "");
  CHECK(semmap::MovedExternalDataDirectory(real + "/m.onnx", real + "/sub/out.onnx") ==
        real + "/sub");
  CHECK(semmap::MovedExternalDataDirectory(real + "/m.onnx", "/out.onnx") == "/");
}

TEST_CASE("LastAtom and IsNumericAtom: a module path's last atom, a ModuleList index") {
  using semmap::internal::IsNumericAtom;
  using semmap::internal::LastAtom;
  CHECK(LastAtom("bert.encoder.layer.0") == "0");
  CHECK(LastAtom("bert") == "bert");
  CHECK(LastAtom("") == "");
  CHECK(LastAtom("a.") == "");
  CHECK(IsNumericAtom("12"));
  CHECK_FALSE(IsNumericAtom(""));
  CHECK_FALSE(IsNumericAtom("1a"));
  CHECK_FALSE(IsNumericAtom("-1"));
}

}  // namespace
