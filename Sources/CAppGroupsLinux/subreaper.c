#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int cappgroups_become_child_subreaper(void) {
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

// The tied program's keeper: a child of the caller that starts the program as its own child
// and outlives neither. The program runs with every signal at its default and none blocked;
// the keeper blocks every signal and waits for two: SIGCHLD, and SIGTERM, which the kernel
// sends it when the caller ends (PR_SET_PDEATHSIG), SIGKILL included. The keeper is a child
// subreaper, so that every process the program starts, at any depth, comes back to it as an
// orphan when its parent ends (a double fork, setsid(2) too): when the caller ends, or when
// the program exits, the keeper kills each of its children with SIGKILL, reaps them, and
// again, until it has none. It holds the caller's descriptors (it never calls execve), so an
// open-file-description lock the caller held is released only once the program's whole tree
// is gone. Then it exits as the program did: with its exit status, or by its signal.
//
// Only async-signal-safe calls in the keeper (the child of a process with other threads): it
// reads its children's pids from /proc/self/task/PID/children with open(2) and read(2).

/// Sends SIGKILL to each child of the keeper `self` listed in /proc; how many it sent to, or
/// -1 when the list cannot be read.
static int kill_children(pid_t self) {
  char path[64] = "/proc/self/task/";
  char digits[16];
  int length = 0;
  for (pid_t rest = self; rest > 0 && length < 15; rest /= 10) digits[length++] = (char)('0' + rest % 10);
  size_t at = strlen(path);
  while (length > 0) path[at++] = digits[--length];
  memcpy(path + at, "/children", sizeof "/children");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int sent = 0;
  pid_t pid = 0;
  char buffer[512];
  for (;;) {
    ssize_t count = read(fd, buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    for (ssize_t index = 0; index < count; index++) {
      char c = buffer[index];
      if (c >= '0' && c <= '9') {
        pid = pid * 10 + (c - '0');
      } else if (pid > 0) {
        if (kill(pid, SIGKILL) == 0) sent++;
        pid = 0;
      }
    }
  }
  if (pid > 0 && kill(pid, SIGKILL) == 0) sent++;
  close(fd);
  return sent;
}

/// Kills and reaps every child of the keeper until it has none; `*program_status` is set
/// when the program (`program`) is reaped on the way.
static void end_tree(pid_t self, pid_t program, int *program_status, int *program_done) {
  for (;;) {
    int sent = kill_children(self);
    int status;
    // Blocking when a child was just killed (one will end); else a look, and a short pause
    // for a child that came back between the list and the look.
    pid_t pid = waitpid(-1, &status, sent > 0 ? 0 : WNOHANG);
    if (pid < 0 && errno == ECHILD) return;
    if (pid == program && !*program_done) {
      *program_status = status;
      *program_done = 1;
    }
    if (pid == 0) {
      if (sent < 0) kill(program, SIGKILL);
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
    }
  }
}

int cappgroups_spawn_tied(const char *path, char *const argv[], char *const envp[]) {
  pid_t parent = getpid();
  pid_t keeper = fork();
  if (keeper != 0) return keeper;
  // The keeper. Signals at their defaults (for the program), every one blocked here.
  struct sigaction initial;
  memset(&initial, 0, sizeof initial);
  initial.sa_handler = SIG_DFL;
  for (int signo = 1; signo < NSIG; signo++) {
    if (signo != SIGKILL && signo != SIGSTOP) sigaction(signo, &initial, NULL);
  }
  sigset_t all, none, heard;
  sigfillset(&all);
  sigemptyset(&none);
  sigemptyset(&heard);
  sigaddset(&heard, SIGCHLD);
  sigaddset(&heard, SIGTERM);
  sigprocmask(SIG_SETMASK, &all, NULL);
  // Told when the caller ends; if it ended before this was set, end now.
  if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0 || getppid() != parent) _exit(127);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) _exit(127);
  pid_t self = getpid();
  pid_t program = fork();
  if (program < 0) _exit(127);
  if (program == 0) {
    sigprocmask(SIG_SETMASK, &none, NULL);
    // Killed when the keeper ends; if it ended before this was set, end now.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != self) _exit(127);
    execve(path, argv, envp);
    _exit(127);
  }
  int status = 0, done = 0;
  while (!done) {
    siginfo_t info;
    int signo = sigwaitinfo(&heard, &info);
    if (signo == SIGTERM && getppid() != parent) {
      // The caller ended: nothing of the program may outlive what it held.
      end_tree(self, program, &status, &done);
      _exit(128 + SIGKILL);
    }
    if (signo != SIGCHLD) continue;
    int reaped;
    pid_t pid;
    while ((pid = waitpid(-1, &reaped, WNOHANG)) > 0) {
      if (pid == program) {
        status = reaped;
        done = 1;
      }
    }
  }
  // The program ended: what it left running ends with it.
  end_tree(self, program, &status, &done);
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int signo = WTERMSIG(status);
  // Ended as the program was, without a core file of its own.
  struct rlimit none_core = {0, 0};
  setrlimit(RLIMIT_CORE, &none_core);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  sigaction(signo, &initial, NULL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  sigprocmask(SIG_UNBLOCK, &only, NULL);
  kill(self, signo);
  _exit(128 + signo);
}
