#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ScaLAPACK's own PBLAS level-3 testers (xdpblas3tst, xzpblas3tst) with their
# P?GEADD / P?TRADD transpositions sent to Conveyor's p?tran, p?tranu, p?tranc.
#
# The testers' sources are Reference ScaLAPACK's PBLAS/TESTING, read-only from
# ../shared/peers/scalapack (nothing copied into the project), built in the work
# directory with the MPI's Fortran wrapper and linked: our test-side shim
# (tests/external/pblas_tran_shim.c: TRANS = 'T' / 'C' to p?tran*, 'N' to
# ScaLAPACK), then libconveyor_scalapack_compat (p?tran*), then libscalapack.
# A run passes when the tester's summary shows no failed test for any routine,
# P?GEADD and P?TRADD passed tests, and Conveyor counted as many p?tran calls as
# the shim sent it (CONVEYOR_SCALAPACK_REPORT), more than none.
#
# Inputs (copies of the upstream P?BLAS3TST.dat, edited): all 8 test problems
# (upstream runs only the first 4, all with TRANSA = 'N', so nothing would reach
# p?tran) and no error-exit tests (those need PBLAS's testing error handler,
# PB_Cwarn.c built with -DTestingPblas, which is in PBLAS/SRC, not among the
# testers). Grids: upstream's (2 x 2, 1 x 2, 2 x 1, 1 x 4) at 4 and 5 ranks (at 5
# one process idle), our own at 2 (1 x 2, 2 x 1, 1 x 1) and 3 (1 x 3, 3 x 1, 1 x 2,
# 2 x 1: some leave processes idle).
#
# usage: pblas_testers.sh <openmpi|mpich> <build-dir> <work-dir>
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testers_common.sh"
work=$work/pblas-$mpi
peers_or_skip PBLAS/TESTING pdblas3tst.f "PBLAS testers"
[ -f "$build/src/libconveyor_scalapack_compat.so" ] || { echo "PBLAS testers: compat library not built"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
oversubscribed_launch launch CONVEYOR_SCALAPACK_REPORT=1
passed=0 failed=0
mpicc.$mpi -O1 -fPIC -shared -o "$work/libpblas_tran_shim.so" "$here/pblas_tran_shim.c" -ldl >"$work/build.log" 2>&1 ||
  { echo "FAIL build of the shim"; cat "$work/build.log"; echo "0 passed, 1 failed"; exit 1; }
testers=""
for t in d z; do
  # -std=legacy -fallow-argument-mismatch: 1990s Fortran (one work array passed as every type).
  if mpif90.$mpi -O1 -w -std=legacy -fallow-argument-mismatch -o "$work/x${t}pblas3tst" "$peers/p${t}blas3tst.f" \
       "$peers/p${t}blastst.f" "$peers/pblastst.f" "$peers/dlamch.f" -L"$work" -lpblas_tran_shim \
       -L"$build/src" -lconveyor_scalapack_compat -Wl,-rpath,"$work:$build/src" -lscalapack-$mpi -llapack -lblas \
       >>"$work/build.log" 2>&1; then
    testers="$testers $t"
  else
    echo "FAIL build of x${t}pblas3tst"; tail -n 5 "$work/build.log"; failed=$((failed + 1))
  fi
done

grids_for() {  # number of grids, P values, Q values
  case $1 in
    2) echo "3|1 2 1|2 1 1" ;;
    3) echo "4|1 3 1 2|3 1 2 1" ;;
    *) echo "" ;;  # upstream's
  esac
}

for t in $testers; do
  T=$(echo "$t" | tr a-z A-Z)
  for np in "${tester_ranks[@]}"; do
    dir="$work/np$np-$t"; mkdir -p "$dir"
    awk -v g="$(grids_for "$np")" '
      BEGIN { split(g, parts, "|") }
      /logical flag, T to test error exits/ { $1 = "F" }
      /number of tests problems/ { $1 = "8" }
      g != "" && /number of process grids/ { $1 = parts[1] }
      g != "" && /values of P$/ { print parts[2] "\t\tvalues of P"; next }
      g != "" && /values of Q$/ { print parts[3] "\t\tvalues of Q"; next }
      { print }' "$peers/P${T}BLAS3TST.dat" >"$dir/P${T}BLAS3TST.dat"
    log="$dir/run.log"
    (cd "$dir" && timeout 300 "${launch[@]}" -n "$np" "$work/x${t}pblas3tst") >"$log" 2>&1
    rc=$?
    table=$(grep -E '^ *\|  P[DZ][A-Z0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+' "$log")
    failures=$(echo "$table" | awk '{s += $5} END {print s + 0}')
    adds=$(echo "$table" | awk '$2 ~ /ADD$/ {s += $4} END {print s + 0}')
    sent=$(sed -nE 's/^pblas shim: ([0-9]+) calls to p\?tran.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    served=$(sed -nE 's/.*conveyor scalapack report: rank [0-9]+: .*tran ([0-9]+) calls.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    if [ "$rc" -eq 0 ] && [ -n "$table" ] && [ "$failures" -eq 0 ] && [ "$adds" -gt 0 ] && [ "$sent" -gt 0 ] &&
       [ "$sent" -eq "$served" ]; then
      passed=$((passed + 1))
      echo "ok   x${t}pblas3tst np=$np: $(echo "$table" | awk '{s += $4} END {print s + 0}') tests passed, $adds of them P${T}GEADD/P${T}TRADD; $served p?tran calls served by Conveyor"
    else
      failed=$((failed + 1))
      echo "FAIL x${t}pblas3tst np=$np: rc=$rc, $failures failed tests, $adds add tests passed, shim sent $sent, Conveyor served $served"
      echo "$table" | awk '$5 > 0' | head -n 5; grep -m 5 -E "rank [0-9]+:|error|Error" "$log" | cut -c1-200
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
