// The HTML page of semmap's report, compiled in (see
// cmake/report_template.cc.in). "__SEMMAP_REPORT_DATA__" marks where the
// data document goes.
#ifndef SEMMAP_SRC_OUTPUT_REPORT_TEMPLATE_H_
#define SEMMAP_SRC_OUTPUT_REPORT_TEMPLATE_H_

namespace semmap {
namespace internal {

extern const char kReportTemplate[];

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_OUTPUT_REPORT_TEMPLATE_H_
