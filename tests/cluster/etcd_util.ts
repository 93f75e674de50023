/**
 * What the etcd tests share: writing keys straight to a private etcd, and a recorder of what a
 * naming service tells its watcher with a wait for a condition on it.
 * @module
 */
import { b64, etcdPost } from "../../rpc/cluster/etcd_gateway.ts";
import type { NamingWatcher, ServerNode } from "../../rpc/cluster/naming.ts";
import type { VerbusError } from "../../errors.ts";

/** Puts `key` = `value` in etcd at `endpoint` (no lease). */
export async function etcdPut(endpoint: string, key: string, value: string): Promise<void> {
  await etcdPost(endpoint, "/v3/kv/put", { key: b64(key), value: b64(value) }, 5000);
}

/** Deletes `key` in etcd at `endpoint`. */
export async function etcdDelete(endpoint: string, key: string): Promise<void> {
  await etcdPost(endpoint, "/v3/kv/deleterange", { key: b64(key) }, 5000);
}

/** Records every list and error a naming service tells. */
export class Recorder implements NamingWatcher {
  readonly lists: string[][] = [];
  readonly errors: VerbusError[] = [];
  onServers(servers: readonly ServerNode[]): void {
    this.lists.push(servers.map((s) => s.tag ? `${s.address} ${s.tag}` : s.address));
  }
  onError(error: VerbusError): void {
    this.errors.push(error);
  }
  /** The last list told (null before the first). */
  get last(): string[] | null {
    return this.lists.at(-1) ?? null;
  }
  /** Waits until `cond` holds (polled every 20 ms); throws naming `what` and the lists after `ms`. */
  async until(cond: (r: Recorder) => boolean, ms: number, what: string): Promise<number> {
    const start = performance.now();
    while (!cond(this)) {
      if (performance.now() - start > ms) {
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}; lists: ${JSON.stringify(this.lists)}; ` +
            `errors: ${this.errors.map((e) => e.message).join(" | ")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return performance.now() - start;
  }
}
