#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <unistd.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>

// add_key(2) and keyctl(2) have no wrapper in the C library (libkeyutils is not linked), and
// syscall(2) is variadic, which Swift cannot call: each operation the device's keyring uses
// is one function here, with the kernel's return value (-1 with errno on failure).

int32_t cappgroups_add_key(const char *type, const char *description, const void *payload,
                           size_t length, int32_t keyring) {
  return (int32_t)syscall(SYS_add_key, type, description, payload, length, keyring);
}

int32_t cappgroups_keyctl_search(int32_t keyring, const char *type, const char *description) {
  return (int32_t)syscall(SYS_keyctl, KEYCTL_SEARCH, keyring, type, description, 0);
}

long cappgroups_keyctl_read(int32_t key, void *buffer, size_t length) {
  return syscall(SYS_keyctl, KEYCTL_READ, key, buffer, length);
}

long cappgroups_keyctl_describe(int32_t key, char *buffer, size_t length) {
  return syscall(SYS_keyctl, KEYCTL_DESCRIBE, key, buffer, length);
}

int cappgroups_keyctl_set_timeout(int32_t key, unsigned int seconds) {
  return (int)syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, key, seconds);
}

int cappgroups_keyctl_invalidate(int32_t key) {
  return (int)syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
}

int cappgroups_keyctl_clear(int32_t keyring) {
  return (int)syscall(SYS_keyctl, KEYCTL_CLEAR, keyring);
}

int cappgroups_keyctl_unlink(int32_t key, int32_t keyring) {
  return (int)syscall(SYS_keyctl, KEYCTL_UNLINK, key, keyring);
}

int32_t cappgroups_keyctl_user_keyring(void) {
  return (int32_t)syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1);
}
