/**
 * How `verbus doctor` reports one native library: found (where, from which source) or not (every
 * path tried and why). Shared by the per-fabric probes; control path only, never throws.
 * @module
 */
import type { LoadAttempt } from "../errors.ts";
import { probeLibrary } from "../ffi/loader.ts";

/** A native library's status. */
export interface LibraryStatus {
  found: boolean;
  path?: string;
  source?: LoadAttempt["source"];
  /** Every attempt that failed (all of them when not found). */
  tried: LoadAttempt[];
  error?: string;
}

/** The status of a library whose loader threw `e` (a LibraryLoadError lists its attempts). */
export function notFoundStatus(e: unknown): LibraryStatus {
  const err = e as Error & { attempts?: readonly LoadAttempt[] };
  return { found: false, tried: err.attempts ? [...err.attempts] : [], error: err.message };
}

/** Opens `spec` only to see whether it loads (closing it again); never throws. */
export async function probeLibraryStatus(
  spec: Parameters<typeof probeLibrary>[0],
): Promise<LibraryStatus> {
  const r = await probeLibrary(spec);
  if (!r.ok) return { found: false, tried: [...r.error.attempts], error: r.error.message };
  const status: LibraryStatus = {
    found: true,
    path: r.library.path,
    source: r.library.source,
    tried: [...r.library.attempts],
  };
  r.library.close();
  return status;
}
