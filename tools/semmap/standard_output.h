// How the tools end when their standard output is the result: a write that
// failed (a full disk, /dev/full, a closed file) is an error, but a reader
// that went away (`semmap query ... | head`) is not.
#ifndef SEMMAP_TOOLS_SEMMAP_STANDARD_OUTPUT_H_
#define SEMMAP_TOOLS_SEMMAP_STANDARD_OUTPUT_H_

namespace semmap_cli {

// Runs `run(argc, argv)` (a tool's main) with std::cout watched, and
// returns its exit code, or:
//   - when standard output is a pipe or socket whose reader is gone (EPIPE):
//     nothing; the process is killed by SIGPIPE at the first failed write,
//     as git is (status 141 in a shell, -13 from Python's subprocess), also
//     when the parent ignored SIGPIPE and the write failed with EPIPE;
//   - when any other write failed: one line "TOOL: cannot write the output
//     to standard output: CAUSE" on stderr, with the cause of the first
//     failed write, and kExitBadInput (2).
int RunWithStandardOutput(const char* tool, int (*run)(int argc, char** argv), int argc,
                          char** argv);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_STANDARD_OUTPUT_H_
