#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Mutation check of tests/emulated/x86_cpu_levels.sh: that step must fail when a
# SIMD target's kernel table is built while the library loads (the bug of issue
# 25: every program linking Conveyor died with SIGILL on CPUs without AVX-512).
#
# A copy of the working tree gets one line added to src/reduce/reduction_kernels.cpp: a
# namespace-scope initializer in every Highway pass that calls that pass's
# GetTable(), i.e. runs AVX-512 code at load. The copy is built (library, tests,
# tool; Open MPI) and the x86 step runs on it with the SSE2 and SSE4.2 CPUs. The
# check passes when the step fails and qemu reports an illegal instruction.
#
# usage: mutation_table_at_load.sh <work-dir>      (scripts/test --scale runs it)
# Prints "1 passed, 0 failed" or "0 passed, 1 failed" last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd)
src="$work/src-mutant" build="$work/build-mutant"
rm -rf "$src"
mkdir -p "$src"
# The working tree as it is (tracked and new files), without build output.
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents --preserve=timestamps -t "$src")
kernels="$src/src/reduce/reduction_kernels.cpp"
anchor='^const kernel_table\* GetTable\(\) \{$'
grep -qE "$anchor" "$kernels" || { echo "mutation: GetTable() not found in $kernels"; echo "0 passed, 1 failed"; exit 1; }
# After GetTable's closing brace: a load-time call of it in every pass.
sed -i -E "/$anchor/,/^\}$/ s/^\}$/}\n[[maybe_unused]] const kernel_table* const mutant_table_at_load = GetTable();/" "$kernels"
grep -q "mutant_table_at_load = GetTable()" "$kernels" || { echo "mutation: not applied"; echo "0 passed, 1 failed"; exit 1; }

pypath="$root/build/pydeps/common"
if ! cmake -S "$src" -B "$build" -G Ninja -DCONVEYOR_MPI=openmpi -DCMAKE_BUILD_TYPE=Release \
       -DCONVEYOR_BUILD_PYTHON=OFF -DPython_EXECUTABLE=/usr/bin/python3 -DCONVEYOR_PYTHON_PATH="$pypath" \
       -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST \
       >"$work/mutant-configure.log" 2>&1 ||
   ! cmake --build "$build" -j "${CONVEYOR_JOBS:-$(nproc)}" >"$work/mutant-build.log" 2>&1; then
  tail -n 20 "$work/mutant-configure.log" "$work/mutant-build.log" 2>/dev/null
  echo "mutation: the mutant did not build"
  echo "0 passed, 1 failed"
  exit 1
fi

out="$work/mutant-x86.log"
"$root/tests/emulated/x86_cpu_levels.sh" openmpi "$build" qemu64 Westmere >"$out" 2>&1
status=$?
if [ "$status" -ne 0 ] && grep -qE "signal 4|Illegal instruction" "$out" "$build"/emulated-x86/*.log 2>/dev/null; then
  echo "mutation: the x86 step fails on the mutant (SIGILL at load), as it must"
  grep -m 3 -hE "signal 4|Illegal instruction|FAILED" "$out" "$build"/emulated-x86/*.log | sed 's/^/  /'
  echo "1 passed, 0 failed"
else
  echo "mutation: the x86 step did not catch a table built at load (exit $status; log: $out)"
  tail -n 20 "$out"
  echo "0 passed, 1 failed"
  exit 1
fi
