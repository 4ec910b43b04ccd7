"""mpi4py as Conveyor's MPI front end: the check that both use one MPI library,
and mpi4py objects (communicators, ops, datatypes) as the addresses of their
MPI handles, the form the extension takes them in."""
from mpi4py import MPI

from . import _build_config


def _identity(version):
    """The first line of an MPI_Get_library_version string, e.g. "Open MPI
    v4.1.4, package: ..." or "MPICH Version: 4.0.2"."""
    lines = version.replace("\x00", "").strip().splitlines()
    return lines[0].strip() if lines else ""


def check_same_mpi():
    """Raises ImportError when mpi4py runs on another MPI library than the one
    Conveyor was built against: their handles differ (Open MPI's are pointers,
    MPICH's integers), so any call would crash or misbehave. Both sides report
    MPI_Get_library_version; the first lines must be equal."""
    built = _identity(_build_config.MPI_LIBRARY_VERSION)
    if not built:
        return  # the build could not probe its MPI (cross compilation): nothing to compare
    running = _identity(MPI.Get_library_version())
    if running != built:
        import mpi4py

        raise ImportError(
            "conveyor was built against one MPI library and mpi4py uses another:\n"
            f"  conveyor ({_build_config.MPI_FLAVOUR}): {built}\n"
            f"  mpi4py {mpi4py.__version__} ({mpi4py.__file__}): {running}\n"
            "Install an mpi4py built against conveyor's MPI (e.g. MPICC=<that MPI's mpicc> "
            "python3 -m pip install --no-binary mpi4py mpi4py), or rebuild conveyor with MPICC "
            "naming mpi4py's MPI.")


_addressof = MPI._addressof


def comm_address(comm):
    """`comm` (None: COMM_WORLD) as the address of its MPI_Comm."""
    if comm is None:
        comm = MPI.COMM_WORLD
    elif not isinstance(comm, MPI.Comm):
        raise TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")
    return _addressof(comm)
