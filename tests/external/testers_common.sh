# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts that run ScaLAPACK's own testers against Conveyor
# (scalapack_testers.sh, scalapack_redist_testers.sh, pblas_testers.sh), which
# all take: <openmpi|mpich> <build-dir> <work-dir>.
#
# Sets mpi, build and work (absolute; work created) from those arguments, and
# defines:
#   oversubscribed_launch ARRAY VAR=VALUE ...  fills ARRAY with the MPI's launcher
#       for more ranks than cores (Open MPI --oversubscribe; MPICH with the test
#       suite's yield shim preloaded, prepended to any LD_PRELOAD given), every
#       VAR=VALUE exported to every rank.
#   tester_ranks  the rank counts to run: 2-5 on Open MPI, 3 on MPICH (the
#       uneven grids; 2-5 on both under --scale, CONVEYOR_TEST_SCALE set). The
#       drop-ins' code is the same over either MPI; each count run on both cost
#       ~1 minute per MPI's run, and MPICH's steps run alone (scripts/test).
#   peers_or_skip SUBDIR PROBE LABEL  sets `peers` to the absolute path of
#       ../shared/peers/scalapack/SUBDIR; where PROBE is not in it (../shared not
#       beside the project), says so in one line, reports nothing run and exits
#       the script with 0 (not counted as passed).
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
mkdir -p "$3"
build=$(cd "$2" && pwd) work=$(cd "$3" && pwd)
testers_common_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tester_ranks=(2 3 4 5)
[ "$mpi" = mpich ] && [ -z "${CONVEYOR_TEST_SCALE:-}" ] && tester_ranks=(3)

oversubscribed_launch() {
  local -n into=$1
  shift
  local kv preload="$build/tests/libconveyor_mpich_yield.so"
  case $mpi in
    openmpi) into=(mpiexec.openmpi --oversubscribe)
             for kv; do into+=(-x "$kv"); done ;;
    mpich) for kv; do [ "${kv%%=*}" = LD_PRELOAD ] && preload="$preload:${kv#*=}"; done
           into=(mpiexec.mpich -genv LD_PRELOAD "$preload")
           for kv; do [ "${kv%%=*}" = LD_PRELOAD ] || into+=(-genv "${kv%%=*}" "${kv#*=}"); done ;;
  esac
}

peers_or_skip() {
  peers=$(cd "$testers_common_dir/../../.." && pwd)/shared/peers/scalapack/$1
  if [ ! -f "$peers/$2" ]; then
    echo "$3: $peers absent (../shared not beside the project): not run, not counted"
    echo "0 passed, 0 failed"
    exit 0
  fi
}
