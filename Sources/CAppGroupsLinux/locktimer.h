#ifndef CAPPGROUPS_LOCKTIMER_H
#define CAPPGROUPS_LOCKTIMER_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

// The per-thread timer that cuts a blocking lock call short with EINTR (lockwait.c's flock,
// ofdlock.c's F_OFD_SETLKW). Its signal has an empty handler installed without SA_RESTART;
// while the handler is not this package's (the signal belongs to someone else) no timer is
// made and the caller polls instead. Internal to this target.
struct lock_timer {
  int armed;          // 1 once the timer exists and the signal is unblocked on this thread
  timer_t timer;
  sigset_t only;      // the lock signal alone
  sigset_t previous;  // the thread's mask before the signal was let through
};

// Empty (no timer yet).
__attribute__((visibility("hidden"))) void lock_timer_init(struct lock_timer *t);

// Makes this thread's timer if there is none and the handler is installed: 1 when it exists.
__attribute__((visibility("hidden"))) int lock_timer_ready(struct lock_timer *t);

// Fires at `wake_ns` (CLOCK_MONOTONIC), then every millisecond, in case the signal landed just
// before the call blocked. 0, or errno.
__attribute__((visibility("hidden"))) int lock_timer_arm(struct lock_timer *t, uint64_t wake_ns);

// No more ticks (while waiting on something else).
__attribute__((visibility("hidden"))) void lock_timer_disarm(struct lock_timer *t);

// Deletes the timer, drops any signal it queued, and restores the thread's mask.
__attribute__((visibility("hidden"))) void lock_timer_finish(struct lock_timer *t);

#endif
