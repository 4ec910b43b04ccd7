#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Conveyor on x86-64 CPUs that lack this machine's SIMD features, under qemu-user
# (Debian's QEMU 7.2; its TCG runs SSE2 through AVX2, not AVX-512). Proves that the
# library loads and runs with no instruction the CPU lacks (docs/architecture.md,
# "SIMD targets"): a target's code runs only after CPUID says the CPU has it.
#
# The CPUs (qemu's models):
#   qemu64     SSE2 (+SSE3): Highway's fallback target only (no SSSE3)
#   Westmere   SSE4.2 + AES + CLMUL: a Nehalem-class CPU that reaches Highway's
#              SSE4 target (which needs AES and CLMUL; Nehalem itself stops at SSSE3)
#   Haswell    AVX2 + FMA + BMI2 (Haswell-noTSX without the system features TCG
#              lacks and warns about)
# On each, with the given MPI:
#   1. the unit tests: every op x dtype on the best target this CPU reports (the
#      lower ones are the host's: every build's CTest runs every target the host
#      has, and qemu64 here runs SSE2), and every compiled target it lacks refused
#      with the runnable list;
#   2. the allreduce, Sinkhorn, DSOP and Redistribute MPI tests at 2 ranks (2 and 3
#      with EMULATED_RANKS="2 3", which scripts/test --scale sets: the rank count
#      changes the schedule, not the instructions, and every native CTest runs 1-6),
#      every rank a qemu process (the host's launcher starts `qemu-x86_64 ... test`);
#   3. CONVEYOR_SIMD_TARGET=AVX3 (compiled in, not on this CPU) on one rank: every
#      rank reports the same error naming the runnable targets;
#   4. Python: `import conveyor` and an allreduce at 2 ranks;
#   5. an unmodified MPI program under LD_PRELOAD=libconveyor_mpi.so at 2 ranks:
#      results checked by the program at every 2^k and 3*2^k from 8 B to 256 KiB,
#      and the report must show calls served by Conveyor.
# Emulation is for correctness only: nothing here is timed.
#
# usage: x86_cpu_levels.sh <openmpi|mpich> <build-dir> [cpu-model...]
# Prints one line per check and "N passed, M failed" last; exits non-zero on failure.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
build=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(qemu64 Westmere "Haswell-noTSX,-pcid,-x2apic,-tsc-deadline,-invpcid")

if ! command -v qemu-x86_64 >/dev/null; then
  echo "x86 levels: qemu-x86_64 not installed (scripts/setup installs qemu-user)"
  echo "0 passed, 1 failed"
  exit 1
fi

# The MPI tests' environment (tests/CMakeLists.txt): oversubscribed ranks yield.
guest_env=(-E CONVEYOR_TESTING=1 -E OMP_WAIT_POLICY=passive)
if [ "$mpi" = openmpi ]; then
  launch=(mpiexec.openmpi --oversubscribe --bind-to none)
  preload=$build/src/libconveyor_mpi.so
  export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader \
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_osc=sm,pt2pt
  pypath="$build/python:$(dirname "$build")/pydeps/common"
else
  launch=(mpiexec.mpich)
  # qemu-user lacks process_vm_readv/writev (ENOSYS), so UCX's default choice
  # brings in its TCP transport between the emulated ranks, and MPICH 4.0.2 over
  # UCX 1.13's TCP hangs in MPI_Finalize about half the time (openucx/ucx#8738, as
  # on the emulated cluster; measured here: 5 of 8 runs of the Redistribute tests
  # at 3 ranks). All ranks share this machine: shared memory only.
  export UCX_TLS=self,posix,sysv
  # The yield shim goes to the emulated program only, not to qemu itself.
  guest_env+=(-E "LD_PRELOAD=$build/tests/libconveyor_mpich_yield.so")
  preload=$build/src/libconveyor_mpi.so:$build/tests/libconveyor_mpich_yield.so
  pypath="$build/python:$(dirname "$build")/pydeps/mpich:$(dirname "$build")/pydeps/common"
fi

passed=0
failed=0
log_dir="$build/emulated-x86"
mkdir -p "$log_dir"

# Tests of memory size, not of instructions, left to the native runs (every
# build's CTest): the Sinkhorn kernel past the huge-page threshold (4.3 MiB per
# rank; most of the Sinkhorn tests' emulated time: docs/testing.md, "The figures behind the suite's choices").
emulated_filter() {
  [ "$1" = sinkhorn ] && echo "--gtest_filter=-SinkhornTransport.KernelPastTheHugePageThreshold"
  return 0
}

# check <name> <regex> <command...>: passes when the command exits 0 and its output
# matches the regex (grep -E over the whole output).
check() {
  local name=$1 regex=$2 log
  shift 2
  log="$log_dir/$(tr -c 'A-Za-z0-9_.-' '_' <<<"$name").log"
  if timeout 600 "$@" >"$log" 2>&1 && grep -qE "$regex" "$log"; then
    passed=$((passed + 1))
    echo "  ok      $name"
  else
    failed=$((failed + 1))
    echo "  FAILED  $name (log: $log)"
    tail -n 30 "$log" | sed 's/^/    /'
  fi
}

