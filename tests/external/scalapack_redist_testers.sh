#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ScaLAPACK's own REDIST testers (x{s,d,c,z,i}gemr, x{s,d,c,z,i}trmr) against
# Conveyor's Cp?gemr2d / Cp?trmr2d.
#
# The testers' sources are Reference ScaLAPACK's REDIST/TESTING, read-only from
# ../shared/peers/scalapack (Debian's scalapack source package cannot be
# downloaded here); nothing of them is copied into the project. Each is built in
# the work directory with the MPI's compiler wrapper twice: linked to
# libconveyor_scalapack_compat ahead of libscalapack (Conveyor supplies
# Cp?gemr2d / Cp?trmr2d; ScaLAPACK only BLACS) and to libscalapack alone (the
# reference, for the time comparison). Every run prints Conveyor's call counts;
# a tester passes when every case says "TEST PASSED OK" (none reports errors) and
# Conveyor served exactly 2 calls per case on every process (the tester
# redistributes there and back).
#
# Inputs: upstream GEMR2D.dat / TRMR2D.dat (grids up to 2 x 2: 4 and 5 processes)
# and our own (tests/external/redist_inputs.py) at 2, 3, 4 and 5 processes.
#
# usage: scalapack_redist_testers.sh <openmpi|mpich> <build-dir> <work-dir>
# Prints one line per tester, input and rank count, and "N passed, M failed" last.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testers_common.sh"
work=$work/redist-$mpi
peers_or_skip REDIST/TESTING pdgemrdrv.c "scalapack REDIST testers"
compat="$build/src/libconveyor_scalapack_compat.so"
[ -f "$compat" ] || { echo "scalapack REDIST testers: $compat not built"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "$work"; mkdir -p "$work/bin"
cc=mpicc.$mpi
oversubscribed_launch launch LD_LIBRARY_PATH="$build/src" CONVEYOR_SCALAPACK_REPORT=1
passed=0 failed=0
names=""
for t in s d c z i; do
  for kind in gemr trmr; do
    src="$peers/p${t}${kind}drv.c"
    # -w: the testers are 1990s C (implicit declarations, unused variables).
    if ! $cc -O1 -w -o "$work/bin/x$t$kind" "$src" -L"$build/src" -Wl,-rpath,"$build/src" -Wl,--no-as-needed \
           -lconveyor_scalapack_compat -lscalapack-$mpi -lm >"$work/build.log" 2>&1 ||
       ! $cc -O1 -w -o "$work/bin/x$t$kind-reference" "$src" -lscalapack-$mpi -lm >>"$work/build.log" 2>&1; then
      echo "FAIL build of x$t$kind"; tail -n 5 "$work/build.log"; failed=$((failed + 1)); continue
    fi
    # Conveyor's, not ScaLAPACK's, must be the one the tester calls.
    if ! nm -D --defined-only "$compat" | grep -q " Cp${t}${kind}2d$"; then
      echo "FAIL Cp${t}${kind}2d is not exported by $compat"; failed=$((failed + 1)); continue
    fi
    names="$names x$t$kind"
  done
done

# One run: a tester, an input directory, a rank count. Counts the cases, the
# passes and Conveyor's calls.
run_one() {
  local exe=$1 dir=$2 np=$3 label=$4 kind=gemr log
  case $exe in *trmr) kind=trmr ;; esac
  log="$work/${exe##*/}.$label.np$np.log"
  local start=$(date +%s.%N)
  (cd "$dir" && timeout 300 "${launch[@]}" -n "$np" "$exe") >"$log" 2>&1
  local rc=$? end=$(date +%s.%N)
  local dat=GEMR2D.dat; [ "$kind" = trmr ] && dat=TRMR2D.dat
  local cases=$(grep -v '^#' "$dir/$dat" | head -n 1 | awk '{print $1}')
  local ok=$(grep -c "TEST PASSED OK" "$log")
  local errors=$(grep -c "redistribution errors\|Error element" "$log")
  local calls=$(sed -nE "s/.*conveyor scalapack report: rank [0-9]+: gemr2d ([0-9]+), trmr2d ([0-9]+),.*/\1 \2/p" "$log" |
                awk -v k="$kind" '{s += (k == "gemr" ? $1 : $2)} END {print s + 0}')
  seconds=$(echo "$end - $start" | bc)
  if [ "$rc" -eq 0 ] && [ "$ok" -eq "$cases" ] && [ "$errors" -eq 0 ] && [ "$calls" -eq $((2 * cases * np)) ]; then
    passed=$((passed + 1))
    echo "ok   ${exe##*/} $label np=$np: $cases cases, $calls Conveyor calls, ${seconds%???????} s"
  else
    failed=$((failed + 1))
    echo "FAIL ${exe##*/} $label np=$np: rc=$rc, $ok of $cases passed, $errors error lines, $calls Conveyor calls (want $((2 * cases * np)))"
    grep -m 5 -E "rank [0-9]+:|error|Error|terminate" "$log" | cut -c1-200
  fi
}

