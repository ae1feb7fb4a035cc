// A signal heard through a descriptor (the self-pipe pattern, with an eventfd): the handler
// only counts the signal and writes to the descriptor, both async-signal-safe; a thread that
// polls the descriptor takes the count and does the work.

#include "CAppGroupsLinux.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_uint_fast64_t notice_count = 0;
static atomic_int notice_fd = -1;
// Handlers between their look at `notice_fd` and the end of their write: a detach waits for
// them, so that no write reaches a number the descriptor's close gave to another file.
static atomic_int notice_writers = 0;

static void notice_handler(int signo) {
  (void)signo;
  int saved = errno;
  atomic_fetch_add(&notice_count, 1);
  atomic_fetch_add(&notice_writers, 1);
  int fd = atomic_load(&notice_fd);
  if (fd >= 0) {
    uint64_t one = 1;
    // An eventfd's counter cannot overflow from this; a failed write loses no signal (the
    // count is kept), only this wake-up, and the descriptor is woken by every later one.
    (void)!write(fd, &one, sizeof one);
  }
  atomic_fetch_sub(&notice_writers, 1);
  errno = saved;
}

int cappgroups_notice_install(int signo, int fd) {
  atomic_store(&notice_fd, fd);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = notice_handler;
  action.sa_flags = SA_RESTART;
  // The memset leaves `sa_mask` empty, as sigemptyset(3) would (the C library's set is a
  // plain bit set): no call of its own, whose lazy binding a new process pays at its first open.
  return sigaction(signo, &action, NULL);
}

void cappgroups_notice_detach(void) {
  atomic_store(&notice_fd, -1);
  // A handler that read the descriptor before the store is still counted here (it counts
  // itself before it reads); one that reads after it finds -1. A handler never blocks: its
  // write is to a non-blocking eventfd.
  while (atomic_load(&notice_writers) > 0) sched_yield();
}

uint64_t cappgroups_notice_take(void) { return atomic_exchange(&notice_count, 0); }

// A signal only recorded (`cappgroups_interruption_install`): the handler stores a flag,
// async-signal-safe, and the process looks at it once its work is done.
static volatile sig_atomic_t interruption_came = 0;

static void interruption_handler(int signo) {
  (void)signo;
  interruption_came = 1;
}

int cappgroups_interruption_install(int signo) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = interruption_handler;
  action.sa_flags = SA_RESTART;
  return sigaction(signo, &action, NULL);
}

int cappgroups_interrupted(void) { return interruption_came ? 1 : 0; }

int cappgroups_unblock_signal(int signo) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  return pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int cappgroups_signal_blocked(int signo) {
  // The kernel's own call and its own set (one bit per signal, signal n at bit n - 1), through
  // syscall(2), which an open has bound already: not pthread_sigmask(3), sigemptyset(3) and
  // sigismember(3), three lazy bindings at a new process's first open. A look changes nothing,
  // so the C library's care for its internal signals is not needed here.
  uint64_t set = 0;
  if (signo < 1 || signo > 64) return 0;  // no such signal: as sigismember(3)'s refusal was read
  if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &set, sizeof set) != 0) return 1;
  return (int)((set >> (signo - 1)) & 1);
}
