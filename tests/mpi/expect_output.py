#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs a command and checks its exit status and combined output.

usage: expect_output.py <0|1> <regex> -- command...
  0: the command must exit 0; 1: it must exit non-zero. Either way its stdout +
  stderr must match <regex> (Python re.search). Prints the output on mismatch.
"""
import re
import subprocess
import sys

want_failure = sys.argv[1] == "1"
pattern = sys.argv[2]
command = sys.argv[sys.argv.index("--") + 1:]
run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
ok_status = (run.returncode != 0) if want_failure else (run.returncode == 0)
ok_output = re.search(pattern, run.stdout) is not None
if not (ok_status and ok_output):
    print(run.stdout)
    print(f"exit status {run.returncode} ({'want non-zero' if want_failure else 'want 0'}); "
          f"output {'matches' if ok_output else 'does not match'} {pattern!r}")
    sys.exit(1)
print(f"exit status {run.returncode}, output matches {pattern!r}")
