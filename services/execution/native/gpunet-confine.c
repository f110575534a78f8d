/*
 * gpunet-confine: starts one run of a job confined, in a single process that then execs the job
 * (so the job keeps the pid, and the process group, that the agent spawned).
 *
 * It does what the util-linux chain does (unshare → sh confine script → ip → mount × 6 → prlimit
 * → setpriv), in the same order and with the same effect, without starting ten processes: on a
 * machine where an exec costs ~5 ms that chain is most of an agent's CPU per job (decision 0049).
 *
 *   gpunet-confine [option]... -- command [arg]...
 *
 *   cgroup=<cgroup.procs>     join this cgroup before anything else (repeatable)
 *   ns=mount|ipc|net          new namespace (repeatable); ns=mount makes every mount private
 *   lo                        bring the loopback interface of the (new) network namespace up
 *   keep=<dir>                a tmpfs over a parent of <dir> gets <dir> bound back in
 *   tmpfs=<bytes>:<path>      a private tmpfs (mode 1777, nosuid, nodev) on <path>, if it is a directory
 *   mqueue=<path>             a private POSIX message queue file system on <path>, if it is a directory
 *   rlimit=<name>:<value>     soft and hard limit; name is nproc, as, nofile, fsize or core
 *   user=<uid>:<gid>          become uid/gid with no supplementary groups, then no_new_privs
 *
 * Every option is applied in the order above, whatever the order given. Exit 125 when the
 * confinement cannot be set up (a message starting "[gpunet]" on stderr); 126 or 127 when the
 * command cannot be executed, like a shell.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ITEMS 32

static void fail(const char *fmt, ...) {
  va_list ap;
  int saved = errno;
  fputs("[gpunet] ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (saved != 0) fprintf(stderr, ": %s", strerror(saved));
  fputc('\n', stderr);
  exit(125);
}

/* A decimal number without sign, spaces or overflow; fails naming the option otherwise. */
static unsigned long long number(const char *text, const char *option) {
  char *end = NULL;
  if (*text < '0' || *text > '9') { errno = 0; fail("%s: not a number", option); }
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') { errno = 0; fail("%s: not a number", option); }
  return value;
}

static const char *after(const char *arg, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(arg, prefix, n) == 0 ? arg + n : NULL;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether `path` lies strictly under the directory `dir`. */
static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* mkdir -p with mode 0711 (as the script's `umask 066 && mkdir -p`). */
static void make_dirs(const char *path) {
  char buf[PATH_MAX];
  if (strlen(path) >= sizeof buf) { errno = ENAMETOOLONG; fail("cannot make %s", path); }
  strcpy(buf, path);
  for (char *p = buf + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0711) != 0 && errno != EEXIST) fail("cannot make %s", buf);
      *p = c;
      if (c == '\0') break;
    }
  }
}

static void write_pid(const char *file) {
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("could not join cgroup %s", file);
  char text[32];
  int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
  if (write(fd, text, (size_t)n) != n) fail("could not join cgroup %s", file);
  if (close(fd) != 0) fail("could not join cgroup %s", file);
}

static void loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) fail("could not bring loopback up");
  struct ifreq req;
  memset(&req, 0, sizeof req);
  strcpy(req.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &req) != 0) fail("could not bring loopback up");
  req.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &req) != 0) fail("could not bring loopback up");
  close(s);
}

struct rlimit_name { const char *name; int resource; };
static const struct rlimit_name RLIMITS[] = {
  { "nproc", RLIMIT_NPROC }, { "as", RLIMIT_AS }, { "nofile", RLIMIT_NOFILE }, { "fsize", RLIMIT_FSIZE }, { "core", RLIMIT_CORE },
};

