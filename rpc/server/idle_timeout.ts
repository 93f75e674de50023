/**
 * The idle timeout in force when the connection budget is tight: past {@link TIGHT_SHARE} of the
 * cap, idle (and silent) connections are closed sooner, down to {@link TIGHT_IDLE_MS} at the cap,
 * so idle sockets cannot keep every place for the whole configured timeout. Used by the server's
 * sweep and by brpc's RDMA acceptor for connections that have not sent their first bytes.
 *
 * Pure; any thread.
 * @module
 */

/** Past this share of the cap in use, the idle timeout shrinks (the budget is tight)... */
export const TIGHT_SHARE = 0.75;
/** ...down to this many ms at the cap (never above the configured timeout). */
export const TIGHT_IDLE_MS = 3000;

/** The idle timeout in force with `open` of `max` connections open (see {@link TIGHT_SHARE}). */
export function idleTimeoutFor(idleTimeoutMs: number, open: number, max: number): number {
  const share = open / max;
  if (idleTimeoutMs === 0 || share <= TIGHT_SHARE) return idleTimeoutMs;
  const left = Math.max(0, (1 - share) / (1 - TIGHT_SHARE)); // 1 at the mark, 0 at the cap
  return Math.min(
    idleTimeoutMs,
    Math.round(TIGHT_IDLE_MS + left * (idleTimeoutMs - TIGHT_IDLE_MS)),
  );
}
