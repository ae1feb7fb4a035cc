#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"
#include "locktimer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// A bounded, fair wait for an exclusive flock(2).
//
// Bounded: a blocking flock has no timeout, so the waiter blocks in the kernel (a release
// wakes it at once) and a per-thread POSIX timer, whose signal has an empty handler installed
// without SA_RESTART, cuts the call short with EINTR at the end of each slice. The timer
// repeats every millisecond, so a signal that lands just before the call blocks costs at most
// one more millisecond.
//
// Fair: the kernel wakes every waiter of a released flock and the first to run wins, so under
// contention one waiter can lose a hundred times in a row. When the lock file's first page is
// mapped, a waiter that has waited more than `kPriorityAfter` claims priority in it, the oldest
// claim winning; every other process that takes the lock while a live claim stands gives it
// back at once and waits for the claim to be served. A claim is live while its owner refreshes
// it (each slice) and exists: a waiter that was killed or stopped loses it within `kStale`.
//
// Bounded by progress, not by the clock alone: a holder records which thread holds the lock in
// the page. A waiter past its deadline looks at that thread (/proc/PID/task/TID/stat and
// schedstat) and waits on, up to the ceiling, while it makes progress: running or runnable, in
// a disk wait (an fsync on a loaded disk), or having run at all since the last look (schedstat's
// time on a CPU or its count of times put on one moved), or the lock changed hands. A holder
// that is stopped, gone, or asleep without once being woken ends the wait at the deadline.
//
// "Run at all", exactly, not "used CPU time" as stat's utime + stime count it: those are clock
// ticks (10 ms), and a holder woken often for microseconds at a time (preempted on a loaded
// machine, waiting on a pipe, or on another process's lock in a wait of its own, which wakes
// every slice) can use less than a tick over a whole bound, and looked idle. A thread that is
// woken is live and scheduled, not stopped or hung, so it counts; one that polls in a loop for
// something that never comes costs waiters the ceiling, as a spinning one always did. Stat's
// clock ticks are the measure only when schedstat cannot be read (no CONFIG_SCHED_INFO).
//
// The holding thread may also sleep, not woken at all, while another thread of its process does the
// work it waits for: it waits on a lock of its own process (a Mutex is a PI futex: the waiter
// sleeps until the owner lets go) whose owner, another thread (its change monitor reading a large
// suite, say), is preempted on a loaded machine. Sixteen writers beside two CPU hogs: each waiter
// seen giving up (at bounds of 0-215 ms) found the holding thread in rt_mutex_schedule and another
// thread of its process runnable; at a commit's 1 s bound, the likely cause of a `synchronize()`
// false seen once. So while the holding thread sleeps (S), another thread of its process that runs,
// is runnable or waits for the disk at the look counts too. Not one that merely ran since the last
// look: a process with a suite open has threads woken by other processes' commits (its change
// monitor), and an app has its own (a main loop, timers), so "some thread of it ran" is true of
// almost every live process and would turn the bound into the ceiling for a holding thread that is
// deadlocked. A thread of this process is never looked at so (the one looking is running, and the
// holder may be waiting on it).

enum {
  kClaimWord = 504,       // (start in ms << 24) | (pid & 0xFFFFFF) of the priority waiter, 0: none
  kClaimFreshWord = 505,  // CLOCK_MONOTONIC ns of the claim's last refresh
  kClaimServedWord = 506, // low 32 bits: a futex bumped whenever a claim is let go
  kHolderWord = 507,      // (pid << 32) | tid of the thread holding the lock, 0: none recorded
};
static const uint64_t kPriorityAfter = 50ull * 1000000ull;
static const uint64_t kStale = 250ull * 1000000ull;
static const uint64_t kSlice = 10ull * 1000000ull;

static int lock_signal_number(void) { return SIGRTMAX - 2; }

static void lock_signal_handler(int signo) { (void)signo; }

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_installed = 0;

static void install_handler(void) {
  struct sigaction current;
  if (sigaction(lock_signal_number(), NULL, &current) != 0) return;
  // Another part of the process owns the signal: leave it alone and poll instead.
  if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO)) return;
  struct sigaction action = {0};
  action.sa_handler = lock_signal_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the blocked flock must return EINTR
  if (sigaction(lock_signal_number(), &action, NULL) == 0) handler_installed = 1;
}

