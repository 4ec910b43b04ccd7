#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPICH's own collective tests (test/mpi/coll), unmodified, with libconveyor_mpi
# preloaded: on Open MPI at 1, 2, 3 and 5 ranks, on MPICH at 3 and 4 (each count on
# both MPIs under --scale; CONVEYOR_TEST_SCALE set).
#
# The source comes from Debian's mpich source package at test time (`apt-get
# source --download-only` with a private apt configuration holding one deb-src
# line; nothing is installed or kept in the repository). The test suite (written
# against the MPI standard) is configured once and built for each MPI with its
# compiler wrapper, and the tests whose source calls an intercepted function
# (MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Allgather(v), MPI_Reduce_local,
# MPI_Alltoall(v|w)) are built and run. A test passes when it prints MTest's
# "No Errors" and exits 0.
# A test that fails with the library is run again without it: it counts as a
# failure only if it passes there (the issue's rule: everything that passes
# without the library passes with it). The summed CONVEYOR_MPI_REPORT lines show
# that the calls were intercepted; a run where no test had a call served fails.
#
# usage: mpich_coll_tests.sh <openmpi|mpich> <build-dir> <work-dir>
# Prints one line per test (its rank counts), and "N passed, M failed" last.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
mkdir -p "$3"
build=$(cd "$2" && pwd) work=$(cd "$3" && pwd)
interposer="$build/src/libconveyor_mpi.so"
[ -f "$interposer" ] || { echo "mpich coll: $interposer not built"; echo "0 passed, 1 failed"; exit 1; }

# 1. The source package, once per work directory.
src=$(ls -d "$work"/mpich-*/test/mpi 2>/dev/null | head -n 1)
if [ -z "$src" ]; then
  apt_dir="$work/apt"
  mkdir -p "$apt_dir/lists/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
    >"$apt_dir/sources.list"
  apt_opts=(-q -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o Dir::State::Lists="$apt_dir/lists")
  (cd "$work" && apt-get "${apt_opts[@]}" update >/dev/null 2>&1 &&
     apt-get "${apt_opts[@]}" source --download-only mpich >/dev/null 2>&1) ||
    { echo "mpich coll: apt-get source mpich failed"; echo "0 passed, 1 failed"; exit 1; }
  orig=$(ls "$work"/mpich_*.orig.tar.* | head -n 1)
  tar -xf "$orig" -C "$work" --wildcards '*/test/mpi' || { echo "0 passed, 1 failed"; exit 1; }
  src=$(ls -d "$work"/mpich-*/test/mpi | head -n 1)
fi

