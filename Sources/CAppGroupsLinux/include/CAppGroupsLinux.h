// CAppGroupsLinux: the Linux calls and fields Swift cannot reach directly.
//
// Everything else (inotify_init1, inotify_add_watch, flock, poll, rename,
// fsync, mmap) imports into Swift through Glibc and is called from Swift.
#ifndef CAPPGROUPS_LINUX_H
#define CAPPGROUPS_LINUX_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/inotify.h>
// eventfd is not part of Glibc's Swift module; including it here makes
// eventfd() and EFD_CLOEXEC visible to Swift through this module.
#include <sys/eventfd.h>
// Likewise getxattr, setxattr and fsetxattr (a file's protection class is an extended
// attribute): <sys/xattr.h> is not part of Glibc's Swift module.
#include <sys/xattr.h>

/// Sequentially consistent 64-bit load from shared memory (a mapped file).
/// Swift's Synchronization.Atomic cannot be placed at an arbitrary address.
uint64_t cappgroups_atomic_load_u64(const uint64_t *address);

/// Sequentially consistent 64-bit store to shared memory (a mapped file).
void cappgroups_atomic_store_u64(uint64_t *address, uint64_t value);

/// Sequentially consistent 64-bit fetch-and-add on shared memory; returns the new value.
uint64_t cappgroups_atomic_add_u64(uint64_t *address, uint64_t value);

/// Full memory fence, for the seqlock around the token record.
void cappgroups_atomic_fence(void);

/// Tells the thread sanitizer, when the process runs under it, that the
/// calling thread acquired (or is about to release) the lock at `address`.
/// Swift's Synchronization.Mutex locks with futexes inside the standard
/// library, which the sanitizer does not see. No-ops in a normal build.
void cappgroups_sanitizer_acquire(void *address);
void cappgroups_sanitizer_release(void *address);

/// Takes an exclusive flock(2) on `fd`, waiting in the kernel until `deadline_ns`
/// (CLOCK_MONOTONIC) at most: a blocking flock has no timeout, and Swift cannot fill in
/// the `sigevent` of a per-thread timer (`sigev_notify_thread_id`) that cuts it short, nor
/// call futex(2). With `page` (the lock file's first page, mapped shared), a waiter that has
/// waited long claims priority there (words 504-506), so that waits are fair across
/// processes; the holder records its thread there (word 507), and a waiter past
/// `deadline_ns` waits on, until `ceiling_ns` at most, while that thread makes progress
/// (running, in a disk wait, or run at all since the last look; or, while it sleeps, another
/// thread of its process running or in a disk wait: read from /proc). Returns 0 when the lock
/// is held, ETIMEDOUT at the deadline, or the errno of the failure.
/// `*kernel_woken` says whether the wait blocked in the kernel (it polls only when another
/// part of the process owns the timer's signal, see `cappgroups_lock_signal`).
int cappgroups_flock_until(int fd, uint64_t deadline_ns, uint64_t ceiling_ns, uint64_t *page,
                           int *kernel_woken);

/// Releases a flock taken by `cappgroups_flock_until`, clearing the holder it recorded in
/// `page` (when mapped) first.
void cappgroups_funlock(int fd, uint64_t *page);

/// Looks at the thread `page` records as holding its lock (word 507): 1 when it made progress
/// since the look `*holder`, `*ran` and `*known` describe (running, in a disk wait, run at all:
/// its time on a CPU or its count of times put on one moved; asleep while another thread of
/// its process, not this one, runs or waits for the disk; or the thread of that look no
/// longer holds it), as `cappgroups_flock_until` judges a holder; 0 otherwise, and when neither
/// look saw a holder. The three become this look (all zero: none yet; `*ran` is how much the
/// thread has run, from /proc/PID/task/TID/schedstat, else stat's clock ticks; `*known` is the
/// thread's state letter from /proc, 0 when it was not read).
int cappgroups_lock_holder_progressed(uint64_t *page, uint64_t *holder, uint64_t *ran, int *known);

/// The real-time signal whose empty handler cuts a lock wait short (SIGRTMAX - 2).
int cappgroups_lock_signal(void);

/// Installs that signal's empty handler once, unless another part of the process owns the
/// signal; whether it is installed (a waiter then blocks in the kernel; else it polls).
int cappgroups_lock_signal_ready(void);
// MARK: Landlock (landlock.c)
//
// The three Landlock system calls have no C library wrapper and syscall(2)
// is variadic, which Swift cannot call. Each returns what the kernel returns
// (-1 with errno on failure). The access-right bits are LANDLOCK_ACCESS_FS_*
// from <linux/landlock.h>; the Swift side names them, including those newer
// than the installed header (TRUNCATE, ABI 3; IOCTL_DEV, ABI 5).

/// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): the
/// highest Landlock ABI the running kernel offers, or -1 (ENOSYS: not built
/// in; EOPNOTSUPP: built in but turned off at boot).
int cappgroups_landlock_abi_version(void);

/// landlock_create_ruleset(2): a ruleset that denies every file-system
/// right in `handled_access_fs` except where a rule allows it, and, from
/// ABI 6, what `scoped` names (LANDLOCK_SCOPE_*: signals and abstract Unix
/// sockets to processes outside the sandbox; 0 for none). The structure
/// grew past the installed header. Returns its descriptor (close-on-exec), or -1.
int cappgroups_landlock_create_ruleset(uint64_t handled_access_fs, uint64_t scoped);

/// landlock_add_rule(2) with LANDLOCK_RULE_PATH_BENEATH: allows
/// `allowed_access` on the file or folder open at `parent_fd` (O_PATH is
/// enough) and everything beneath it. The attribute structure is packed,
/// which Swift cannot lay out.
int cappgroups_landlock_add_path_rule(int ruleset_fd, int parent_fd, uint64_t allowed_access);

/// open(2), not variadic: Swift reaches the C library's variadic `open` only through the Glibc
/// overlay's wrapper, a second function (and a second lazy binding at a process's first open)
/// in front of the same call. `mode` is used when `flags` create a file. Returns the
/// descriptor, or -1 with errno.
int cappgroups_open(const char *path, int flags, uint32_t mode);

/// open(path, O_PATH | O_CLOEXEC): a descriptor that names a file or folder
/// without reading it, for a rule. O_PATH is a GNU extension that Swift's
/// Glibc module does not export. Returns the descriptor, or -1.
int cappgroups_open_path(const char *path);

/// Sets no_new_privs (prctl(2) is variadic and not in Swift's Glibc module),
/// then landlock_restrict_self(2): the calling thread, and the threads and
/// processes it creates afterwards, are confined by the ruleset from now on.
/// Other threads are not, unless `flags` holds the kernel's all-threads flag.
int cappgroups_landlock_restrict_self(int ruleset_fd, uint32_t flags);

/// Installs a seccomp filter (keyringfilter.c) that leaves the calling thread (every thread
/// with `all_threads`), and the processes it starts, the keyctl(2) operations that find and
/// read a key (KEYCTL_GET_KEYRING_ID, DESCRIBE, READ, GET_SECURITY, SEARCH without a
/// destination keyring) and refuses the others, add_key(2) and request_key(2), with EPERM:
/// Landlock does not enclose the kernel's keyring. Returns 0, or -1 with errno.
int cappgroups_keyring_read_only(uint32_t all_threads);

// MARK: Descriptors (descriptors.c)

/// Marks every descriptor from `lowest` up close-on-exec, so that an execve(2) closes them
/// all and the program starts with the ones below `lowest` alone:
/// close_range(lowest, ~0U, CLOSE_RANGE_CLOEXEC) (Linux 5.11), else each descriptor
/// /proc/self/fd lists, else every number below RLIMIT_NOFILE, with fcntl(2) (variadic,
/// which Swift cannot call). Not closed at once: other threads may still be using them, and
/// when the exec fails they stay open. With `keep_parent_socket`, a connected Unix socket
/// whose peer is the parent process (SO_PEERCRED; for a socketpair(2), the process that made
/// it) is kept: Foundation's Process learns that its child exited when its end closes. A
/// listening socket is never kept: it would hand the program the parent's clients. Returns 0,
/// or -1 with errno.
int cappgroups_close_on_exec_from(int lowest, int keep_parent_socket);

/// Flushes the C library's standard output stream (where Swift's print writes) and says whether
/// everything written to it since the process started reached descriptor 1: 0 when it did,
/// else the errno of the failed write (EIO when an earlier flush failed and its errno is gone).
/// Swift 6 cannot name C's `stdout` (a mutable global).
int cappgroups_flush_stdout(void);