int main(int argc, char **argv) {
  const char *cgroups[MAX_ITEMS], *tmpfs[MAX_ITEMS], *rlimits[MAX_ITEMS];
  int ncgroups = 0, ntmpfs = 0, nrlimits = 0;
  int flags = 0, lo = 0, have_user = 0;
  const char *keep = NULL, *mqueue = NULL;
  uid_t uid = 0;
  gid_t gid = 0;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *a = argv[i], *v;
    if ((v = after(a, "cgroup=")) != NULL) {
      if (ncgroups == MAX_ITEMS) fail("too many cgroups");
      cgroups[ncgroups++] = v;
    } else if ((v = after(a, "ns=")) != NULL) {
      if (strcmp(v, "mount") == 0) flags |= CLONE_NEWNS;
      else if (strcmp(v, "ipc") == 0) flags |= CLONE_NEWIPC;
      else if (strcmp(v, "net") == 0) flags |= CLONE_NEWNET;
      else fail("%s: unknown namespace (mount, ipc or net)", a);
    } else if (strcmp(a, "lo") == 0) {
      lo = 1;
    } else if ((v = after(a, "keep=")) != NULL) {
      if (*v != '/') fail("%s: not an absolute path", a);
      keep = v;
    } else if ((v = after(a, "tmpfs=")) != NULL) {
      const char *colon = strchr(v, ':');
      if (colon == NULL || colon[1] != '/') fail("%s: expected tmpfs=<bytes>:<absolute path>", a);
      if (ntmpfs == MAX_ITEMS) fail("too many tmpfs");
      tmpfs[ntmpfs++] = v;
    } else if ((v = after(a, "mqueue=")) != NULL) {
      if (*v != '/') fail("%s: not an absolute path", a);
      mqueue = v;
    } else if ((v = after(a, "rlimit=")) != NULL) {
      if (nrlimits == MAX_ITEMS) fail("too many rlimits");
      rlimits[nrlimits++] = v;
    } else if ((v = after(a, "user=")) != NULL) {
      char text[64];
      const char *colon = strchr(v, ':');
      if (colon == NULL || (size_t)(colon - v) >= sizeof text) fail("%s: expected user=<uid>:<gid>", a);
      memcpy(text, v, (size_t)(colon - v));
      text[colon - v] = '\0';
      unsigned long long u = number(text, a), g = number(colon + 1, a);
      if (u == 0 || g == 0 || u >= UINT32_MAX || g >= UINT32_MAX) { errno = 0; fail("%s: uid and gid must be positive and never root", a); }
      uid = (uid_t)u;
      gid = (gid_t)g;
      have_user = 1;
    } else {
      errno = 0;
      fail("unknown option %s", a);
    }
  }
  if (i + 1 >= argc) { errno = 0; fail("no command after --"); }
  char **command = argv + i + 1;
  if ((ntmpfs > 0 || mqueue != NULL) && !(flags & CLONE_NEWNS)) { errno = 0; fail("tmpfs and mqueue need ns=mount"); }
  if (lo && !(flags & CLONE_NEWNET)) { errno = 0; fail("lo needs ns=net"); }

  for (int k = 0; k < ncgroups; k++) write_pid(cgroups[k]);

  char wd[PATH_MAX];
  if (getcwd(wd, sizeof wd) == NULL) fail("cannot tell the working directory");
  if (flags != 0 && unshare(flags) != 0) fail("could not make new namespaces");
  if ((flags & CLONE_NEWNS) && mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("could not make the mounts private");
  if (lo) loopback_up();

  for (int k = 0; k < ntmpfs; k++) {
    const char *colon = strchr(tmpfs[k], ':');
    char size[32];
    if ((size_t)(colon - tmpfs[k]) >= sizeof size) { errno = 0; fail("tmpfs=%s: size too long", tmpfs[k]); }
    memcpy(size, tmpfs[k], (size_t)(colon - tmpfs[k]));
    size[colon - tmpfs[k]] = '\0';
    unsigned long long bytes = number(size, tmpfs[k]);
    const char *path = colon + 1;
    if (!is_dir(path)) continue;
    int kept = keep != NULL && under(keep, path);
    /* The run's own directory, held open before the tmpfs hides it, to be bound back in. */
    int keep_fd = -1;
    if (kept && (keep_fd = open(keep, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) fail("cannot enter %s", keep);
    char data[96];
    snprintf(data, sizeof data, "size=%llu,mode=1777", bytes);
    if (mount("gpunet-tmp", path, "tmpfs", MS_NOSUID | MS_NODEV, data) != 0) fail("could not mount a private %s", path);
    if (kept) {
      make_dirs(keep);
      char source[64];
      snprintf(source, sizeof source, "/proc/self/fd/%d", keep_fd);
      if (mount(source, keep, NULL, MS_BIND, NULL) != 0) fail("could not keep %s under the private %s", keep, path);
      close(keep_fd);
    }
  }
  if (mqueue != NULL && is_dir(mqueue)) {
    if (mount("gpunet-mqueue", mqueue, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) fail("could not mount a private %s", mqueue);
  }
  if (chdir(wd) != 0) fail("cannot enter %s", wd);

  for (int k = 0; k < nrlimits; k++) {
    const char *colon = strchr(rlimits[k], ':');
    if (colon == NULL) { errno = 0; fail("rlimit=%s: expected rlimit=<name>:<value>", rlimits[k]); }
    int resource = -1;
    for (size_t r = 0; r < sizeof RLIMITS / sizeof RLIMITS[0]; r++) {
      if (strlen(RLIMITS[r].name) == (size_t)(colon - rlimits[k]) && strncmp(RLIMITS[r].name, rlimits[k], (size_t)(colon - rlimits[k])) == 0) resource = RLIMITS[r].resource;
    }
    if (resource < 0) { errno = 0; fail("rlimit=%s: unknown limit (nproc, as, nofile, fsize or core)", rlimits[k]); }
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = (rlim_t)number(colon + 1, rlimits[k]);
    if (setrlimit(resource, &limit) != 0) fail("could not set the limit %s", rlimits[k]);
  }

  if (have_user) {
    if (setgroups(0, NULL) != 0) fail("could not clear the supplementary groups");
    if (setresgid(gid, gid, gid) != 0) fail("could not become group %lu", (unsigned long)gid);
    if (setresuid(uid, uid, uid) != 0) fail("could not become user %lu", (unsigned long)uid);
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) { errno = 0; fail("still not user %lu", (unsigned long)uid); }
    if (setuid(0) == 0) { errno = 0; fail("could get root back after becoming user %lu", (unsigned long)uid); }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("could not set no_new_privs");
  }

  execvp(command[0], command);
  int code = errno == ENOENT ? 127 : 126;
  fprintf(stderr, "[gpunet] cannot execute %s: %s\n", command[0], strerror(errno));
  return code;
}
