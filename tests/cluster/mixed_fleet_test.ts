/**
 * Mixed fleets: one verbus cluster client balancing (`list://`, rr) over two verbus servers and a
 * server that speaks baidu_std only, as a stock brpc `echo_server` does. Every call is answered;
 * the brpc-like server's over TCP (its handshake ends FALLBACK_TCP: it refuses
 * `verbus.Fabric/Hello` with ENOMETHOD as brpc does, or — the `silent` peer — never answers it),
 * the verbus servers' over shm.
 *
 * CI has no brpc: `baidu_std_echo_peer.ts` plays it. With `VERBUS_BRPC_ECHO_SERVER` set to a
 * built brpc `example/echo_c++/echo_server` (the README's "Many servers" says how to build one),
 * the last test runs the same fleet with the real server; without it, it is skipped saying so.
 * @module
 */
import { spawn } from "node:child_process";
import { connect } from "../../rpc/client/client.ts";
import type { ClusterCallResult, ClusterClient } from "../../rpc/cluster/cluster_client.ts";
import { ServerPool } from "../../rpc/cluster/server_pool.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { VerbusError } from "../../errors.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { decodeEchoMessage, encodeEchoMessage } from "../../examples/demo/brpc_echo.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { type BaiduStdEchoPeer, startBaiduStdEchoPeer } from "./baidu_std_echo_peer.ts";

const ECHO = "example.EchoService";
const BRPC_ECHO_SERVER = (globalThis as { process?: { env: Record<string, string | undefined> } })
  .process?.env.VERBUS_BRPC_ECHO_SERVER;

/** A verbus server answering brpc's `example.EchoService/Echo` (the request is the response). */
function verbusEchoServer(): Promise<Server> {
  return serve({
    port: 0,
    host: "127.0.0.1",
    services: { [ECHO]: { Echo: (req: Uint8Array) => req } },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
}

/**
 * Runs `rounds` rounds of 12 calls in flight through `c` and checks every answer: the message
 * comes back, and each server's calls took the path expected of it (`tcpServer` TCP, the others
 * shm). Returns the calls answered per server.
 */
async function callFleet(
  c: ClusterClient,
  tcpServer: string,
  rounds: number,
): Promise<Record<string, number>> {
  const per: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    const rs: ClusterCallResult[] = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) => c.call(ECHO, "Echo", encodeEchoMessage(`${round}.${i}`)),
      ),
    );
    rs.forEach((r, i) => {
      assertEquals(decodeEchoMessage(r.response, "EchoResponse"), `${round}.${i}`);
      const want = r.server === tcpServer ? ["tcp", "TCP_FALLBACK"] : ["shm", "EAGER"];
      assertEquals([r.fabric, r.path], want, `the path of ${r.server}'s answer`);
      per[r.server] = (per[r.server] ?? 0) + 1;
    });
  }
  return per;
}

/** How the shared client of `address` (the cluster's, same options) ended its handshake. */
async function handshakeOf(
  address: string,
  options: Record<string, unknown>,
): Promise<{ state: string; reason?: string }> {
  const lease = ServerPool.forThread().acquire(address, options);
  try {
    return (await lease.client()).handshake;
  } finally {
    lease.release();
  }
}

/** Two verbus servers and `brpc` (at `brpcAddress`) under one rr cluster client. */
async function runFleet(
  brpcAddress: string,
  rounds: number,
  serverOptions: Record<string, unknown> = {},
): Promise<{ per: Record<string, number>; handshake: { state: string; reason?: string } }> {
  const servers = await Promise.all([verbusEchoServer(), verbusEchoServer()]);
  const addresses = [`127.0.0.1:${servers[0].port}`, brpcAddress, `127.0.0.1:${servers[1].port}`];
  let c: ClusterClient | undefined;
  try {
    c = await connect(`list://${addresses.join(",")}`, {
      lb: "rr",
      server: serverOptions,
      log: () => {},
    });
    const per = await callFleet(c, brpcAddress, rounds);
    const handshake = await handshakeOf(brpcAddress, serverOptions); // c's own client
    assertEquals(Object.keys(per).sort(), [...addresses].sort(), "every server answered");
    assertEquals(c.stats().retries, 0, "no call needed a second server");
    assertEquals(servers.map((s) => s.fabric!.sessions.size), [1, 1], "one shm session each");
    return { per, handshake };
  } finally {
    await c?.close();
    await Promise.all(servers.map((s) => s.close()));
  }
}

