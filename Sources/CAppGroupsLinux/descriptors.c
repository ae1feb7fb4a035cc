#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// close_range(2) is in Linux 5.9, its CLOSE_RANGE_CLOEXEC flag in 5.11; the C library may
// name neither.
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define CAPPGROUPS_CLOSE_RANGE_CLOEXEC (1U << 2)

static int set_close_on_exec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0) return errno == EBADF ? 0 : -1;
  if (flags & FD_CLOEXEC) return 0;
  return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Whether `fd` is a connected Unix socket whose peer is process `pid`: for a socketpair(2),
// the process that made it (SO_PEERCRED, man 7 unix). A listening socket is not: its
// SO_PEERCRED is the process that called listen(2), and whoever holds it takes the
// connections of every client of that address (SO_ACCEPTCONN, man 7 socket).
static int is_unix_socket_of(int fd, pid_t pid) {
  struct stat status;
  if (fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) return 0;
  int domain = 0;
  socklen_t length = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) return 0;
  int listening = 1;
  length = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening) return 0;
  struct ucred peer;
  length = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return 0;
  return peer.pid == pid;
}

static int mark_all_from(int lowest) {
  if (syscall(SYS_close_range, (unsigned)lowest, ~0U, CAPPGROUPS_CLOSE_RANGE_CLOEXEC) == 0) {
    return 0;
  }
  // An older kernel (ENOSYS, or EINVAL for the flag), or a seccomp filter that refuses the
  // call: every open descriptor, as /proc/self/fd lists them.
  DIR *folder = opendir("/proc/self/fd");
  if (folder != NULL) {
    int own = dirfd(folder);
    int failed = 0;
    struct dirent *entry;
    while ((entry = readdir(folder)) != NULL) {
      char *end;
      long fd = strtol(entry->d_name, &end, 10);
      if (*end != '\0' || end == entry->d_name || fd < lowest || fd == own) continue;
      if (set_close_on_exec((int)fd) != 0) failed = 1;
    }
    closedir(folder);
    return failed ? -1 : 0;
  }
  // No /proc: every number the process may open.
  struct rlimit limit;
  long highest = 65536;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < (rlim_t)(1 << 20)) {
    highest = (long)limit.rlim_cur;
  }
  for (long fd = lowest; fd < highest; fd++) {
    if (set_close_on_exec((int)fd) != 0) return -1;
  }
  return 0;
}

int cappgroups_close_on_exec_from(int lowest, int keep_parent_socket) {
  // The descriptors to keep, found first: each Unix socket the parent made (at most 16).
  int kept[16];
  int kept_count = 0;
  if (keep_parent_socket) {
    pid_t parent = getppid();
    DIR *folder = opendir("/proc/self/fd");
    if (folder != NULL) {
      int own = dirfd(folder);
      struct dirent *entry;
      while ((entry = readdir(folder)) != NULL && kept_count < 16) {
        char *end;
        long fd = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || end == entry->d_name || fd < lowest || fd == own) continue;
        if (is_unix_socket_of((int)fd, parent)) kept[kept_count++] = (int)fd;
      }
      closedir(folder);
    }
  }
  if (mark_all_from(lowest) != 0) return -1;
  for (int i = 0; i < kept_count; i++) {
    int flags = fcntl(kept[i], F_GETFD);
    if (flags >= 0) fcntl(kept[i], F_SETFD, flags & ~FD_CLOEXEC);
  }
  return 0;
}

int cappgroups_open_unnamed(int directory, const char *path, uint32_t mode) {
  return openat(directory, path, O_TMPFILE | O_WRONLY | O_CLOEXEC, (mode_t)mode);
}

int cappgroups_link_unnamed(int fd, int directory, const char *path) {
  if (linkat(fd, "", directory, path, AT_EMPTY_PATH) == 0) return 0;
  // ENOENT: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH before Linux 6.10 (man 2 linkat).
  if (errno != ENOENT && errno != EPERM) return -1;
  char proc[32];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, proc, directory, path, AT_SYMLINK_FOLLOW);
}

int cappgroups_remove_prefixed(int directory, const char *prefix) {
  size_t length = strlen(prefix);
  // Aligned for the records' 8-byte fields.
  char buffer[4096] __attribute__((aligned(8)));
  int removed = 0;
  for (;;) {
    ssize_t n = getdents64(directory, buffer, sizeof buffer);
    if (n < 0) return removed > 0 ? removed : -1;  // what was removed before, if anything
    if (n == 0) return removed;
    for (ssize_t offset = 0; offset < n;) {
      struct dirent64 *entry = (struct dirent64 *)(buffer + offset);
      offset += entry->d_reclen;
      if (strncmp(entry->d_name, prefix, length) == 0 && unlinkat(directory, entry->d_name, 0) == 0) removed += 1;
    }
  }
}

int cappgroups_flush_stdout(void) {
  errno = 0;
  if (fflush(stdout) != 0) return errno != 0 ? errno : EIO;
  return ferror(stdout) ? EIO : 0;
}