upstream="$work/upstream"; mkdir -p "$upstream"
cp "$peers/GEMR2D.dat" "$peers/TRMR2D.dat" "$upstream/"
for np in "${tester_ranks[@]}"; do
  own="$work/own-np$np"; mkdir -p "$own"
  /usr/bin/python3 "$here/redist_inputs.py" gemr "$np" 60 >"$own/GEMR2D.dat"
  /usr/bin/python3 "$here/redist_inputs.py" trmr "$np" 60 >"$own/TRMR2D.dat"
done
for t in $names; do
  for np in "${tester_ranks[@]}"; do [ "$np" -ge 4 ] && run_one "$work/bin/$t" "$upstream" "$np" upstream; done
  for np in "${tester_ranks[@]}"; do run_one "$work/bin/$t" "$work/own-np$np" "$np" own; done
done

# Timing for docs/results.md (scripts/bench redist-testers): each tester's whole
# run, Conveyor against the reference on the same input, alternating which goes
# first, REDIST_TIME_ROUNDS rounds; medians and their ratio. Upstream inputs at
# 4 ranks (their grids need 4), ours at 2. Wall time of the whole mpiexec job,
# as a user sees it (launch included), launched as users launch it: each MPI's
# defaults when the ranks fit the cores, the oversubscribed settings above (both
# sides alike) when they do not.
timed_launch() {
  local np=$1
  shift
  if [ "$np" -le "$(nproc)" ]; then
    case $mpi in
      openmpi) mpiexec.openmpi -n "$np" -x LD_LIBRARY_PATH="$build/src" "$@" ;;
      mpich) mpiexec.mpich -n "$np" -genv LD_LIBRARY_PATH "$build/src" "$@" ;;
    esac
  else
    "${launch[@]}" -n "$np" "$@"
  fi
}
if [ "${REDIST_TIME_ROUNDS:-0}" -gt 0 ]; then
  median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  echo "tester,np,input,conveyor_s,reference_s,reference/conveyor"
  for t in $names; do
    for np in 2 4; do
      dir=$upstream label=upstream
      [ "$np" -lt 4 ] && dir="$work/own-np$np" label=own
      rm -f "$work/t.c" "$work/t.r"
      for ((r = 0; r < REDIST_TIME_ROUNDS; r++)); do
        order="c r"; [ $((r % 2)) -eq 1 ] && order="r c"
        for which in $order; do
          exe="$work/bin/$t"; [ "$which" = r ] && exe="$exe-reference"
          s=$(date +%s.%N); (cd "$dir" && timed_launch "$np" "$exe") >/dev/null 2>&1; e=$(date +%s.%N)
          echo "$e - $s" | bc >>"$work/t.$which"
        done
      done
      c=$(median <"$work/t.c") r=$(median <"$work/t.r")
      echo "$t,$np,$label,$c,$r,$(echo "scale=3; $r / $c" | bc)"
    done
  done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