test("mixed fleet: two verbus servers over shm and a baidu_std-only echo server over TCP, every call answered", async () => {
  const peer: BaiduStdEchoPeer = await startBaiduStdEchoPeer();
  try {
    const brpc = `127.0.0.1:${peer.port}`;
    const { per, handshake } = await runFleet(brpc, 6);
    assertEquals(Object.values(per), [24, 24, 24], `rr spreads evenly: ${JSON.stringify(per)}`);
    assertEquals(peer.echoed, 24, "the baidu_std server answered its share");
    assertEquals(handshake.state, "FALLBACK_TCP");
    assert(/no verbus fabric/.test(handshake.reason ?? ""), `reason: ${handshake.reason}`);
    // It saw one hello (refused with ENOMETHOD, as brpc does), then only Echo.
    assertEquals(peer.requests.filter((r) => r !== `${ECHO}/Echo`), ["verbus.Fabric/Hello"]);
  } finally {
    await peer.close();
  }
});

test("mixed fleet: a peer that never answers the hello joins as a TCP server once the hello times out", async () => {
  const peer = await startBaiduStdEchoPeer({ silent: true });
  try {
    const brpc = `127.0.0.1:${peer.port}`;
    // The hello waits the server client's timeoutMs; calls wait for their server's connection.
    const { per, handshake } = await runFleet(brpc, 3, { timeoutMs: 1500 });
    assertEquals(per[brpc], 12, JSON.stringify(per));
    assertEquals(handshake.state, "FALLBACK_TCP");
    assert(/hello failed/.test(handshake.reason ?? ""), `reason: ${handshake.reason}`);
    assertEquals(peer.requests.filter((r) => r !== `${ECHO}/Echo`), ["verbus.Fabric/Hello"]);
  } finally {
    await peer.close();
  }
});

test("mixed fleet: a call whose deadline passes while its server's hello times out fails with TIMEOUT", async () => {
  const peer = await startBaiduStdEchoPeer({ silent: true });
  let c: ClusterClient | undefined;
  try {
    c = await connect(`list://127.0.0.1:${peer.port}`, {
      server: { timeoutMs: 1200 },
      maxRetry: 0,
      log: () => {},
    });
    const t0 = performance.now();
    const e = await c.call(ECHO, "Echo", encodeEchoMessage("late"), { timeoutMs: 400 }).then(
      () => null,
      (e: unknown) => e,
    );
    assert(e instanceof VerbusError && e.code === "TIMEOUT", `expected TIMEOUT, got ${e}`);
    assert(performance.now() - t0 < 1200 + 1000, "not a second full timeout after connecting");
    assertEquals(peer.echoed, 0, "the call was not sent after its deadline");
  } finally {
    await c?.close();
    await peer.close();
  }
});

/** A free loopback port (listened on and closed again). */
async function freePort(): Promise<number> {
  const l = await tcp.listen({ host: "127.0.0.1", port: 0, onConnection: (c) => c.close() });
  const port = l.port;
  await l.close(); // the port is free only then (Deno: an event-loop turn later)
  return port;
}

/** Waits until something accepts connections on `port` (or throws after `ms`). */
async function waitListening(port: number, ms: number, exited: () => string | null): Promise<void> {
  const end = performance.now() + ms;
  for (;;) {
    const why = exited();
    if (why !== null) throw new Error(`echo_server exited before listening: ${why}`);
    try {
      (await tcp.connect({ host: "127.0.0.1", port, timeoutMs: 500 })).close();
      return;
    } catch (e) {
      if (performance.now() > end) {
        throw new Error(`nothing listens on ${port} after ${ms} ms: ${e}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

test("mixed fleet with the stock brpc echo_server (VERBUS_BRPC_ECHO_SERVER)", async () => {
  const port = await freePort();
  const child = spawn(BRPC_ECHO_SERVER!, [`--port=${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "", exit: string | null = null;
  child.stdout!.on("data", (d: Uint8Array) => void (log += String(d)));
  child.stderr!.on("data", (d: Uint8Array) => void (log += String(d)));
  const exited = new Promise<void>((r) =>
    child.once("exit", (code, signal) => {
      exit = `code ${code} signal ${signal}`;
      r();
    })
  );
  try {
    await waitListening(port, 10_000, () => exit);
    const brpc = `127.0.0.1:${port}`;
    const { per, handshake } = await runFleet(brpc, 6);
    assertEquals(Object.values(per), [24, 24, 24], `rr spreads evenly: ${JSON.stringify(per)}`);
    assertEquals(handshake.state, "FALLBACK_TCP");
    assert(/no verbus fabric/.test(handshake.reason ?? ""), `reason: ${handshake.reason}`);
    console.log(`  brpc echo_server ${brpc}: ${per[brpc]} calls over TCP (${handshake.reason})`);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- echo_server output ---\n${log}`, { cause: e });
  } finally {
    if (exit === null) {
      child.kill("SIGINT"); // brpc's RunUntilAskedToQuit stops on SIGINT
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    }
  }
}, {
  skip: BRPC_ECHO_SERVER
    ? false
    : "set VERBUS_BRPC_ECHO_SERVER to a built brpc example/echo_c++/echo_server (README: Many servers)",
  timeoutMs: 60_000,
});
