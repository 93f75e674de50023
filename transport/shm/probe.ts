/**
 * What this host offers the shm fabric: whether a POSIX shm object can be created, mapped and
 * read back atomically (for `verbus doctor`). Control path only; never throws.
 * @module
 */
import { errnoName } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { cstringArg } from "../../ffi/strings.ts";
import {
  MAP_FAILED_ADDR,
  MAP_SHARED,
  O_CREAT,
  O_EXCL,
  O_RDWR,
  PROT_READ,
  PROT_WRITE,
} from "../../ffi/symbols/libc.ts";

/** Whether shared memory works here, and if not, why. */
export interface ShmCapabilities {
  usable: boolean;
  reason?: string;
}

const PROBE_BYTES = 4096;
const PROBE_WORD = 0x5eed;

/** Creates, maps, writes and reads back a one-page shm object, then removes it. Never throws. */
export async function probeShm(): Promise<ShmCapabilities> {
  try {
    const f = await ffi();
    const libc = await loadLibc();
    const s = libc.symbols;
    const name = cstringArg(`/verbus-doctor-${s.getpid()}-${Date.now()}`);
    const fd = s.shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600);
    if (fd < 0) return { usable: false, reason: `shm_open failed with ${errnoName(errno(libc))}` };
    try {
      if (s.ftruncate(fd, PROBE_BYTES) !== 0) {
        return { usable: false, reason: `ftruncate failed with ${errnoName(errno(libc))}` };
      }
      const p = s.mmap(null, PROBE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p === null || f.address(p) === MAP_FAILED_ADDR) {
        return { usable: false, reason: `mmap failed with ${errnoName(errno(libc))}` };
      }
      const u32 = new Uint32Array(f.view(p, PROBE_BYTES));
      Atomics.store(u32, 0, PROBE_WORD);
      const ok = Atomics.load(u32, 0) === PROBE_WORD;
      s.munmap(p, PROBE_BYTES);
      return ok ? { usable: true } : { usable: false, reason: "mapped memory did not read back" };
    } finally {
      s.close(fd);
      s.shm_unlink(name);
    }
  } catch (e) {
    return { usable: false, reason: (e as Error).message };
  }
}
