/*
 * sim_registry.c — where the simulator's shared registry lives, and how a process finds it.
 *
 * DESIGN. Every process that calls urma_init maps the registry (sim_internal.h), so three
 * threats decide its shape:
 *
 * 1. Another user must never be a peer. /dev/shm is world-writable and the namespace name is
 *    predictable, so a name there can be created first by anyone. The registry therefore has NO
 *    name in /dev/shm: it is a memfd. What /dev/shm holds is a per-user rendezvous directory,
 *    "/dev/shm/verbus-urma-sim.v<layout>.<namespace>", that must be a real directory (lstat, and
 *    opened O_NOFOLLOW | O_DIRECTORY, then fstat of the fd: same inode), owned by geteuid() and
 *    of mode 0700, so no other user can create, read or replace anything inside it. A name that
 *    another user took first (file, symlink, directory) is never opened: the next candidate,
 *    "<name>~1" .. "<name>~7", is used instead — every process of the user scans all candidates
 *    and takes the LOWEST one it owns, so they all meet in the same directory — and when all are
 *    taken urma_init fails naming the first squatter, its owner uid and its mode. (One race is
 *    left: a squatter deleting its name exactly while two processes create the next candidate
 *    can split them into two registries; each then sees the other's objects as unknown — clear
 *    import errors, never a shared byte.)
 * 2. No bystander can shrink what is mapped. A named tmpfs file can be truncated by any process
 *    of the user, and every process mapping it then dies of SIGBUS on its next access. A memfd
 *    sealed with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL cannot change size at all, for anyone.
 *    The first process creates it; the others open it through "/proc/<holder pid>/fd/<fd>" (the
 *    kernel checks ptrace read access, i.e. the same user) and check before mapping: a regular
 *    file owned by geteuid(), mode 0600, exactly sizeof(struct sim_registry) bytes (from fstat,
 *    never from a header), those seals present and no write seal; then the header.
 *    Holders are listed in "<dir>/holders" (fixed records { pid, fd, process start time }), read
 *    and rewritten under flock; dead holders (pid gone or reused: start time differs) are
 *    dropped. Every joined process keeps its fd open for its lifetime, so any live entry leads to
 *    the registry; when no holder is alive the registry is gone with its last process (and so are
 *    all its entries, which were only valid while their owners lived). The holders file is never
 *    mapped: a truncation of it costs a re-reservation, never a signal.
 * 3. A full tmpfs is an error, not a SIGBUS. The registry's pages are reserved with
 *    posix_fallocate when it is created (~320 MiB of memory while any sim process lives; the
 *    memfd does not draw on /dev/shm's size at all), and so is the holders file, so urma_init
 *    fails with the object's name, its size and ENOSPC / ENOMEM instead of a later fault.
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHM_ROOT "/dev/shm"
#define DIR_CANDIDATES 8
#define HOLDERS_MAX 1024
#define LOCK_WAIT_MS 5000
#define REG_SIZE sizeof(struct sim_registry)
#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct holder { int32_t pid, fd; uint64_t start; };
#define HOLDERS_BYTES (HOLDERS_MAX * sizeof(struct holder))

static char dir_path[160];
static char memfd_name[128];
static int reg_fd = -1; /* kept open for the process's life: this process is a holder */
static int failed;      /* the urma_status_t of the last failure (proc_lock held by urma_init) */
/* Sets the error text and status; evaluates to -1, the failure value of every function here. */
#define FAIL(...) (failed = sim_set_error(__VA_ARGS__), -1)

const char *urma_sim_registry_name(void)
{
	return dir_path;
}

