/**
 * Helpers of the hostile-TCP-peer tests (`tcp_*_test.ts`): the fixture server in a child process
 * and its RSS, a raw socket that never reads, a raw socket that watches what the server sends.
 * @module
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { RUNTIME } from "../../ffi/runtime.ts";
import { FrameParser } from "../../rpc/protocol/frame.ts";
import type { RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import type { ServeOptions } from "../../rpc/server/server.ts";
import { tcp } from "../../transport/tcp/mod.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The fixture server process. */
export interface Fixture {
  readonly port: number;
  readonly pid: number;
  /** Resident set size now, in bytes (`VmRSS` of `/proc/<pid>/status`). */
  rss(): number;
  stop(): Promise<void>;
}

/** Starts `fixtures/tcp_server.ts` with the same runtime and these extra serve() options. */
export async function startFixture(
  options: Partial<Omit<ServeOptions, "services" | "port">> = {},
): Promise<Fixture> {
  const file = new URL("./fixtures/tcp_server.ts", import.meta.url).pathname;
  const cmd = RUNTIME === "deno"
    ? [g.Deno.execPath(), "run", "-A", "--v8-flags=--expose-gc", file]
    : [g.process.execPath, file];
  const child = spawn(cmd[0], [...cmd.slice(1), JSON.stringify(options)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Uint8Array) => {
      out += String(d);
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`fixture exited (${code}) before its port`)));
  });
  const pid = child.pid!;
  return {
    port,
    pid,
    rss() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return Number(m![1]) * 1024;
    },
    async stop() {
      child.stdin!.end();
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** A connection that writes and never reads: what the server sends piles up in its queues. */
export interface Mute {
  write(bytes: Uint8Array): Promise<void>;
  close(): void;
}

/** Opens a {@link Mute} connection with the runtime's own socket API (no verbus code). */
export async function connectMute(port: number): Promise<Mute> {
  if (RUNTIME === "deno") {
    const c = await g.Deno.connect({ hostname: "127.0.0.1", port });
    return {
      async write(bytes) {
        for (let off = 0; off < bytes.length;) off += await c.write(bytes.subarray(off));
      },
      close: () => c.close(),
    };
  }
  const s = await g.Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      open(s: { pause(): void }) {
        s.pause();
      },
      data() {},
    },
  });
  s.pause();
  return {
    write(bytes) {
      const n = s.write(bytes);
      if (n !== bytes.length) throw new Error(`mute write took ${n} of ${bytes.length} bytes`);
      return Promise.resolve();
    },
    close: () => s.end(),
  };
}

/** A raw connection that records every frame the server sends and whether the server closed it. */
export interface Watcher {
  readonly answers: RpcMeta[];
  /** Resolves `true` when the server closed the connection, `false` after `ms` without. */
  closedWithin(ms: number): Promise<boolean>;
  write(bytes: Uint8Array): void;
  close(): void;
}

export async function connectWatcher(port: number): Promise<Watcher> {
  const conn = await tcp.connect({ host: "127.0.0.1", port });
  const answers: RpcMeta[] = [];
  const parser = new FrameParser((m) => void answers.push(m));
  conn.onData((c) => parser.push(c));
  const closed = new Promise<boolean>((r) => conn.onClose((e) => r(e !== undefined)));
  return {
    answers,
    closedWithin: (ms) => Promise.race([closed, sleep(ms).then(() => false)]),
    write: (b) => void conn.write(b),
    close: () => conn.close(),
  };
}

/** The reason frame a verbus server sends before it closes a connection (correlation_id 0). */
export function lastWord(w: Watcher): { code: number; text: string } | undefined {
  const m = w.answers.at(-1);
  if (m === undefined || m.correlationId !== 0 || !m.response?.errorCode) return undefined;
  return { code: m.response.errorCode, text: m.response.errorText ?? "" };
}
