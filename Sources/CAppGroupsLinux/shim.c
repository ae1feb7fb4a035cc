#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

uint64_t cappgroups_atomic_load_u64(const uint64_t *address) {
  return __atomic_load_n(address, __ATOMIC_SEQ_CST);
}

void cappgroups_atomic_store_u64(uint64_t *address, uint64_t value) {
  __atomic_store_n(address, value, __ATOMIC_SEQ_CST);
}

uint64_t cappgroups_atomic_add_u64(uint64_t *address, uint64_t value) {
  return __atomic_add_fetch(address, value, __ATOMIC_SEQ_CST);
}

void cappgroups_atomic_fence(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

// Defined by the thread sanitizer's runtime when it is linked in
// (swift build --sanitize=thread); null otherwise.
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

void cappgroups_sanitizer_acquire(void *address) {
  if (__tsan_acquire) __tsan_acquire(address);
}

void cappgroups_sanitizer_release(void *address) {
  if (__tsan_release) __tsan_release(address);
}

// pidfd_open(2) has no wrapper in older C libraries.
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int cappgroups_pidfd_open(int32_t pid) {
  return (int)syscall(SYS_pidfd_open, pid, 0);
}

int cappgroups_open(const char *path, int flags, uint32_t mode) {
  return open(path, flags, (mode_t)mode);
}
