/**
 * Facts about this host that the fabrics and the handshake share. Control path; any thread.
 * @module
 */
import { readFileSync } from "node:fs";

let cachedBootId: string | undefined;

/**
 * This host's boot id (`/proc/sys/kernel/random/boot_id`; "" when unreadable): two processes with
 * the same one run on the same host. Read once per process (it cannot change while it runs).
 */
export function hostBootId(): string {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    } catch {
      cachedBootId = "";
    }
  }
  return cachedBootId;
}
