// SEMMAP_EXPORT marks the classes and functions of semmap's public API.
//
// The shared library is compiled with hidden visibility: only what carries
// SEMMAP_EXPORT is in its dynamic symbol table, so semmap::internal and the
// libraries semmap uses privately stay out of a user's link. A static
// library exports nothing and the macro is empty.
#ifndef SEMMAP_INCLUDE_SEMMAP_EXPORT_H_
#define SEMMAP_INCLUDE_SEMMAP_EXPORT_H_

#if !defined(SEMMAP_EXPORT)

#if defined(SEMMAP_SHARED_LIBRARY)
#if defined(_WIN32)

#if defined(SEMMAP_COMPILE_LIBRARY)
#define SEMMAP_EXPORT __declspec(dllexport)
#else
#define SEMMAP_EXPORT __declspec(dllimport)
#endif  // defined(SEMMAP_COMPILE_LIBRARY)

#else  // defined(_WIN32)
#if defined(SEMMAP_COMPILE_LIBRARY)
#define SEMMAP_EXPORT __attribute__((visibility("default")))
#else
#define SEMMAP_EXPORT
#endif
#endif  // defined(_WIN32)

#else  // defined(SEMMAP_SHARED_LIBRARY)
#define SEMMAP_EXPORT
#endif

#endif  // !defined(SEMMAP_EXPORT)

#endif  // SEMMAP_INCLUDE_SEMMAP_EXPORT_H_