for cpu in "${cpus[@]}"; do
  emu=(qemu-x86_64 -cpu "$cpu")
  name=${cpu%%,*}
  info_log="$log_dir/$name-info.log"
  "${emu[@]}" "$build/tools/conveyor" info >"$info_log" 2>&1
  runnable=$(sed -n 's/^ *SIMD runnable *//p' "$info_log")
  echo "== $name ($mpi): runnable targets: ${runnable:-none reported}"
  if [ -z "$runnable" ]; then
    failed=$((failed + 1))
    echo "  FAILED  conveyor info under $cpu (log: $info_log)"
    tail -n 5 "$info_log" | sed 's/^/    /'
    continue
  fi

  # The targets below the best one: native (they were most of the emulated
  # unit tests' time: docs/testing.md, "The figures behind the suite's choices").
  lower=$(awk '{ for (i = 2; i <= NF; ++i) printf "%s*/%s", (i > 2 ? ":" : "-"), $i }' <<<"$runnable")
  check "$name unit tests" "PASSED" "${emu[@]}" "${guest_env[@]}" "$build/tests/conveyor_unit_tests" \
    ${lower:+"--gtest_filter=$lower"}
  for np in ${EMULATED_RANKS:-2}; do
    for t in allreduce sinkhorn outer redistribute; do
      check "$name $t tests np$np" "PASSED" \
        "${launch[@]}" -n "$np" "${emu[@]}" "${guest_env[@]}" "$build/tests/conveyor_${t}_tests" $(emulated_filter "$t")
    done
  done

  # The best compiled target this CPU lacks, asked for by rank 1 alone.
  missing=$(sed -n 's/^ *SIMD compiled *//p' "$info_log" | tr ' ' '\n' | grep -vxF -f <(tr ' ' '\n' <<<"$runnable") | head -n 1)
  if [ -n "$missing" ]; then
    one="rank [0-2]: error: conveyor: rank 1: SIMD target '$missing' is not runnable on this CPU; runnable: ${runnable// /, }"
    check "$name CONVEYOR_SIMD_TARGET=$missing on rank 1" "^($one\$)" \
      bash -c "out=\$(\"\$@\") || exit 1; echo \"\$out\"; [ \$(grep -cE \"^$one\$\" <<<\"\$out\") -eq 3 ]" _ \
      "${launch[@]}" -n 1 "${emu[@]}" "${guest_env[@]}" "$build/tests/conveyor_simd_target_setting" : \
      -n 1 "${emu[@]}" "${guest_env[@]}" -E "CONVEYOR_SIMD_TARGET=$missing" "$build/tests/conveyor_simd_target_setting" : \
      -n 1 "${emu[@]}" "${guest_env[@]}" "$build/tests/conveyor_simd_target_setting"
  fi

  if [ -d "$build/python/conveyor" ]; then
    # NumPy's import runs a BLAS dot product, and Debian's OpenBLAS (0.3.21, kernels
    # chosen at load) picked its Haswell kernels under qemu64 on an AMD EPYC host
    # (OPENBLAS_VERBOSE=2: "Core: Haswell", then SIGILL; on Intel hosts it had not):
    # its kernels are pinned to the emulated level, which is NumPy's business, not
    # this check's.
    case $name in
      qemu64) blas_core=Opteron ;;    # SSE2
      Westmere) blas_core=Nehalem ;;  # SSE4.2
      *) blas_core=Haswell ;;         # AVX2
    esac
    check "$name python: import conveyor + allreduce np2" "python ok .* 2 ranks" \
      "${launch[@]}" -n 2 "${emu[@]}" "${guest_env[@]}" -E "PYTHONPATH=$pypath" -E "OPENBLAS_CORETYPE=$blas_core" \
      /usr/bin/python3 -c "
import numpy as np, conveyor
from mpi4py import MPI
comm = MPI.COMM_WORLD
x = np.arange(1000, dtype=np.float64) + comm.rank
y = conveyor.allreduce(x, 'sum', comm)
assert (y == 2 * np.arange(1000.0) + 1).all(), y[:4]
if comm.rank == 0: print('python ok', conveyor.simd_target(), comm.size, 'ranks')"
  fi

  check "$name unmodified program under LD_PRELOAD np2" "MPI_Allreduce +served [1-9]" \
    bash -c 'out=$("$@") || exit 1; echo "$out"; ! grep -qE "^[0-9]+,[0-9.]+,[1-9]" <<<"$out" &&
             [ $(grep -cE "^[0-9]+,[0-9.]+,0$" <<<"$out") -eq 31 ]' _ \
    "${launch[@]}" -n 2 "${emu[@]}" "${guest_env[@]}" -E "LD_PRELOAD=$preload" \
    -E CONVEYOR_MPI_REPORT=1 "$build/tools/unmodified-allreduce" --min 8 --max 262144 --samples 1
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
