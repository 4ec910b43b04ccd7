// SPDX-License-Identifier: BSD-3-Clause
/* Preloaded into tests/faults/fault_job by run_faults.py, for Conveyor's own
 * shared segments (memfd_create or shm_open with a name containing "conveyor");
 * every other call passes straight through.
 *   CONVEYOR_FAULT_PAUSE=1    the creating process prints "segment PID" and stops
 *                             right after creating the segment, before any other
 *                             rank mapped it, so the driver can SIGKILL it there
 *                             (the create_kill case);
 *   CONVEYOR_FAULT_NO_MEMFD=1 memfd_create fails (ENOSYS, as on kernels without
 *                             it or under a seccomp filter), so the named
 *                             /dev/shm fallback runs (the shm_full_named case);
 *   CONVEYOR_FAULT_MMAP_FAIL_RANK=K  on MPI rank K only, mmap of such a segment
 *                             fails (ENOMEM) (the mmap_fail cases). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

static int ours(const char* name) { return name != NULL && strstr(name, "conveyor") != NULL; }
static int set(const char* var) { return getenv(var) != NULL && strcmp(getenv(var), "1") == 0; }

static void stop_here(const char* name, int fd) {
  if (fd < 0 || !ours(name) || !set("CONVEYOR_FAULT_PAUSE")) return;
  printf("segment %ld\n", (long)getpid());
  fflush(stdout);
  for (int i = 0; i < 120; ++i) sleep(1); /* the driver kills us; on its own the job times out */
}

int memfd_create(const char* name, unsigned int flags) {
  if (ours(name) && set("CONVEYOR_FAULT_NO_MEMFD")) {
    errno = ENOSYS;
    return -1;
  }
  int (*real)(const char*, unsigned int) = (int (*)(const char*, unsigned int))dlsym(RTLD_NEXT, "memfd_create");
  const int fd = real(name, flags);
  stop_here(name, fd);
  return fd;
}

int shm_open(const char* name, int oflag, mode_t mode) {
  int (*real)(const char*, int, mode_t) = (int (*)(const char*, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
  const int fd = real(name, oflag, mode);
  if (oflag & O_CREAT) stop_here(name, fd);
  return fd;
}

/* This process's rank in MPI_COMM_WORLD, from the launcher's environment. */
static int world_rank(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  if (r == NULL) r = getenv("PMI_RANK");
  return r == NULL ? -1 : atoi(r);
}

void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* (*real)(void*, size_t, int, int, int, off_t) =
      (void* (*)(void*, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  const char* fail_rank = getenv("CONVEYOR_FAULT_MMAP_FAIL_RANK");
  if (fail_rank != NULL && fd >= 0 && (flags & MAP_SHARED) && atoi(fail_rank) == world_rank()) {
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
      target[n] = '\0';
      if (strstr(target, "conveyor") != NULL) {
        errno = ENOMEM;
        return MAP_FAILED;
      }
    }
  }
  return real(addr, length, prot, flags, fd, offset);
}
