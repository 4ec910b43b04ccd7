#include "core/agree.hpp"

#include <vector>

namespace conveyor::detail {

void agree_or_throw(MPI_Comm comm, const local_problem_report& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first_bad = mine ? rank : size;
  if (MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    throw error(errc::mpi, "MPI_Allreduce failed while checking arguments");
  }
  if (first_bad == size) return;
  // The lowest failing rank sends its code and message to everyone.
  int header[2] = {static_cast<int>(mine.code), static_cast<int>(mine.message.size())};
  MPI_Bcast(header, 2, MPI_INT, first_bad, comm);
  std::string text = rank == first_bad ? mine.message : std::string(static_cast<std::size_t>(header[1]), ' ');
  if (header[1] > 0) MPI_Bcast(text.data(), header[1], MPI_CHAR, first_bad, comm);
  if (rank != first_bad) text = "rank " + std::to_string(first_bad) + ": " + text;
  throw error(static_cast<errc>(header[0]), text);
}

}  // namespace conveyor::detail
