/**
 * A private etcd per test: {@link startEtcd} runs Debian's `etcd` (package `etcd-server`, 3.4;
 * `make setup` installs it) on free loopback ports with a temp data dir, waits until it answers,
 * and {@link Etcd.stop} kills it and removes the dir. Tests never use a system etcd (port 2379):
 * each gets its own ports. Without etcd, {@link ETCD_SKIP} is the reason tests skip with.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";

/** Path of the etcd binary (env `VERBUS_ETCD`, else `etcd` on PATH), or null. */
export const ETCD_BINARY: string | null = (() => {
  const fromEnv = process.env.VERBUS_ETCD;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : null;
  for (const dir of (process.env.PATH ?? "/usr/bin").split(delimiter)) {
    if (dir && existsSync(join(dir, "etcd"))) return join(dir, "etcd");
  }
  return null;
})();

/** The `skip` option of an etcd test: false when etcd is installed, else the reason. */
export const ETCD_SKIP: string | false = ETCD_BINARY
  ? false
  : "etcd is not installed (Debian package etcd-server; `make setup` installs it)";

/** A free TCP port on 127.0.0.1 (bound and released: a small race other tests rarely win). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A running private etcd. */
export interface Etcd {
  /** `127.0.0.1:PORT` of its client URL. */
  readonly endpoint: string;
  /** `etcd://127.0.0.1:PORT/PREFIX`. */
  url(prefix: string): string;
  /** Its output so far (the last 64 KiB). */
  output(): string;
  /** SIGKILLs it (data dir kept) and waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data dir (after kill), and waits until it answers. */
  restart(): Promise<void>;
  /** Kills it and removes its data dir. Safe twice. */
  stop(): Promise<void>;
}

/** Waits until etcd at `endpoint` answers a range, or `child` exits, or `ms` pass. */
async function waitReady(endpoint: string, child: ChildProcess, ms: number, out: () => string) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`etcd exited (${child.exitCode ?? child.signalCode}):\n${out()}`);
    }
    try {
      const res = await fetch(`http://${endpoint}/v3/kv/range`, {
        method: "POST",
        body: JSON.stringify({ key: "AA==" }),
        signal: AbortSignal.timeout(1000),
      });
      const text = await res.text();
      if (res.ok && text.includes("header")) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`etcd at ${endpoint} did not answer in ${ms} ms:\n${out()}`);
}

/** Starts a private etcd (see the module doc). Throws when etcd is missing or does not start. */
export async function startEtcd(): Promise<Etcd> {
  if (!ETCD_BINARY) throw new Error(String(ETCD_SKIP));
  const bin = ETCD_BINARY;
  const dir = mkdtempSync(join(tmpdir(), "vb-etcd-"));
  const client = await freePort();
  const peer = await freePort();
  const endpoint = `127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const args = [
    "--name",
    "default",
    "--data-dir",
    join(dir, "data"),
    "--listen-client-urls",
    `http://${endpoint}`,
    "--advertise-client-urls",
    `http://${endpoint}`,
    "--listen-peer-urls",
    peerUrl,
    "--initial-advertise-peer-urls",
    peerUrl,
    "--initial-cluster",
    `default=${peerUrl}`,
    "--log-level",
    "warn",
  ];
  let out = "";
  let child: ChildProcess;
  let exited: Promise<void>;
  const launch = async () => {
    child = spawn(bin, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    exited = new Promise((r) => child.once("exit", () => r()));
    const keep = (b: Uint8Array) => (out = (out + new TextDecoder().decode(b)).slice(-65536));
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    await waitReady(endpoint, child, 20_000, () => out);
  };
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  let stopped = false;
  try {
    await launch();
  } catch (e) {
    await kill();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    endpoint,
    url: (prefix) => `etcd://${endpoint}/${prefix.replace(/^\/+/, "")}`,
    output: () => out,
    kill,
    restart: async () => {
      await kill();
      await launch();
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` with a private etcd, always stopped afterwards. */
export async function withEtcd<T>(fn: (etcd: Etcd) => Promise<T>): Promise<T> {
  const etcd = await startEtcd();
  try {
    return await fn(etcd);
  } finally {
    await etcd.stop();
  }
}
