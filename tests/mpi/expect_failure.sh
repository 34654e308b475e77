#!/bin/sh
# expect_failure.sh PATTERN COMMAND...: passes when COMMAND exits non-zero with PATTERN on stderr.
pattern=$1
shift
err=$(mktemp)
"$@" 2> "$err"
status=$?
cat "$err" >&2
if [ "$status" -eq 0 ]; then echo "expected a non-zero exit status" >&2; rm -f "$err"; exit 1; fi
if ! grep -qF -- "$pattern" "$err"; then echo "stderr lacks \"$pattern\"" >&2; rm -f "$err"; exit 1; fi
rm -f "$err"