int cappgroups_lock_signal(void) { return lock_signal_number(); }

int cappgroups_lock_signal_ready(void) {
  pthread_once(&handler_once, install_handler);
  return handler_installed;
}

void lock_timer_init(struct lock_timer *t) {
  t->armed = 0;
  sigemptyset(&t->only);
  sigaddset(&t->only, lock_signal_number());
}

int lock_timer_ready(struct lock_timer *t) {
  if (t->armed) return 1;
  if (!cappgroups_lock_signal_ready()) return 0;
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = lock_signal_number();
  event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  if (timer_create(CLOCK_MONOTONIC, &event, &t->timer) != 0) return 0;
  t->armed = 1;
  // Dispatch's worker threads block every signal: let this one through while waiting.
  pthread_sigmask(SIG_UNBLOCK, &t->only, &t->previous);
  return 1;
}

int lock_timer_arm(struct lock_timer *t, uint64_t wake_ns) {
  struct itimerspec when;
  memset(&when, 0, sizeof when);
  when.it_value.tv_sec = (time_t)(wake_ns / 1000000000ull);
  when.it_value.tv_nsec = (long)(wake_ns % 1000000000ull);
  when.it_interval.tv_nsec = 1000000;
  return timer_settime(t->timer, TIMER_ABSTIME, &when, NULL) == 0 ? 0 : errno;
}

void lock_timer_disarm(struct lock_timer *t) {
  if (!t->armed) return;
  struct itimerspec off;
  memset(&off, 0, sizeof off);
  timer_settime(t->timer, 0, &off, NULL);
}

void lock_timer_finish(struct lock_timer *t) {
  if (!t->armed) return;
  timer_delete(t->timer);
  // Drop any signal the timer queued before it was deleted, then restore the mask.
  pthread_sigmask(SIG_BLOCK, &t->only, NULL);
  struct timespec zero = {0, 0};
  while (sigtimedwait(&t->only, NULL, &zero) > 0) {}
  pthread_sigmask(SIG_SETMASK, &t->previous, NULL);
  t->armed = 0;
}

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static uint64_t load(uint64_t *page, int word) { return __atomic_load_n(page + word, __ATOMIC_SEQ_CST); }

static void store(uint64_t *page, int word, uint64_t value) {
  __atomic_store_n(page + word, value, __ATOMIC_SEQ_CST);
}

static int claim_is_live(uint64_t *page, uint64_t claim, uint64_t now) {
  if (claim == 0) return 0;
  uint64_t fresh = load(page, kClaimFreshWord);
  if (now > fresh && now - fresh > kStale) return 0;
  pid_t pid = (pid_t)(claim & 0xFFFFFF);
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  return 1;
}

/// Whether another waiter's live claim asks this one to stand aside.
static int must_yield(uint64_t *page, uint64_t mine, uint64_t now) {
  if (!page) return 0;
  uint64_t claim = load(page, kClaimWord);
  return claim != 0 && claim != mine && claim_is_live(page, claim, now);
}

