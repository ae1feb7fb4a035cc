#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"
#include "locktimer.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// The locks of coordinated accesses: byte ranges of one claims file per container, held by
// an open file description (F_OFD_SETLK), so that two accesses of one process exclude each
// other as two processes do, and the kernel lets them go when the holder dies.
//
// A wait blocks in the kernel (F_OFD_SETLKW: a release wakes it at once); a per-thread POSIX
// timer whose signal has an empty handler without SA_RESTART cuts it short with EINTR at the
// deadline (locktimer.h, shared with lockwait.c). Without the handler (the signal belongs to
// someone else) the wait polls with F_OFD_SETLK.

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static int set(int fd, int command, const struct cappgroups_lock_step *step) {
  struct flock request;
  memset(&request, 0, sizeof request);
  request.l_type = step->type;
  request.l_whence = SEEK_SET;
  request.l_start = (off_t)step->start;
  request.l_len = (off_t)step->length;
  request.l_pid = 0;  // required by F_OFD_*
  return fcntl(fd, command, &request);
}

int cappgroups_ofd_test(int fd, int16_t type, int64_t start, int64_t length, int16_t *holder_type) {
  struct flock request;
  memset(&request, 0, sizeof request);
  request.l_type = type;
  request.l_whence = SEEK_SET;
  request.l_start = (off_t)start;
  request.l_len = (off_t)length;
  if (fcntl(fd, F_OFD_GETLK, &request) != 0) return -1;
  if (request.l_type == F_UNLCK) return 0;
  if (holder_type) *holder_type = request.l_type;
  return 1;
}

int cappgroups_ofd_lock_steps_until(int fd, const struct cappgroups_lock_step *steps, int count,
                                    uint64_t deadline_ns, int *done) {
  *done = 0;
  struct lock_timer timer;
  lock_timer_init(&timer);
  int result = 0;
  long pause = 20000;

  for (int index = 0; index < count && result == 0; index++) {
    const struct cappgroups_lock_step *step = &steps[index];
    if (step->type == F_UNLCK) {
      if (set(fd, F_OFD_SETLK, step) != 0) result = errno;
      else *done = index + 1;
      continue;
    }
    for (;;) {
      if (set(fd, F_OFD_SETLK, step) == 0) { *done = index + 1; break; }
      if (errno != EAGAIN && errno != EACCES && errno != EINTR) { result = errno; break; }
      uint64_t now = monotonic_ns();
      if (now >= deadline_ns) { result = ETIMEDOUT; break; }
      if (!lock_timer_ready(&timer)) {
        uint64_t left = deadline_ns - now;
        uint64_t nap = left < (uint64_t)pause ? left : (uint64_t)pause;
        struct timespec request = {(time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull)};
        nanosleep(&request, NULL);
        pause = pause * 2 > 2000000 ? 2000000 : pause * 2;
        continue;
      }
      if ((result = lock_timer_arm(&timer, deadline_ns)) != 0) break;
      if (set(fd, F_OFD_SETLKW, step) == 0) { *done = index + 1; break; }
      if (errno != EINTR) { result = errno; break; }
    }
  }

  lock_timer_finish(&timer);
  return result;
}
