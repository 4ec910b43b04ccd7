/* Preloaded into the all-to-all tests to make the kernel refuse cross-memory
 * attach on one rank, as a container's seccomp profile does: when the rank named
 * by CONVEYOR_TEST_REFUSE_ATTACH_RANK (matched against the launcher's rank
 * variable) starts, a seccomp filter makes process_vm_readv fail with EPERM in
 * that process. Conveyor's probe must then send every rank to packed packages;
 * without that fallback the rank's reads fail and the tests fail. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static const char* launcher_rank(void) {
  const char* names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    const char* v = getenv(names[i]);
    if (v) return v;
  }
  return NULL;
}

__attribute__((constructor)) static void refuse_attach(void) {
  const char* which = getenv("CONVEYOR_TEST_REFUSE_ATTACH_RANK");
  const char* mine = launcher_rank();
  if (!which || !mine || strcmp(which, mine) != 0) return;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) abort();
}
