// Helpers for semmap's tests: fixture paths and small ONNX models built in
// memory for edge cases real exports do not produce.
#ifndef SEMMAP_TESTS_TEST_UTIL_H_
#define SEMMAP_TESTS_TEST_UTIL_H_

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "onnx/onnx_pb.h"

namespace semmap_test {

// How many times slower this build runs than a release build. The few time
// bounds in the tests guard the complexity of work on hostile input (a
// quadratic walk takes a hundred times its bound or more), not its speed:
// under the sanitizers (and libFuzzer's coverage) and unoptimized they are
// this much wider.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SEMMAP_TEST_ASAN_ 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(SEMMAP_TEST_ASAN_)
inline constexpr double kBuildSlowdown = 8.0;
#elif !defined(NDEBUG)
inline constexpr double kBuildSlowdown = 4.0;  // unoptimized (the dev preset)
#else
inline constexpr double kBuildSlowdown = 1.0;
#endif

// The load average per core, or how much of a core a 50 ms spin gets now
// (wall time over this thread's CPU time), whichever says slower: the load
// average follows a busy machine within a minute, the spin at once.
inline double MachineSlowness() {
  double load[1] = {0.0};
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const double per_core =
      ::getloadavg(load, 1) == 1 ? load[0] / static_cast<double>(cores > 0 ? cores : 1) : 1.0;
  auto thread_seconds = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  const auto start = std::chrono::steady_clock::now();
  const double cpu = thread_seconds();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (wall() < 0.05) {
  }
  const double share = wall() / std::max(thread_seconds() - cpu, 1e-3);
  return std::max(per_core, share);
}

// How many times a time bound stretches now: kBuildSlowdown times the
// machine's slowness, which is SEMMAP_TIME_FACTOR when set, else
// MachineSlowness() (at least 1: a quiet machine keeps the bounds as
// written). tests/tool/semmap_testlib.py's time_factor() is the same rule.
// Measured again after 5 s at most (the spin costs 50 ms: a loop that
// polls may ask at every turn).
inline double TimeScale() {
  double machine = 1.0;
  const char* stated = std::getenv("SEMMAP_TIME_FACTOR");
  if (stated != nullptr && *stated != '\0') {
    machine = std::strtod(stated, nullptr);
  } else {
    static std::mutex mu;
    static std::chrono::steady_clock::time_point when;
    static double measured = 0.0;
    const std::lock_guard<std::mutex> lock(mu);
    const auto now = std::chrono::steady_clock::now();
    if (measured == 0.0 || now - when > std::chrono::seconds(5)) {
      measured = MachineSlowness();
      when = now;
    }
    machine = measured;
  }
  return kBuildSlowdown * std::max(1.0, machine);
}

// Seconds of the fastest of up to `tries` runs of `work`, stopping at the
// first within `bound` seconds times TimeScale(): a busy moment of the
// machine is not the code's cost, a quadratic walk is over its bound every
// time. For work that can run again with the same cost.
template <typename Work>
double FastestSeconds(double bound, Work&& work, int tries = 3) {
  double best = 0.0;
  for (int i = 0; i < tries; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 0 || seconds < best) best = seconds;
    if (seconds <= bound * TimeScale()) break;
  }
  return best;
}

// Appends `v` as a protobuf varint.
inline void AppendVarint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// ModelProto bytes of only a graph nesting If bodies `levels` deep
// (graph.node.attribute.g.node...), written inside out without recursion
// so that even 10^5 levels cost linear time in the test itself.
inline std::string DeeplyNestedGraphBytes(int levels) {
  std::string reversed;  // the message, back to front
  auto wrap = [&reversed](int field) {
    std::string prefix;
    AppendVarint(static_cast<std::uint64_t>(field) << 3 | 2, &prefix);
    AppendVarint(reversed.size(), &prefix);
    reversed.append(prefix.rbegin(), prefix.rend());
  };
  for (int i = 0; i < levels; ++i) {
    wrap(6);  // AttributeProto.g
    wrap(5);  // NodeProto.attribute
    wrap(1);  // GraphProto.node
  }
  wrap(7);  // ModelProto.graph
  return std::string(reversed.rbegin(), reversed.rend());
}