/// An unnamed regular file in the folder `path` (relative to the folder open as `directory`,
/// or AT_FDCWD), open for writing (openat(2) with O_TMPFILE | O_WRONLY | O_CLOEXEC, mode
/// `mode`; Linux 3.11, where the file system supports it): its writes and its close make no
/// event on a watch of the folder that excludes unlinked entries (IN_EXCL_UNLINK), and a crash
/// before it is named leaves nothing. (Its metadata changes, such as futimens(2), are still
/// reported.) Returns the descriptor, or -1 with errno (EOPNOTSUPP or EISDIR where unnamed
/// files are not supported).
int cappgroups_open_unnamed(int directory, const char *path, uint32_t mode);

/// Gives the unnamed file `fd` (see cappgroups_open_unnamed) the name `path` (relative to the
/// folder open as `directory`, or AT_FDCWD), which must not exist: linkat(2) with
/// AT_EMPTY_PATH, else (without the privilege it needs on older kernels) through
/// /proc/self/fd. Returns 0, or -1 with errno.
int cappgroups_link_unnamed(int fd, int directory, const char *path);

/// Removes every entry of the folder open as `directory` whose name starts with `prefix`
/// (unlinkat(2); a folder among them stays), reading the folder with getdents64(2) through
/// that descriptor from its offset (a descriptor just opened: the start), which is left at the
/// folder's end: no second open, no directory stream (whose fdopendir(3) costs an fstat(2) and
/// two fcntl(2)s). Returns how many were removed, or -1 with errno when the folder cannot be
/// read.
int cappgroups_remove_prefixed(int directory, const char *prefix);

// MARK: The kernel's key retention service (keyring.c)
//
// add_key(2) and keyctl(2) have no C library wrapper and syscall(2) is variadic. The device's
// class keys, once unwrapped, live in the user's keyring (see man 7 keyrings), never in a
// file. Each returns what the kernel returns (-1 with errno on failure).

/// The user keyring (`KEY_SPEC_USER_KEYRING`), as the special id the calls below accept.
#define CAPPGROUPS_KEY_SPEC_USER_KEYRING (-4)

/// add_key(2): adds (or updates) a key of `type` ("user" or "keyring") with `description`
/// and `payload` to `keyring`. Returns its serial number.
int32_t cappgroups_add_key(const char *type, const char *description, const void *payload,
                           size_t length, int32_t keyring);

/// keyctl(KEYCTL_SEARCH): the key of `type` and `description` found in `keyring` or a
/// keyring linked from it. ENOKEY when there is none; EKEYEXPIRED when its timeout passed.
int32_t cappgroups_keyctl_search(int32_t keyring, const char *type, const char *description);

/// keyctl(KEYCTL_READ): copies up to `length` bytes of the key's payload (a keyring's: the
/// serial numbers it links); returns the payload's whole length.
long cappgroups_keyctl_read(int32_t key, void *buffer, size_t length);

/// keyctl(KEYCTL_DESCRIBE): "type;uid;gid;perm;description", NUL-terminated; returns the
/// length it needs.
long cappgroups_keyctl_describe(int32_t key, char *buffer, size_t length);

/// keyctl(KEYCTL_SET_TIMEOUT): the key expires `seconds` from now (0: never).
int cappgroups_keyctl_set_timeout(int32_t key, unsigned int seconds);

/// keyctl(KEYCTL_INVALIDATE): the key is gone at once, from every keyring.
int cappgroups_keyctl_invalidate(int32_t key);

/// keyctl(KEYCTL_CLEAR): unlinks every key from `keyring`.
int cappgroups_keyctl_clear(int32_t keyring);

/// keyctl(KEYCTL_UNLINK): unlinks `key` from `keyring`.
int cappgroups_keyctl_unlink(int32_t key, int32_t keyring);

/// keyctl(KEYCTL_GET_KEYRING_ID) of the user keyring, created if need be.
int32_t cappgroups_keyctl_user_keyring(void);

/// pidfd_open(2) (no C library wrapper in older glibc): a descriptor that polls readable
/// when process `pid` ends, whether or not it is a child. Close-on-exec. -1 with errno.
int cappgroups_pidfd_open(int32_t pid);

// MARK: File coordination (ofdlock.c)

/// One step of a coordinated access's locks on its container's claims file: an open file
/// description lock (fcntl F_OFD_SETLK, a GNU extension Swift's Glibc module does not show)
/// of `type` F_RDLCK or F_WRLCK on `length` bytes from `start`, or F_UNLCK to let such a
/// range go again.
struct cappgroups_lock_step {
  int16_t type;
  int64_t start;
  int64_t length;
};

