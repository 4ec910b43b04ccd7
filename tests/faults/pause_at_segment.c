/* Preloaded into tests/faults/fault_job by run_faults.py, for Conveyor's own
 * shared segments (memfd_create or shm_open with a name containing "conveyor");
 * every other call passes straight through.
 *   CONVEYOR_FAULT_PAUSE=1    the creating process prints "segment PID" and stops
 *                             right after creating the segment, before any other
 *                             rank mapped it, so the driver can SIGKILL it there
 *                             (the create_kill case);
 *   CONVEYOR_FAULT_NO_MEMFD=1 memfd_create fails (ENOSYS, as on kernels without
 *                             it or under a seccomp filter), so the named
 *                             /dev/shm fallback runs (the shm_full_named case). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
