#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

// The system call numbers are the same on every architecture since Linux 5.13
// (asm-generic), but older C libraries do not name them.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// The kernel's struct landlock_ruleset_attr as of ABI 6. The kernel accepts a
// larger structure than it knows as long as the fields it does not know are
// zero, so this one works from ABI 1 on when only handled_access_fs is set
// (and from ABI 6 on with scoped).
struct cappgroups_landlock_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

// struct landlock_path_beneath_attr is packed in the kernel's ABI.
struct cappgroups_landlock_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

// enum landlock_rule_type
#define CAPPGROUPS_LANDLOCK_RULE_PATH_BENEATH 1
// sys_landlock_create_ruleset() flags
#define CAPPGROUPS_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

int cappgroups_landlock_abi_version(void) {
  return (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
                      CAPPGROUPS_LANDLOCK_CREATE_RULESET_VERSION);
}

int cappgroups_landlock_create_ruleset(uint64_t handled_access_fs, uint64_t scoped) {
  struct cappgroups_landlock_ruleset_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.handled_access_fs = handled_access_fs;
  attr.scoped = scoped;
  return (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U);
}

int cappgroups_landlock_add_path_rule(int ruleset_fd, int parent_fd, uint64_t allowed_access) {
  struct cappgroups_landlock_path_beneath_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.allowed_access = allowed_access;
  attr.parent_fd = parent_fd;
  return (int)syscall(SYS_landlock_add_rule, ruleset_fd, CAPPGROUPS_LANDLOCK_RULE_PATH_BENEATH,
                      &attr, 0U);
}

int cappgroups_open_path(const char *path) {
  return open(path, O_PATH | O_CLOEXEC);
}

int cappgroups_landlock_restrict_self(int ruleset_fd, uint32_t flags) {
  // Without CAP_SYS_ADMIN the kernel refuses landlock_restrict_self(2) unless
  // the thread has no_new_privs; with it, no_new_privs still keeps a setuid
  // program run later from shedding the ruleset's spirit with new privileges.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
}
