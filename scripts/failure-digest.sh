#!/usr/bin/env bash
# Prints, for each failed test in a lit log (-sv), its failing RUN line and
# the lines that say why (sanitizer, libFuzzer, FileCheck, error lines), at
# most 60 lines in all. CI keeps only the head and tail of a long log: the
# test scripts end with this digest so that a failure can be read there.
# Usage: failure-digest.sh LIT_LOG
log=$1
grep -qE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):' "$log" || exit 0
echo "---- failure digest ----"
awk '
  /^\*+ TEST .* FAILED \*+$/ { inside = 1; print; next }
  inside && /^\*+$/ { inside = 0; next }
  inside && (/RUN: at line/ || /ERROR|error:|runtime error|deadly signal|ALARM|out-of-memory|Slowest unit|Test unit written|SUMMARY|CHECK|Assertion|Exit Code/) { print }
' "$log" | tail -60
echo "---- end of failure digest ----"