// Path of a file of a fixture directory, e.g.
// Fixture("bert-seqcls.torchscript", "model.onnx").
inline std::string Fixture(const std::string& dir, const std::string& file) {
  return std::string(SEMMAP_FIXTURES_DIR) + "/" + dir + "/" + file;
}

// A model with one graph; nodes are added with AddNode.
inline onnx::ModelProto MakeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("semmap-test");
  auto* opset = model.add_opset_import();
  opset->set_version(17);
  model.mutable_graph()->set_name("g");
  return model;
}

inline onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& name,
                                const std::string& op,
                                std::initializer_list<std::string> inputs,
                                std::initializer_list<std::string> outputs) {
  onnx::NodeProto* n = graph->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

// Appends a metadata_props entry (NodeProto field 9) to `node`, whichever
// onnx the tests are built with: a known repeated field (onnx >= 1.16) or
// an unknown field (older onnx, as Debian 12's 1.12).
inline void AddNodeMetadata(onnx::NodeProto* node, const std::string& key,
                            const std::string& value) {
  constexpr int kMetadataProps = 9;
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  const google::protobuf::Reflection* r = node->GetReflection();
  const google::protobuf::FieldDescriptor* field =
      onnx::NodeProto::descriptor()->FindFieldByNumber(kMetadataProps);
  if (field != nullptr) {
    r->AddMessage(node, field)->ParseFromString(entry.SerializeAsString());
  } else {
    r->MutableUnknownFields(node)->AddLengthDelimited(kMetadataProps, entry.SerializeAsString());
  }
}

// A model whose If nodes nest `levels` then_branch bodies; *innermost (if
// given) receives the deepest body, for adding nodes to it.
inline onnx::ModelProto MakeNestedIfModel(int levels, onnx::GraphProto** innermost = nullptr) {
  onnx::ModelProto model = MakeModel();
  onnx::GraphProto* body = model.mutable_graph();
  for (int i = 0; i < levels; ++i) {
    onnx::NodeProto* n = AddNode(body, "/If", "If", {"c"}, {"o"});
    onnx::AttributeProto* attr = n->add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    body = attr->mutable_g();
  }
  if (innermost != nullptr) *innermost = body;
  return model;
}

// Appends a float initializer `name` of `dims` to `graph`: every element
// 0.5, or without `with_data` no data (its shape is all some rules read).
inline onnx::TensorProto* AddInitializer(onnx::GraphProto* graph, const std::string& name,
                                         const std::vector<std::int64_t>& dims,
                                         bool with_data = true) {
  onnx::TensorProto* t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t count = 1;
  for (std::int64_t d : dims) {
    t->add_dims(d);
    count *= d;
  }
  for (std::int64_t i = 0; with_data && i < count; ++i) t->add_float_data(0.5f);
  return t;
}

inline std::string Serialize(const onnx::ModelProto& model) {
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

// Minimal manifest JSON for `paths` (parents derived from the dots; every
// class "M"). Paths must list parents before children; "" is added first.
inline std::string ManifestJson(const std::vector<std::string>& paths) {
  std::string out = R"({"format":"semmap.manifest","schema_version":1,)"
                    R"("model":{"class":"M","qualified_class":"t.M"},"modules":[)";
  std::vector<std::string> all = {""};
  all.insert(all.end(), paths.begin(), paths.end());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string& p = all[i];
    const std::size_t dot = p.rfind('.');
    const std::string parent = i == 0 ? "null" : "\"" + (dot == std::string::npos ? "" : p.substr(0, dot)) + "\"";
    std::string children;
    for (const std::string& c : all) {
      if (c.empty() || c == p) continue;
      const std::size_t cd = c.rfind('.');
      const std::string cp = cd == std::string::npos ? "" : c.substr(0, cd);
      if (cp == p) children += (children.empty() ? "\"" : ",\"") + c + "\"";
    }
    out += (i ? "," : "") + std::string(R"({"path":")") + p +
           R"(","class":"M","qualified_class":"t.M","parent":)" + parent +
           R"(,"children":[)" + children + R"(],"parameters":[],"buffers":[]})";
  }
  return out + "]}";
}

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_TEST_UTIL_H_
