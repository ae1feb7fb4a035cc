#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <errno.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>

// The kernel's keyring is outside Landlock's reach: a confined process could replace, revoke
// or unlink the device's class keys (those that seal every group's items) and add keys of its
// own in their place. This seccomp filter leaves it the keyctl(2) operations that find and
// read a key, and refuses the others, add_key(2) and request_key(2) with EPERM, as a container
// runtime's filter refuses them. A compat ABI's keyring calls (i386 or 32-bit Arm, x32) are
// refused too; everything else is allowed.

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define COMPAT_FIRST 286  // i386 add_key; request_key 287, keyctl 288
#define COMPAT_LAST 288
#define X32_FIRST (0x40000000 + SYS_add_key)  // x32: add_key, request_key, keyctl
#define X32_LAST (0x40000000 + SYS_keyctl)
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define COMPAT_FIRST 309  // 32-bit Arm add_key; request_key 310, keyctl 311
#define COMPAT_LAST 311
#endif

#define ARGUMENT_LOW(n) offsetof(struct seccomp_data, args[n])

int cappgroups_keyring_read_only(uint32_t all_threads) {
#ifdef NATIVE_ARCH
  struct sock_filter filter[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
    /* 2 */ BPF_STMT(BPF_JMP | BPF_JA, 14),  // to 17, the compat ABI
    /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_add_key, 15, 0),      // deny
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_request_key, 14, 0),  // deny
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 2, 0),        // to 9
#ifdef X32_FIRST
    /* 7 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_FIRST, 0, 13),        // else allow
    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, X32_LAST, 12, 11),        // allow, deny
#else
    /* 7 */ BPF_STMT(BPF_JMP | BPF_JA, 13),  // allow
    /* 8 */ BPF_STMT(BPF_JMP | BPF_JA, 12),
#endif
    // keyctl: its operation, then for a search its destination keyring (none: 0).
    /* 9 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARGUMENT_LOW(0)),
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KEYCTL_GET_KEYRING_ID, 10, 0),  // allow
    /* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KEYCTL_DESCRIBE, 9, 0),
    /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KEYCTL_READ, 8, 0),
    /* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KEYCTL_GET_SECURITY, 7, 0),
    /* 14 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KEYCTL_SEARCH, 0, 5),  // else deny
    /* 15 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARGUMENT_LOW(4)),
    /* 16 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 4, 3),  // allow, deny
    // The compat ABI.
    /* 17 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    /* 18 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, COMPAT_FIRST, 0, 2),  // else allow
    /* 19 */ BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, COMPAT_LAST, 1, 0),   // allow, deny
    /* 20 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    /* 21 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {
    .len = (unsigned short)(sizeof filter / sizeof filter[0]),
    .filter = filter,
  };
  // A filter needs no_new_privs without CAP_SYS_ADMIN; landlock_restrict_self set it.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        all_threads ? SECCOMP_FILTER_FLAG_TSYNC : 0U, &program);
  if (result > 0) {  // TSYNC: the id of a thread that could not be synchronised
    errno = EBUSY;
    return -1;
  }
  return (int)result;
#else
  (void)all_threads;
  errno = ENOSYS;
  return -1;
#endif
}