# 2. Configure once, then build the selected tests for this MPI with its own
# compiler wrapper. The suite's configuration (its autoconf script, slow on
# a loaded machine) depends on the MPI library only through the wrapper,
# which make is given, and a few checks of the MPI: configured against each, the
# two differed in HAVE_MPI_INTEGER16 alone (Open MPI 4.1 lacks the type; fixed to
# "no" here, so either may configure first) and the MPI_VERSION the Makefiles
# note for the suite's own runner, which is not used here.
tests=$(cd "$src/coll" && grep -lE "MPI_(Allreduce|Reduce_scatter|Reduce_scatter_block|Allgather|Allgatherv|Reduce_local|Alltoall|Alltoallv|Alltoallw)\b" ./*.c |
        sed -e 's|^\./||' -e 's/\.c$//' | sort)
configured="$work/configured"
if [ ! -f "$configured/coll/Makefile" ]; then
  rm -rf "$configured" "$work"/build-*; mkdir -p "$configured"
  # Open MPI 4.1 hides the MPI-1 functions MPI-3 removed behind a static assert;
  # the suite's datatype pool still names them (declared, never called here).
  (cd "$configured" && MPICC=/usr/bin/mpicc.$mpi MPIEXEC=/usr/bin/mpiexec.$mpi CFLAGS="-O2 -DOMPI_OMIT_MPI1_COMPAT_DECLS=0" \
     "$src/configure" --disable-dtpools --disable-cxx --enable-fortran=no --disable-romio --disable-ft-tests \
     pac_cv_have_mpi_integer16=no >configure.log 2>&1) ||
    { tail -n 20 "$configured/configure.log"; echo "0 passed, 1 failed"; exit 1; }
fi
obj="$work/build-$mpi"
# (cp -a keeps the times, so make sees the configuration up to date)
[ -f "$obj/coll/Makefile" ] || { rm -rf "$obj" && cp -a "$configured" "$obj"; } || { echo "0 passed, 1 failed"; exit 1; }
wrapper=(CC=/usr/bin/mpicc.$mpi CCLD=/usr/bin/mpicc.$mpi)
make -C "$obj/util" -j "$(nproc)" "${wrapper[@]}" >"$obj/util.log" 2>&1 ||
  { tail -n 20 "$obj/util.log"; echo "0 passed, 1 failed"; exit 1; }
# shellcheck disable=SC2086
make -k -C "$obj/coll" -j "$(nproc)" "${wrapper[@]}" $tests >"$obj/coll.log" 2>&1

# 3. Run.
case $mpi in
  openmpi)
    base=(mpiexec.openmpi --oversubscribe --bind-to none -x OMPI_MCA_btl=self,vader
          -x OMPI_MCA_btl_vader_single_copy_mechanism=none -x OMPI_MCA_mpi_yield_when_idle=1 -x LD_LIBRARY_PATH="$build/src")
    with=("${base[@]}" -x LD_PRELOAD="$interposer" -x CONVEYOR_MPI_REPORT=1 -x CONVEYOR_MPI_MIN_BYTES=0
          -x CONVEYOR_MPI_CALLS=all)
    without=("${base[@]}") ;;
  mpich)
    yield="$build/tests/libconveyor_mpich_yield.so"
    with=(mpiexec.mpich -genv LD_PRELOAD "$yield:$interposer" -genv LD_LIBRARY_PATH "$build/src" -genv CONVEYOR_MPI_REPORT 1
          -genv CONVEYOR_MPI_MIN_BYTES 0 -genv CONVEYOR_MPI_CALLS all)
    without=(mpiexec.mpich -genv LD_PRELOAD "$yield") ;;
esac

# The arguments of a test's first line in the suite's own testlist (e.g. -count=10).
args_of() {
  awk -v t="$1" '$1 == t { for (i = 3; i <= NF; i++) if ($i ~ /^arg=/) { sub(/^arg=/, "", $i); printf "%s ", $i }; exit }' \
    "$src/coll/testlist.in"
}

passed=0 failed=0 served=0
declare -A served_by
run_dir="$obj/runs"
rm -rf "$run_dir"; mkdir -p "$run_dir"
# Every count on one MPI or the other, 3 ranks (not a power of two) on both: the
# interposer's code is the same over either; each count run twice cost ~2 minutes.
ranks=(1 2 3 5)
[ "$mpi" = mpich ] && ranks=(3 4)
[ -n "${CONVEYOR_TEST_SCALE:-}" ] && ranks=(1 2 3 4 5)
for t in $tests; do
  exe="$obj/coll/$t"
  if [ ! -x "$exe" ]; then
    # Only MPI-4 persistent collectives (MPI_Reduce_scatter_block_init, ...) miss
    # Open MPI 4.1; the build log says which.
    echo "  $t: not built for $mpi ($(grep -m1 -oE "undefined reference to \`[A-Za-z_]+'" "$obj/coll.log" | head -n 1))"
    continue
  fi
  line="  $t:"
  read -r -a targs <<<"$(args_of "$t")"
  for np in "${ranks[@]}"; do
    log="$run_dir/$t.np$np.log"
    (cd "$obj/coll" && timeout 180 "${with[@]}" -n "$np" "$exe" "${targs[@]}") >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q "No Errors" "$log"; then
      passed=$((passed + 1)); line+=" np$np ok"
    else
      # Without the library: a test that fails there too is not Conveyor's.
      (cd "$obj/coll" && timeout 180 "${without[@]}" -n "$np" "$exe" "${targs[@]}") >"$log.without" 2>&1
      if [ $? -eq 0 ] && grep -q "No Errors" "$log.without"; then
        failed=$((failed + 1)); line+=" np$np FAILED(rc $rc, see $log)"
      else
        passed=$((passed + 1)); line+=" np$np fails-without-too"
      fi
    fi
    # "  MPI_Allreduce  served 930 (...)": sum what the report says was served.
    while read -r name n; do
      served_by[$name]=$(( ${served_by[$name]:-0} + n )); served=$((served + n))
    done < <(sed -nE 's/^ +(MPI_[A-Za-z_]+) +served ([0-9]+).*/\1 \2/p' "$log")
  done
  echo "$line"
done
echo "  served by Conveyor over all runs (CONVEYOR_MPI_REPORT):"
for name in "${!served_by[@]}"; do echo "    $name ${served_by[$name]}"; done | sort
if [ "$served" -eq 0 ]; then echo "  no call was served: the library was not in use"; failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