static int check_namespace(const char *ns)
{
	size_t n = strlen(ns);
	if (n == 0 || n > 64)
		return FAIL(URMA_EINVAL, "URMA_SIM_NAMESPACE must be 1 to 64 characters");
	for (size_t i = 0; i < n; i++) {
		char c = ns[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.'))
			return FAIL(URMA_EINVAL, "URMA_SIM_NAMESPACE may hold only letters, digits, '_', '-', '.'");
	}
	if (ns[0] == '.') return FAIL(URMA_EINVAL, "URMA_SIM_NAMESPACE must not start with '.'");
	return 0;
}

static void candidate(char *out, size_t n, const char *ns, int i)
{
	if (i == 0) snprintf(out, n, "%s/verbus-urma-sim.v%d.%s", SHM_ROOT, SIM_LAYOUT_VERSION, ns);
	else snprintf(out, n, "%s/verbus-urma-sim.v%d.%s~%d", SHM_ROOT, SIM_LAYOUT_VERSION, ns, i);
}

/* 1 when st is a usable rendezvous directory of this user; else 0 with the reason in why. */
static int dir_is_mine(const char *path, const struct stat *st, char *why, size_t n)
{
	uid_t me = geteuid();
	if (st->st_uid != me)
		snprintf(why, n, "%s is owned by uid %u (mode %04o), not you (uid %u): another user created it; "
			 "remove it or set URMA_SIM_NAMESPACE", path, (unsigned)st->st_uid,
			 (unsigned)(st->st_mode & 07777), (unsigned)me);
	else if (!S_ISDIR(st->st_mode))
		snprintf(why, n, "%s is not a directory (mode %06o): remove it or set URMA_SIM_NAMESPACE", path,
			 (unsigned)st->st_mode);
	else if ((st->st_mode & 07777) != 0700)
		snprintf(why, n, "%s has mode %04o, not 0700: remove it or set URMA_SIM_NAMESPACE", path,
			 (unsigned)(st->st_mode & 07777));
	else
		return 1;
	return 0;
}

/*
 * Opens the user's rendezvous directory of namespace ns (creating the lowest free candidate when
 * none exists). Returns its fd, or -1 with the error set.
 */
static int open_user_dir(const char *ns)
{
	char path[160], why[400] = "";
	for (int round = 0; round < 3; round++) {
		int absent = -1, taken = 0, raced = 0;
		for (int i = 0; i < DIR_CANDIDATES && !raced; i++) {
			struct stat st;
			candidate(path, sizeof(path), ns, i);
			if (lstat(path, &st) != 0) {
				if (errno != ENOENT) return FAIL(URMA_FAIL, "lstat(%s): %s", path, strerror(errno));
				if (absent < 0) absent = i;
				continue;
			}
			char reason[400];
			if (!dir_is_mine(path, &st, reason, sizeof(reason))) {
				if (!taken++) memcpy(why, reason, sizeof(why));
				continue;
			}
			int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat fst;
			if (fd < 0 || fstat(fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino ||
			    !dir_is_mine(path, &fst, reason, sizeof(reason))) {
				if (fd >= 0) close(fd);
				raced = 1; /* replaced between lstat and open (by this user): scan again */
				continue;
			}
			snprintf(dir_path, sizeof(dir_path), "%s", path);
			return fd;
		}
		if (raced) continue;
		if (absent < 0)
			return FAIL(URMA_ENOPERM, "%s%s", why,
				    taken > 1 ? " (every other candidate name is taken too)" : "");
		candidate(path, sizeof(path), ns, absent);
		if (mkdir(path, 0700) == 0) {
			if (chmod(path, 0700) != 0) /* the umask may have taken bits away */
				return FAIL(URMA_FAIL, "chmod(%s, 0700): %s", path, strerror(errno));
		} else if (errno != EEXIST) {
			return FAIL(errno == ENOSPC ? URMA_ENOMEM : URMA_FAIL, "mkdir(%s): %s", path,
				    strerror(errno));
		}
		/* created (or someone was faster): scan again, so every process takes the lowest */
	}
	return FAIL(URMA_FAIL, "%s: the rendezvous directory kept changing", path);
}

/* Opens, checks and reserves "<dir>/holders", then takes its lock. fd or -1 (error set). */
static int lock_holders(int dfd)
{
	int fd = openat(dfd, "holders", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) return FAIL(URMA_FAIL, "open(%s/holders): %s", dir_path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return FAIL(URMA_FAIL, "%s/holders is not a private regular file of uid %u (mode %06o, owner %u)",
			    dir_path, (unsigned)geteuid(), (unsigned)st.st_mode, (unsigned)st.st_uid);
	}
	for (int ms = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; ms++) {
		if ((errno != EWOULDBLOCK && errno != EINTR) || ms >= LOCK_WAIT_MS) {
			int e = errno;
			close(fd);
			return FAIL(URMA_FAIL, "%s/holders: %s", dir_path,
				    e == EWOULDBLOCK ? "locked by another process for 5 s" : strerror(e));
		}
		usleep(1000);
	}
	/* Backed before it is written: a full tmpfs fails here, by name, not half-way through. */
	int e = st.st_size >= (off_t)HOLDERS_BYTES ? 0 : posix_fallocate(fd, 0, (off_t)HOLDERS_BYTES);
	if (e != 0) {
		close(fd);
		return FAIL(e == ENOSPC ? URMA_ENOMEM : URMA_FAIL, "reserving %s/holders (%zu bytes): %s",
			    dir_path, (size_t)HOLDERS_BYTES, strerror(e));
	}
	return fd;
}

/* Checks fd as the registry (see DESIGN 2) and maps it; NULL with why filled otherwise. */
static struct sim_registry *map_checked(int fd, char *why, size_t n)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) != 0) snprintf(why, n, "fstat: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600)
		snprintf(why, n, "owner uid %u mode %06o (want uid %u, 0600)", (unsigned)st.st_uid,
			 (unsigned)st.st_mode, (unsigned)geteuid());
	else if (st.st_size != (off_t)REG_SIZE)
		snprintf(why, n, "%lld bytes, not %zu", (long long)st.st_size, (size_t)REG_SIZE);
	else if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS ||
		 (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		snprintf(why, n, "seals 0x%x, not shrink+grow+seal without write", seals < 0 ? 0 : seals);
	else {
		void *m = mmap(NULL, REG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			snprintf(why, n, "mmap: %s", strerror(errno));
			return NULL;
		}
		struct sim_registry *r = m;
		if (atomic_load(&r->state) == 2 && r->magic == SIM_MAGIC && r->version == SIM_LAYOUT_VERSION)
			return r;
		munmap(m, REG_SIZE);
		snprintf(why, n, "not a version-%d registry", SIM_LAYOUT_VERSION);
	}
	return NULL;
}

/* Joins the registry a holder keeps open. 1 joined, 0 not this one, -1 error (set). */
static int join(const struct holder *h)
{
	char path[64], why[160];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h->pid, (int)h->fd);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		/* Out of descriptors or memory here says nothing about the holder: creating a second
		 * registry would split this process from its peers, so that is an error. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
			return FAIL(URMA_ENOMEM, "open(%s): %s", path, strerror(errno));
		return 0;
	}
	struct sim_registry *r = map_checked(fd, why, sizeof(why));
	if (!r) {
		close(fd);
		sim_set_error(URMA_FAIL, "%s (listed in %s/holders) is not the registry: %s", path, dir_path,
			      why);
		return 0;
	}
	reg_fd = fd;
	sim_reg = r;
	return 1;
}

/* Creates, reserves, seals and initialises a new registry. 0 or -1 (error set). */
static int create(void)
{
	int fd = memfd_create(memfd_name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) return FAIL(URMA_FAIL, "memfd_create(%s): %s", memfd_name, strerror(errno));
	int e = fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)REG_SIZE) != 0 ? errno : 0;
	const char *step = "sizing";
	if (!e) {
		step = "reserving";
		e = posix_fallocate(fd, 0, (off_t)REG_SIZE);
	}
	if (!e && fcntl(fd, F_ADD_SEALS, REQUIRED_SEALS) != 0) step = "sealing", e = errno;
	void *m = e ? MAP_FAILED : mmap(NULL, REG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!e && m == MAP_FAILED) step = "mapping", e = errno;
	if (e) {
		close(fd);
		return FAIL(e == ENOSPC || e == ENOMEM ? URMA_ENOMEM : URMA_FAIL,
			    "%s the URMA simulator registry (memfd %s, %zu bytes): %s", step, memfd_name,
			    (size_t)REG_SIZE, strerror(e));
	}
	struct sim_registry *r = m;
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r->lock, &a);
	pthread_mutexattr_destroy(&a);
	r->magic = SIM_MAGIC;
	r->version = SIM_LAYOUT_VERSION;
	atomic_store(&r->state, 2); /* nobody else can see it before it is listed as held */
	reg_fd = fd;
	sim_reg = r;
	return 0;
}

