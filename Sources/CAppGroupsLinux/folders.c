#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

// openat2(2) is in Linux 5.6; the C library has no wrapper for it.
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int cappgroups_is_folder_without_links(const char *path) {
  struct open_how how = {
      .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .mode = 0, .resolve = RESOLVE_NO_SYMLINKS};
  long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (fd < 0) return 0;
  close((int)fd);
  return 1;
}
