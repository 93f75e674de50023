/**
 * Shared pieces of the reliability suite: a count of what this process holds (fds, verbus
 * mappings, shm objects, simulated URMA objects) to compare before and after a hostile act, a
 * raw Hello sender, and a wait-until.
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { pid } from "node:process";
import type { Channel } from "../../rpc/tcp/channel.ts";
import {
  type ClientHello,
  decodeHello,
  encodeHello,
  FABRIC_SERVICE,
  HELLO_VERSION,
  type ServerHello,
  serverHelloSchema,
} from "../../rpc/session/handshake/hello.ts";
import { runnableTasks } from "../../transport/cpu.ts";
import { hostBootId } from "../../transport/host.ts";
import type { FabricKind } from "../../transport/registry.ts";
import type { UrmaLib } from "../../transport/urma/urma_lib.ts";

/** What this process holds that a session takes. */
export interface Held {
  /**
   * Open file descriptors, not counting epoll / eventfd / timerfd ones: the runtimes create those
   * lazily for their own worker threads (Bun on the first off-thread wait). A URMA leak of
   * its eventfds shows in `urma` (the simulator counts its objects).
   */
  fds: number;
  /** Mappings of verbus shared memory (shm objects and memfds) in /proc/self/maps. */
  maps: number;
  /** This process's session objects in /dev/shm. */
  shm: number;
  /** Live simulated URMA objects (0 without the simulator). */
  urma: number;
}

/** What each open fd of this process is (for messages). */
export function fdTargets(): string[] {
  return readdirSync("/proc/self/fd").map((fd) => {
    try {
      return `${fd}→${readlinkSync(`/proc/self/fd/${fd}`)}`;
    } catch {
      return `${fd}→?`;
    }
  });
}

/** Counts what this process holds now (`sim`: the simulated liburma, when loaded). */
export function held(sim?: UrmaLib): Held {
  // The progress loop keeps one /proc/loadavg descriptor for the life of the process, opened by
  // the first session: open it before counting, or the first session of a run is taken for a
  // leak of one fd (a second one would still show).
  runnableTasks();
  const maps = readFileSync("/proc/self/maps", "utf8").split("\n")
    .filter((l) => /verbus-\d+-\d+|memfd:verbus/.test(l)).length;
  return {
    fds: fdTargets().filter((f) => !/anon_inode:\[(eventpoll|eventfd|timerfd)\]/.test(f)).length,
    maps,
    shm: readdirSync("/dev/shm").filter((n) => new RegExp(`^verbus-${pid}-\\d+$`).test(n)).length,
    urma: sim?.liveObjects()?.total ?? 0,
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `cond` holds (throws naming `what` after `ms`). */
export async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

/** True when `now` holds no more than `base` (the runtime may close fds of its own meanwhile). */
export function within(now: Held, base: Held): boolean {
  return now.fds <= base.fds && now.maps === base.maps && now.shm === base.shm &&
    now.urma === base.urma;
}

/** Waits until what this process holds is back to `base` (fds may settle late); returns it. */
export async function settleTo(base: Held, sim?: UrmaLib, ms = 5000): Promise<Held> {
  const end = performance.now() + ms;
  let now = held(sim);
  while (!within(now, base) && performance.now() < end) {
    await sleep(20);
    now = held(sim);
  }
  return now;
}

/** A valid client hello for `fabrics` with `params` (each field may then be broken). */
export function validHello(
  fabrics: FabricKind[] = ["shm"],
  params: Record<string, unknown> = { shm: {} },
  region: ClientHello["region"] = {},
): ClientHello {
  return { version: HELLO_VERSION, bootId: hostBootId(), pid, fabrics, region, params };
}

/** Sends `hello` (any JSON) as a Hello on `ch` and decodes the answer. */
export async function sendHello(ch: Channel, hello: unknown): Promise<ServerHello> {
  const r = await ch.call(FABRIC_SERVICE, "Hello", encodeHello(hello as ClientHello));
  return decodeHello(serverHelloSchema, r.response, "server hello");
}
