// The report's numerics part: the "numerics" member of the report's data,
// made from a "semmap.numerics" document that ReadReportNumerics
// (semmap/report.h, report_numerics.cc) read.
#ifndef SEMMAP_SRC_OUTPUT_REPORT_NUMERICS_H_
#define SEMMAP_SRC_OUTPUT_REPORT_NUMERICS_H_

#include <string>

#include "io/json_writer.h"
#include "semmap/report.h"
#include "semmap/tree.h"

namespace semmap {
namespace internal {

// Which file of the comparison `model_path` is: "reference" or "deployed"
// when it is the same string or the same file on disk, else "" (the report
// is of another file, or of no path).
std::string NumericsSide(const ReportNumerics& numerics, const std::string& model_path);

// Writes the value of the data's "numerics" member: the comparison's files
// and figures, `side`, and each view's rows as columns, `m` being the row's
// module in `tree` (-1 when the report's model has no such module) and
// `module` its path only then (null otherwise: the tree's path is it).
void WriteNumericsData(JsonWriter& w, const ReportNumerics& numerics, const ModuleTree& tree,
                       const std::string& numerics_path, const std::string& model_path);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_OUTPUT_REPORT_NUMERICS_H_
