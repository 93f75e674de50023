/**
 * The client handshake's log of peers that will never have a fabric: a server that offers no
 * verbus fabric (a stock brpc server, any baidu_std-only peer) or speaks another hello version
 * stays that way, so a process that connects to it again and again — every client of a mixed
 * fleet, every reconnect — says so at warn once per peer address, and at info after that.
 * Bounded: past {@link MAX_PEERS} addresses the oldest is forgotten (and may be warned again).
 *
 * Threading: one per JS thread (module state); control path.
 * @module
 */

/** Most peer addresses remembered. */
export const MAX_PEERS = 4096;

/** Peer addresses already warned about, oldest first (a Set keeps insertion order). */
const warned = new Set<string>();

/**
 * Whether the fallback of `peer` (`host:port`) to TCP for a reason of the peer itself should be
 * logged at warn: true the first time in this process, false after (log it at info).
 */
export function firstFallbackOf(peer: string): boolean {
  if (warned.has(peer)) return false;
  if (warned.size >= MAX_PEERS) warned.delete(warned.values().next().value as string);
  warned.add(peer);
  return true;
}
