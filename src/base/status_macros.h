// Status propagation helpers. Debian's abseil (20220623) predates
// absl/status/status_macros.h, so semmap carries its own two macros.
#ifndef SEMMAP_SRC_BASE_STATUS_MACROS_H_
#define SEMMAP_SRC_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SEMMAP_INTERNAL_CONCAT_INNER(a, b) a##b
#define SEMMAP_INTERNAL_CONCAT(a, b) SEMMAP_INTERNAL_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define SEMMAP_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::absl::Status semmap_status_ = (expr);             \
    if (!semmap_status_.ok()) return semmap_status_;    \
  } while (false)

// `lhs` = value of the absl::StatusOr `rexpr`, or returns its status.
#define SEMMAP_ASSIGN_OR_RETURN(lhs, rexpr)                                \
  SEMMAP_INTERNAL_ASSIGN_OR_RETURN(                                        \
      SEMMAP_INTERNAL_CONCAT(semmap_statusor_, __LINE__), lhs, rexpr)

#define SEMMAP_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                     \
  if (!tmp.ok()) return std::move(tmp).status();          \
  lhs = std::move(tmp).value()

#endif  // SEMMAP_SRC_BASE_STATUS_MACROS_H_
