#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every SIMD target this machine runs, forced the way users force one
# (CONVEYOR_SIMD_TARGET), natively: the allreduce, Sinkhorn, DSOP and Redistribute
# MPI tests at 2 ranks once per runnable target. (The unit tests already run every
# target through set_simd_target; the default target is the rest of the suite.)
#
# usage: forced_targets.sh <openmpi|mpich> <build-dir>
# Prints one line per check and "N passed, M failed" last; exits non-zero on failure.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
build=$(cd "$2" && pwd)
env_args=(CONVEYOR_TESTING=1 OMP_WAIT_POLICY=passive)
if [ "$mpi" = openmpi ]; then
  launch=(mpiexec.openmpi --oversubscribe --bind-to none)
  env_args+=(OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
             OMPI_MCA_osc=sm,pt2pt)
else
  launch=(mpiexec.mpich)
  env_args+=("LD_PRELOAD=$build/tests/libconveyor_mpich_yield.so")
fi
log_dir="$build/forced-targets"
mkdir -p "$log_dir"
runnable=$("$build/tools/conveyor" info | sed -n 's/^ *SIMD runnable *//p')
[ -n "$runnable" ] || { echo "forced targets: conveyor info reported no runnable target"; echo "0 passed, 1 failed"; exit 1; }
echo "runnable targets: $runnable"
passed=0
failed=0
for target in $runnable; do
  for t in allreduce sinkhorn outer redistribute; do
    log="$log_dir/$target-$t.log"
    if env "${env_args[@]}" CONVEYOR_SIMD_TARGET="$target" timeout 300 "${launch[@]}" -n 2 \
         "$build/tests/conveyor_${t}_tests" >"$log" 2>&1 && grep -q "PASSED" "$log" && ! grep -q "FAILED" "$log"; then
      passed=$((passed + 1)); echo "  ok      $target: $t tests np2"
    else
      failed=$((failed + 1)); echo "  FAILED  $target: $t tests np2 (log: $log)"; tail -n 20 "$log" | sed 's/^/    /'
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
