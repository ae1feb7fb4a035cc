// A thread started while its starter is busy (the change monitor's, started while a suite
// opens) that runs nothing until it has something to do.

#include "CAppGroupsLinux.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

struct waiting_start {
  void *(*body)(void *);
  void *argument;
  int first;
  int second;
};

static void *waiting_start_main(void *raw) {
  struct waiting_start start = *(struct waiting_start *)raw;
  // Nothing before the wait allocates or frees: a thread's first allocation (or free, which
  // sets up its cache) makes its malloc arena (an mmap of 128 MiB, munmaps, an mprotect), and
  // the Swift body's first steps instantiate types under the runtime's locks, which the
  // starter takes too.
  struct pollfd fds[2] = {
      {.fd = start.first, .events = POLLIN, .revents = 0},
      {.fd = start.second, .events = POLLIN, .revents = 0},
  };
  // Readable, or an error on a descriptor: the body looks. EINTR or ENOMEM: the body's own
  // poll waits again.
  (void)poll(fds, 2, -1);
  free(raw);
  return start.body(start.argument);
}

int cappgroups_thread_start_waiting(
    pthread_t *thread, void *(*body)(void *), void *argument, int first, int second) {
  struct waiting_start *start = malloc(sizeof *start);
  if (start == NULL) return ENOMEM;
  *start = (struct waiting_start){body, argument, first, second};
  int code = pthread_create(thread, NULL, waiting_start_main, start);
  if (code != 0) free(start);
  return code;
}
