# Shared by the `semmap` tool's CLI tests (sourced). Expects $bin (the tool),
# $tmp (a scratch directory) and counters $failures and $passes.

fail() { echo "FAIL: semmap $1"; failures=$((failures + 1)); }

# expect CODE STDERR_FRAGMENT ARGS...: exit code and stderr fragment; errors
# (code != 0) are exactly one line unless they print usage. With
# QUIET_SUCCESS=1, a successful run must also print nothing on stderr.
expect() {
  local code="$1" fragment="$2"
  shift 2
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    fail "$*: exit $got, expected $code; stderr: $(cat "$tmp/err")"; return
  fi
  if [ -n "$fragment" ] && ! grep -qF -- "$fragment" "$tmp/err"; then
    fail "$*: stderr lacks '$fragment': $(cat "$tmp/err")"; return
  fi
  if [ "$code" -ne 0 ] && ! grep -q "^usage:" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    fail "$*: error is not one line: $(cat "$tmp/err")"; return
  fi
  if [ "${QUIET_SUCCESS:-0}" = 1 ] && [ "$code" -eq 0 ] && [ -s "$tmp/err" ]; then
    fail "$*: unexpected stderr: $(cat "$tmp/err")"; return
  fi
  passes=$((passes + 1))
}

# expect_stdout FRAGMENT ARGS...: exit 0 and stdout contains FRAGMENT.
expect_stdout() {
  local fragment="$1"
  shift
  if ! "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; then fail "$*: exit $?: $(cat "$tmp/err")"; return; fi
  if ! grep -qF -- "$fragment" "$tmp/out"; then fail "$*: stdout lacks '$fragment'"; return; fi
  passes=$((passes + 1))
}
