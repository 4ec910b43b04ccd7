! An unmodified Fortran MPI program (the `use mpi` bindings) for libconveyor_mpi:
! MPI_Allreduce of doubles and integers, in place and not, and MPI_Allgather.
! Whether Conveyor serves these depends on whether the MPI library's Fortran
! bindings call the C MPI_ symbols (MPICH) or PMPI_ directly (Open MPI); the
! test in tests/CMakeLists.txt checks the report for each. Results are checked
! here either way.
program interpose_use_mpi
  use mpi
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, nranks, i, bad
  double precision :: a(n), b(n)
  integer :: ia(n), gathered(4096)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  bad = 0

  do i = 1, n
    a(i) = dble(rank + i)
    ia(i) = rank * i
  end do
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (b(i) /= dble(nranks * i + nranks * (nranks - 1) / 2)) bad = bad + 1
  end do

  call MPI_Allreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ia(i) /= (nranks - 1) * i) bad = bad + 1
  end do

  call MPI_Allgather(rank, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, nranks
    if (gathered(i) /= i - 1) bad = bad + 1
  end do

  call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (bad == 0) then
      print '(a)', 'fortran results correct'
    else
      print '(a,i0)', 'fortran results wrong: ', bad
    end if
  end if
  call MPI_Finalize(ierr)
  if (bad /= 0) stop 1
end program interpose_use_mpi
