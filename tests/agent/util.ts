/**
 * Helpers of the agent tests: a server in this process (the demo service over a KV store that
 * counts every put, plus `test.Agent/Hold` and `HoldLarge`, which answer only when the test lets
 * them), the agent as a child process through the CLI, producer children, and a bounded wait
 * that fails naming what it waited for.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { userInfo } from "node:os";
import { agentDirectory } from "../../transport/agent_ring/agent_directory.ts";
import { demoService } from "../../examples/demo/service.ts";
import { KvStore } from "../../examples/demo/kv_store.ts";
import { generateLargeObject } from "../../examples/demo/large_object.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { type AgentClient, connectAgent } from "../../rpc/agent/agent_client.ts";
import { type Child, REPO_ROOT, runtimeBinary, spawnScript } from "../util/proc.ts";

/** A KV store that counts how often each key was put (duplicates and losses show). */
export class CountingKv extends KvStore {
  readonly puts = new Map<string, number>();
  override put(key: string | Uint8Array, value: Uint8Array): boolean {
    const k = typeof key === "string" ? key : new TextDecoder().decode(key);
    this.puts.set(k, (this.puts.get(k) ?? 0) + 1);
    return super.put(key, value);
  }
}

/** The test server and its hooks. */
export interface AgentTestServer {
  server: Server;
  kv: CountingKv;
  /** Hold calls waiting; `release()` answers them all. */
  held(): number;
  release(): void;
}

/** Starts the server in this process (shm + TCP unless `options` say otherwise: host, fabric). */
export async function startTestServer(
  options: Record<string, unknown> = {},
): Promise<AgentTestServer> {
  const kv = new CountingKv();
  let waiting: (() => void)[] = [];
  const server = await serve({
    port: 0,
    services: {
      ...demoService({ kv }),
      "test.Agent": {
        Hold: (req) => new Promise<Uint8Array>((r) => waiting.push(() => r(req))),
        // Held too; answers the demo's large object of the u32 (LE) size the request names.
        HoldLarge: (req) =>
          new Promise<Uint8Array>((r) =>
            waiting.push(() =>
              r(generateLargeObject(new DataView(req.buffer, req.byteOffset).getUint32(0, true)))
            )
          ),
      },
    },
    ...options,
  });
  return {
    server,
    kv,
    held: () => waiting.length,
    release: () => {
      const w = waiting;
      waiting = [];
      for (const f of w) f();
    },
  };
}

/** A fresh agent name (one per test, so runs never meet). */
export function agentName(tag: string): string {
  return `t-${tag}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Where and how {@link startAgentChild} starts the agent. */
export interface AgentChildOptions {
  /** More arguments (after --connect and --listen). */
  extra?: string[];
  /** The server's host (default 127.0.0.1). */
  host?: string;
  /** The script (default `cli/main.ts agent`; `tests/agent/fixtures/agent.ts` takes API options). */
  script?: string;
  /** How long to wait for its ready line (default 60 s). */
  timeoutMs?: number;
}

/** Starts `verbus agent` (this runtime) in a child process and waits for its ready line. */
export function startAgentChild(
  name: string,
  port: number,
  o: AgentChildOptions = {},
): Promise<Child> {
  const script = o.script ?? "cli/main.ts";
  const connect = ["--connect", `${o.host ?? "127.0.0.1"}:${port}`, "--listen", name];
  return spawnScript(RUNTIME as RuntimeName, script, {
    args: [...(script === "cli/main.ts" ? ["agent"] : []), ...connect, ...(o.extra ?? [])],
    ready: /listening on agent:/,
    timeoutMs: o.timeoutMs ?? 60_000,
  });
}

/** Starts a producer fixture (tests/agent/fixtures/producer.ts) and waits until it joined. */
export function startProducer(name: string, args: string[], timeoutMs = 90_000): Promise<Child> {
  return spawnScript(RUNTIME as RuntimeName, "tests/agent/fixtures/producer.ts", {
    args: ["--agent", name, ...args],
    timeoutMs,
  });
}

/** The `result {…}` line of a finished `kv` producer. */
export async function producerResult(
  p: Child,
  timeoutMs = 180_000,
): Promise<{ ok: number; bad: string[]; badCount: number; paths: Record<string, number> }> {
  let timer = 0;
  const code = await Promise.race([
    p.exited,
    new Promise((r) => (timer = setTimeout(() => r("timeout"), timeoutMs) as unknown as number)),
  ]);
  clearTimeout(timer);
  const m = /result (\{.*\})/.exec(p.output());
  if (code !== 0 || !m) {
    throw new Error(`producer pid ${p.pid} ended with ${code}, no result line:\n${p.output()}`);
  }
  return JSON.parse(m[1]);
}

/** Polls `cond` until true; fails after `timeoutMs` naming `what` (and `detail()`). */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
  detail: () => string = () => "",
): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await cond())) {
    if (performance.now() > end) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${detail()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The record file agent `name` of this user publishes while it runs. */
export function agentRecordFile(name: string): string {
  return join(agentDirectory(userInfo().uid, true), `agent-${name}.json`);
}

/** Stops an agent child gracefully (SIGTERM: it closes its ring and removes its record), then removes what a killed one left. */
export async function stopAgent(agent: Child | undefined, name: string): Promise<void> {
  await agent?.kill("SIGTERM");
  try {
    unlinkSync(agentRecordFile(name));
  } catch { /* removed by the agent */ }
}

/** Runs `verbus <args>` on this runtime to its end: exit code and output. */
export function runVerbus(args: string[]): { code: number | null; output: string } {
  const rt = RUNTIME as RuntimeName;
  const main = join(REPO_ROOT, "cli/main.ts");
  const r = spawnSync(
    runtimeBinary(rt),
    rt === "deno" ? ["run", "-A", main, ...args] : [main, ...args],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      timeout: 120_000,
    },
  );
  return { code: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** `verbus <args>` on this runtime, without blocking this process (its server answers meanwhile). */
export function verbusAsync(args: string[]): Promise<{ code: number | null; output: string }> {
  const main = join(REPO_ROOT, "cli/main.ts");
  const p = spawn(
    runtimeBinary(RUNTIME as RuntimeName),
    RUNTIME === "deno" ? ["run", "-A", main, ...args] : [main, ...args],
    { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  p.stdout!.on("data", (d) => (output += d));
  p.stderr!.on("data", (d) => (output += d));
  // "close", not "exit": the exit can come before the last output was read
  return new Promise((r) => p.on("close", (code) => r({ code, output })));
}

/**
 * Runs `fn` with a test server, `verbus agent` (a child, `extra` arguments) connected to it and
 * a client of that agent, then closes the client, stops the agent, releases held calls and
 * closes the server.
 */
export async function withAgent(
  tag: string,
  fn: (
    s: AgentTestServer,
    name: string,
    agent: Child,
    c: AgentClient,
  ) => Promise<void>,
  extra: string[] = [],
): Promise<void> {
  const s = await startTestServer();
  const name = agentName(tag);
  const agent = await startAgentChild(name, s.server.port, { extra });
  const c = await connectAgent(name);
  try {
    await fn(s, name, agent, c);
  } finally {
    await c.close();
    await stopAgent(agent, name);
    s.release();
    await s.server.close();
  }
}