static void try_claim(uint64_t *page, uint64_t mine, uint64_t now) {
  uint64_t claim = load(page, kClaimWord);
  if (claim == mine) {
    store(page, kClaimFreshWord, now);
    return;
  }
  // The oldest waiter wins: take a free or dead claim, or one younger than this waiter's.
  if (claim == 0 || !claim_is_live(page, claim, now) || (claim >> 24) > (mine >> 24)) {
    if (__atomic_compare_exchange_n(page + kClaimWord, &claim, mine, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
      store(page, kClaimFreshWord, now);
    }
  }
}

static void release_claim(uint64_t *page, uint64_t mine) {
  if (!page) return;
  uint64_t expected = mine;
  if (__atomic_compare_exchange_n(page + kClaimWord, &expected, 0, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    uint32_t *served = (uint32_t *)(page + kClaimServedWord);
    __atomic_add_fetch(served, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, served, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  }
}

/// Waits (at most `slice_ns`) for the standing claim to be let go.
static void wait_for_claim(uint64_t *page, uint64_t slice_ns) {
  uint32_t *served = (uint32_t *)(page + kClaimServedWord);
  uint32_t seen = __atomic_load_n(served, __ATOMIC_SEQ_CST);
  if (load(page, kClaimWord) == 0) return;
  struct timespec timeout = {(time_t)(slice_ns / 1000000000ull), (long)(slice_ns % 1000000000ull)};
  syscall(SYS_futex, served, FUTEX_WAIT, seen, &timeout, NULL, 0);
}

/// What a waiter saw of the holder at its last look.
struct holder_sample {
  uint64_t holder;
  // How much the thread has run. With `kScheduled` set: from schedstat, the nanoseconds it
  // spent on a CPU plus the number of times it was put on one (both only grow, so the sum
  // moves whenever either does). Without it (no schedstat): utime + stime from stat, in clock
  // ticks. Two looks are compared only when both read the same one.
  uint64_t ran;
  int known;  // the thread's state letter at this look ('R', 'S', 'D', 'T', ...); 0: unread
};
static const uint64_t kScheduled = 1ull << 63;

/// Reads the small file `path` into `text` (`size` bytes with the terminating 0); its length,
/// or -1.
static ssize_t read_small(const char *path, char *text, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, text, size - 1);
  close(fd);
  if (n >= 0) text[n] = 0;
  return n;
}

/// Whether a thread of process `pid` other than `tid` runs or is runnable, or waits for the
/// disk, now.
static int other_thread_busy(unsigned pid, unsigned tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/task", pid);
  DIR *tasks = opendir(path);
  if (!tasks) return 0;
  int busy = 0;
  struct dirent *entry;
  while (!busy && (entry = readdir(tasks)) != NULL) {
    char *rest;
    unsigned long other = strtoul(entry->d_name, &rest, 10);
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || *rest != 0 || other == tid) continue;
    char file[96], text[512];
    snprintf(file, sizeof file, "/proc/%u/task/%lu/stat", pid, other);
    char *end = read_small(file, text, sizeof text) > 0 ? strrchr(text, ')') : NULL;
    busy = end && end[1] == ' ' && (end[2] == 'R' || end[2] == 'D');
  }
  closedir(tasks);
  return busy;
}

/// Looks at the thread recorded as holding the lock; whether it made progress since `last`
/// (see the top of this file). `last` becomes this look.
static int holder_progressed(uint64_t *page, struct holder_sample *last) {
  struct holder_sample now = {load(page, kHolderWord), 0, 0};
  int moving = 0;
  if (now.holder != 0) {
    char path[64];
    int at = snprintf(path, sizeof path, "/proc/%u/task/%u/", (unsigned)(now.holder >> 32),
                      (unsigned)(now.holder & 0xFFFFFFFFu));
    char text[512];
    snprintf(path + at, sizeof path - (size_t)at, "stat");
    ssize_t n = read_small(path, text, sizeof text);
    // "pid (comm) S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime"
    char *end = n > 0 ? strrchr(text, ')') : NULL;
    unsigned long utime = 0, stime = 0;
    if (end && end[1] == ' ' && end[2] != 0 &&
        sscanf(end + 3, "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2) {
      char state = end[2];
      now.known = (unsigned char)state;
      now.ran = (uint64_t)utime + (uint64_t)stime;
      // "on-cpu-ns runqueue-wait-ns times-run": exact, where clock ticks miss a thread that
      // runs for microseconds at a time.
      unsigned long long on_cpu = 0, queued = 0, runs = 0;
      snprintf(path + at, sizeof path - (size_t)at, "schedstat");
      if (read_small(path, text, sizeof text) > 0 &&
          sscanf(text, "%llu %llu %llu", &on_cpu, &queued, &runs) == 3) {
        now.ran = kScheduled | ((uint64_t)(on_cpu + runs) & ~kScheduled);
      }
      int ran = last->known && last->holder == now.holder && last->ran != now.ran &&
                (last->ran & kScheduled) == (now.ran & kScheduled);
      unsigned pid = (unsigned)(now.holder >> 32), tid = (unsigned)(now.holder & 0xFFFFFFFFu);
      moving = state == 'R' || state == 'D' ||
               (ran && state != 'T' && state != 't' && state != 'Z' && state != 'X') ||
               (state == 'S' && pid != (unsigned)getpid() && other_thread_busy(pid, tid));
    }
  }
  // The lock changed hands since the last look, or is changing them now: its last holder let
  // go (the word is cleared just before the unlock, and set by the next holder just after its
  // lock). A look that lands between the two sees no holder; under load the next holder can be
  // preempted there for a whole time slice, and every waiter looking then would give up while
  // the lock is moving. Two looks that both see none know nothing, and do not extend the wait.
  int handed_over = last->holder != 0 && last->holder != now.holder;
  *last = now;
  return moving || handed_over;
}

int cappgroups_lock_holder_progressed(uint64_t *page, uint64_t *holder, uint64_t *ran, int *known) {
  if (!page) return 0;
  struct holder_sample last = {*holder, *ran, *known};
  int progressed = holder_progressed(page, &last);
  *holder = last.holder;
  *ran = last.ran;
  *known = last.known;
  return progressed;
}

static void record_holder(uint64_t *page) {
  if (!page) return;
  uint64_t tid = (uint64_t)(uint32_t)syscall(SYS_gettid);
  store(page, kHolderWord, ((uint64_t)(uint32_t)getpid() << 32) | tid);
}

void cappgroups_funlock(int fd, uint64_t *page) {
  if (page) store(page, kHolderWord, 0);
  flock(fd, LOCK_UN);
}

static void sleep_ns(uint64_t ns) {
  struct timespec request = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  nanosleep(&request, NULL);
}

int cappgroups_flock_until(int fd, uint64_t deadline_ns, uint64_t ceiling_ns, uint64_t *page,
                           int *kernel_woken) {
  if (kernel_woken) *kernel_woken = 0;
  uint64_t start = monotonic_ns();
  uint64_t bound = deadline_ns > start ? deadline_ns - start : 0;
  struct holder_sample holder = {0, 0, 0};
  int looked = 0;
  uint64_t mine = ((start / 1000000ull) << 24) | ((uint64_t)getpid() & 0xFFFFFF);
  if (mine == 0) mine = 1;

  struct lock_timer timer;
  lock_timer_init(&timer);
  int result;
  long pause = 20000;  // for polling, when the timer's signal belongs to someone else

  for (;;) {
    uint64_t now = monotonic_ns();
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (!must_yield(page, mine, now)) { record_holder(page); result = 0; break; }
      flock(fd, LOCK_UN);  // a waiter older than this one goes first
    } else if (errno != EWOULDBLOCK && errno != EINTR) {
      result = errno;
      break;
    }
    now = monotonic_ns();
    if (page && !looked && ceiling_ns > deadline_ns) {
      holder_progressed(page, &holder);  // the first look, to compare the next with
      looked = 1;
    }
    if (now >= deadline_ns) {
      // Past the bound: on for another bound while the holder makes progress.
      if (!looked || now >= ceiling_ns || !holder_progressed(page, &holder)) {
        result = ETIMEDOUT;
        break;
      }
      deadline_ns = now + bound < ceiling_ns ? now + bound : ceiling_ns;
    }
    uint64_t left = deadline_ns - now;
    uint64_t slice = left < kSlice ? left : kSlice;
    if (page && now - start >= kPriorityAfter) try_claim(page, mine, now);
    if (must_yield(page, mine, now)) {
      lock_timer_disarm(&timer);  // no ticks while waiting on the futex
      wait_for_claim(page, slice);
      continue;
    }
    if (!lock_timer_ready(&timer)) {
      sleep_ns(slice < (uint64_t)pause ? slice : (uint64_t)pause);
      pause = pause * 2 > 2000000 ? 2000000 : pause * 2;
      continue;
    }
    if ((result = lock_timer_arm(&timer, now + slice)) != 0) break;
    if (kernel_woken) *kernel_woken = 1;
    if (flock(fd, LOCK_EX) == 0) {
      if (!must_yield(page, mine, monotonic_ns())) { record_holder(page); result = 0; break; }
      flock(fd, LOCK_UN);
    } else if (errno != EINTR) {
      result = errno;
      break;
    }
  }

  lock_timer_finish(&timer);
  release_claim(page, mine);
  return result;
}
