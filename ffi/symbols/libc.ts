/**
 * libc (glibc ≥ 2.34: shm_open lives in libc.so.6). Control-path only.
 * @module
 */
import type { LibrarySpec } from "../loader.ts";

/** The libc symbols verbus binds. */
export const LIBC_SYMBOLS = {
  /** void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset); */
  mmap: { args: ["pointer", "usize", "i32", "i32", "i32", "i64"], result: "pointer" },
  /** int munmap(void *addr, size_t length); */
  munmap: { args: ["pointer", "usize"], result: "i32" },
  /** int shm_open(const char *name, int oflag, mode_t mode); */
  shm_open: { args: ["buffer", "i32", "u32"], result: "i32" },
  /** int shm_unlink(const char *name); */
  shm_unlink: { args: ["buffer"], result: "i32" },
  /** int ftruncate(int fd, off_t length); */
  ftruncate: { args: ["i32", "i64"], result: "i32" },
  /** int fallocate(int fd, int mode, off_t offset, off_t len);  — mode 0 reserves the pages (tmpfs: ENOSPC now, not SIGBUS later) */
  fallocate: { args: ["i32", "i32", "i64", "i64"], result: "i32" },
  /** uid_t geteuid(void);  — whose objects this process may use */
  geteuid: { args: [], result: "u32" },
  /** int memfd_create(const char *name, unsigned int flags);  — an anonymous, sealable object */
  memfd_create: { args: ["buffer", "u32"], result: "i32" },
  /** int fcntl(int fd, int cmd, ... /* int arg *\/);  — F_ADD_SEALS / F_GET_SEALS */
  fcntl: { args: ["i32", "i32", "i32"], result: "i32" },
  /** off_t lseek(int fd, off_t offset, int whence);  — SEEK_END: the object's size (fstat's st_size) */
  lseek: { args: ["i32", "i64", "i32"], result: "i64" },
  /** int open(const char *path, int flags, ... /* mode_t mode *\/); */
  open: { args: ["buffer", "i32", "u32"], result: "i32" },
  /** int close(int fd); */
  close: { args: ["i32"], result: "i32" },
  /** int *__errno_location(void);  — the calling thread's errno */
  __errno_location: { args: [], result: "pointer" },
  /** long sysconf(int name); */
  sysconf: { args: ["i32"], result: "i64" },
  /** int gethostname(char *name, size_t len); */
  gethostname: { args: ["buffer", "usize"], result: "i32" },
  /** pid_t getpid(void); */
  getpid: { args: [], result: "i32" },
  /** int kill(pid_t pid, int sig);  — sig 0 probes whether a pid is alive */
  kill: { args: ["i32", "i32"], result: "i32" },
  /** int sched_yield(void);  — lets a runnable peer (e.g. the other side of a shm ring) have the core */
  sched_yield: { args: [], result: "i32" },
  /** char *strerror(int errnum); */
  strerror: { args: ["i32"], result: "pointer" },
} as const;

/** Where to find libc. */
export const LIBC_SPEC: LibrarySpec<typeof LIBC_SYMBOLS> = {
  name: "libc",
  sonames: ["libc.so.6"],
  table: LIBC_SYMBOLS,
};

/** mmap/open constants (Linux x86_64). */
export const PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, MAP_FAILED_ADDR = 0xffffffffffffffffn;
export const MAP_PRIVATE = 2, MAP_FIXED = 0x10, MAP_ANONYMOUS = 0x20;
export const O_RDONLY = 0, O_RDWR = 2, O_CREAT = 0o100, O_EXCL = 0o200, O_TRUNC = 0o1000;
/** memfd_create flags, fcntl seal commands and seals, lseek whence (Linux). */
export const MFD_CLOEXEC = 1, MFD_ALLOW_SEALING = 2;
export const F_ADD_SEALS = 1033, F_GET_SEALS = 1034;
export const F_SEAL_SEAL = 1, F_SEAL_SHRINK = 2, F_SEAL_GROW = 4;
export const SEEK_END = 2;
export const O_CLOEXEC = 0o2000000;
/** sysconf names. */
export const SC_PAGESIZE = 30;
