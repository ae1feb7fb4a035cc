#ifndef _GNU_SOURCE
#error You must define _GNU_SOURCE
#endif
#include "CAppGroupsLinux.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int cappgroups_become_child_subreaper(void) {
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

int cappgroups_spawn_tied(const char *path, char *const argv[], char *const envp[]) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  // The child of a process with other threads: only async-signal-safe calls until execve.
  struct sigaction initial;
  memset(&initial, 0, sizeof initial);
  initial.sa_handler = SIG_DFL;
  for (int signo = 1; signo < NSIG; signo++) {
    if (signo != SIGKILL && signo != SIGSTOP) sigaction(signo, &initial, NULL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  // Killed when the parent ends; if it ended before this was set, end now.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(127);
  execve(path, argv, envp);
  _exit(127);
}
