/**
 * What the naming-service tests share: a watcher that records what it is told and lets a test
 * wait for the next event, and the check that a process following a service exits by itself
 * once the service is closed (nothing left running: timer, socket, file watcher, fetch).
 * @module
 */
import type { VerbusError } from "../../errors.ts";
import type { NamingWatcher, ServerNode } from "../../rpc/cluster/naming.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { assert } from "../harness.ts";
import { withChild } from "../util/proc.ts";

/** One event a watcher was told. */
export type NamingEvent = { servers: string[] } | { error: VerbusError };

/** A watcher that keeps its events; `next()` waits for one not taken yet. */
export class Recorder implements NamingWatcher {
  readonly events: NamingEvent[] = [];
  #taken = 0;
  #wake: (() => void) | undefined;

  onServers(servers: readonly ServerNode[]): void {
    this.events.push({ servers: servers.map((s) => `${s.address}${s.tag ? " " + s.tag : ""}`) });
    this.#wake?.();
  }

  onError(error: VerbusError): void {
    this.events.push({ error });
    this.#wake?.();
  }

  /** The next event, or a failure naming `what` after `timeoutMs`. */
  async next(what: string, timeoutMs = 5_000): Promise<NamingEvent> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      while (this.#taken >= this.events.length) {
        await new Promise<void>((resolve, reject) => {
          this.#wake = resolve;
          timer = setTimeout(
            () => reject(new Error(`no event (${what}) in ${timeoutMs} ms: ${this.show()}`)),
            timeoutMs,
          );
        });
        clearTimeout(timer);
      }
      return this.events[this.#taken++];
    } finally {
      clearTimeout(timer);
      this.#wake = undefined;
    }
  }

  /** The next event, which must be a list; returns it. */
  async servers(what: string, timeoutMs?: number): Promise<string[]> {
    const e = await this.next(what, timeoutMs);
    assert(
      "servers" in e,
      `${what}: expected a list, got error ${"error" in e && e.error.message}`,
    );
    return e.servers;
  }

  /** The next event, which must be an error; returns it. */
  async error(what: string, timeoutMs?: number): Promise<VerbusError> {
    const e = await this.next(what, timeoutMs);
    assert("error" in e, `${what}: expected an error, got ${JSON.stringify(e)}`);
    return e.error;
  }

  /** Events not taken yet. */
  pending(): number {
    return this.events.length - this.#taken;
  }

  show(): string {
    return JSON.stringify(this.events.map((e) => "error" in e ? `error ${e.error.message}` : e));
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Runs a child that watches `url` with `options`, closes the service `closeAfterMs` after the
 * first event, and must then exit by itself within 5 s. Returns the child's output.
 */
export function exitsAfterClose(
  url: string,
  options: Record<string, unknown>,
  closeAfterMs = 200,
): Promise<string> {
  return withChild(
    RUNTIME as RuntimeName,
    "tests/cluster/fixtures/naming_watch_child.ts",
    { args: [url, JSON.stringify(options), String(closeAfterMs)], ready: /closed/ },
    async (child) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const code = await Promise.race([
        child.exited,
        new Promise<string>((r) => timer = setTimeout(() => r("still running after 5 s"), 5_000)),
      ]);
      clearTimeout(timer);
      assert(
        code === 0,
        `child did not exit by itself after close() (${code}):\n${child.output()}`,
      );
      return child.output();
    },
  );
}