/* Finds (or creates) this user's registry of namespace ns and maps it into sim_reg. */
static int open_in(int dfd)
{
	int lk = lock_holders(dfd);
	if (lk < 0) return -1;
	static struct holder h[HOLDERS_MAX]; /* proc_lock held by the caller */
	memset(h, 0, sizeof(h));
	ssize_t got = pread(lk, h, sizeof(h), 0);
	if (got < 0) got = 0;
	if ((size_t)got < sizeof(h)) memset((char *)h + got, 0, sizeof(h) - (size_t)got);
	int rc = 0, self = -1;
	for (int i = 0; i < HOLDERS_MAX && rc >= 0; i++) {
		struct sim_owner o = { .pid = h[i].pid, .start = h[i].start };
		if (h[i].pid <= 0 || !sim_owner_alive(&o)) {
			memset(&h[i], 0, sizeof(h[i])); /* dead or garbage: free the record */
			if (self < 0) self = i;
			continue;
		}
		if (!sim_reg && (rc = join(&h[i])) == 0) { /* its fd no longer leads to a registry */
			memset(&h[i], 0, sizeof(h[i]));
			if (self < 0) self = i;
		}
	}
	if (rc >= 0 && !sim_reg) rc = create();
	if (rc >= 0) {
		if (self >= 0) h[self] = (struct holder){ getpid(), reg_fd, sim_self().start };
		/* Without a free record this process joins unlisted: HOLDERS_MAX others already lead there. */
		if (pwrite(lk, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
			rc = sim_set_error(URMA_FAIL, "writing %s/holders: %s", dir_path, strerror(errno));
			munmap(sim_reg, REG_SIZE);
			sim_reg = NULL;
			close(reg_fd);
			reg_fd = -1;
		}
	}
	close(lk); /* releases the flock */
	return rc < 0 ? -1 : 0;
}

int sim_registry_open(void)
{
	const char *ns = getenv("URMA_SIM_NAMESPACE");
	char def[32];
	if (!ns || !*ns) {
		snprintf(def, sizeof(def), "uid%u", (unsigned)geteuid());
		ns = def;
	}
	if (check_namespace(ns)) return failed;
	snprintf(memfd_name, sizeof(memfd_name), "verbus-urma-sim.v%d.%s", SIM_LAYOUT_VERSION, ns);
	int dfd = open_user_dir(ns);
	if (dfd < 0) return failed;
	int rc = open_in(dfd);
	close(dfd);
	return rc < 0 ? failed : 0;
}