/// Takes the steps in order on `fd`, each waiting in the kernel (F_OFD_SETLKW) until the
/// bytes are free or `deadline_ns` (CLOCK_MONOTONIC) passes: fcntl(2) is variadic and has no
/// timeout, so a per-thread timer cuts the wait short, as for cappgroups_flock_until.
/// `*done` is the number of steps taken. Returns 0, ETIMEDOUT at the deadline, or the errno
/// of the failure. The locks belong to the open file description: closing its last
/// descriptor, or the death of the process, releases them all.
int cappgroups_ofd_lock_steps_until(int fd, const struct cappgroups_lock_step *steps, int count,
                                    uint64_t deadline_ns, int *done);

/// F_OFD_GETLK for `type` on `length` bytes from `start`: 0 when they could be locked now,
/// 1 when another open file description holds a conflicting lock (`*holder_type` its type),
/// -1 with errno on failure.
int cappgroups_ofd_test(int fd, int16_t type, int64_t start, int64_t length, int16_t *holder_type);

// MARK: Process tree (subreaper.c)

/// prctl(PR_SET_CHILD_SUBREAPER, 1) (variadic, which Swift cannot call): an orphaned
/// descendant of this process (its parent exited: a double fork) becomes this process's
/// child rather than init's. Kept across execve(2). Returns 0, or -1 with errno.
int cappgroups_become_child_subreaper(void);

/// Starts the program at `path` (argv, envp as execve(2) takes them) tied to this process,
/// with every process it starts: a keeper child (the pid returned) runs it as its own child
/// and, as a child subreaper, gets back every orphan of the program's tree. When this process
/// ends, whatever ends it (SIGKILL included: prctl(2) PR_SET_PDEATHSIG), and when the program
/// exits, the keeper kills (SIGKILL) and reaps every process left of that tree, then exits as
/// the program did (its status, or its signal); 127 when execve fails. The keeper keeps this
/// process's descriptors until then, so a lock held on one outlasts the tree. Every signal
/// starts at its default and none is blocked in the program. Not covered: a process the tree
/// had another process start (a daemon, `systemd-run`), and the tree when the keeper itself is
/// killed with SIGKILL (the program then is, its descendants are not). Returns the keeper's pid,
/// or -1 with errno (fork).
int cappgroups_spawn_tied(const char *path, char *const argv[], char *const envp[]);

// MARK: Signals heard through a descriptor (notice.c)

/// Installs a handler for `signo` (SA_RESTART) that counts the signal and writes 1 to `fd`
/// (an eventfd), so that a thread polling `fd` hears it. Returns 0, or -1 with errno.
int cappgroups_notice_install(int signo, int fd);

/// Stops the handler's writes (it still counts) and waits for a write already under way on
/// another thread: the descriptor can be closed when it returns.
void cappgroups_notice_detach(void);

/// The number of signals the handler counted since the last call, and resets it to zero.
uint64_t cappgroups_notice_take(void);

/// Installs a handler for `signo` (SA_RESTART) that only records that the signal came, for
/// `cappgroups_interrupted`: a process that lets its work end before it looks. Returns 0, or
/// -1 with errno.
int cappgroups_interruption_install(int signo);

/// Whether a signal `cappgroups_interruption_install` took has come (1) or not (0).
int cappgroups_interrupted(void);

/// Unblocks `signo` in the calling thread. Returns 0 or an error number.
int cappgroups_unblock_signal(int signo);

/// Whether the calling thread blocks `signo` (1; also when it cannot be looked at), or not (0;
/// also when `signo` is no signal number).
int cappgroups_signal_blocked(int signo);

// MARK: A thread that waits before it runs (thread.c)

/// Starts a thread that first waits until `first` or `second` is readable (poll(2); a
/// negative descriptor is ignored), touching nothing else (no allocation, no Swift code), and
/// then calls `body(argument)`. Returns 0 or an error number, as pthread_create(3).
int cappgroups_thread_start_waiting(
    pthread_t *thread, void *(*body)(void *), void *argument, int first, int second);

// MARK: Folders (folders.c)

/// Whether `path` is a folder reached from `/` (or the current directory) through real folders
/// only: one openat2(2) with RESOLVE_NO_SYMLINKS, which refuses a symbolic link at any level.
/// 1 when it is; 0 when it is not or cannot be told (missing, a link or a file on the way, no
/// permission, or a kernel before Linux 5.6 or a filter that refuses the call).
int cappgroups_is_folder_without_links(const char *path);

#endif
