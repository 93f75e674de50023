#!/usr/bin/env node
/**
 * Baseline for the end-to-end benchmark: unary echo over @grpc/grpc-js (Node 20), no .proto —
 * the service is defined in code with identity (de)serializers on raw bytes, so what is measured
 * is gRPC's HTTP/2 framing and call machinery, not protobuf.
 *
 *   node grpc_node.mjs --payload 64 --inflight 32 --calls 20000 --warmup 2000
 *       spawns the server as a child process (like two real peers), runs a closed-loop client
 *       with --inflight calls outstanding on one channel, prints ONE JSON line:
 *       {"name":"grpc-node","payload":64,"inflight":32,"calls":20000,"mean_us":..,"p50_us":..,"p99_us":..,"p999_us":..,"qps":..}
 *   node grpc_node.mjs --serve [--port 0] [--host 127.0.0.1] [--exit-on-stdin-eof]
 *       server only; prints "PORT <n>" on stdout once bound; runs until SIGTERM / SIGINT (or, with
 *       --exit-on-stdin-eof, which the spawning parent passes, until its stdin closes).
 *   node grpc_node.mjs --connect host:port --payload ...   client only, against a running server.
 *
 * Latency of a call is measured from just before `client.Echo()` to its callback; the warmup
 * calls run first, with the same concurrency, and are not recorded. qps = calls / measured time.
 * Exit code 2 for bad flags, 1 if a call fails or a response differs from the request.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";

const USAGE = "usage: node grpc_node.mjs [--payload N] [--inflight N] [--calls N] [--warmup N] " +
  "[--serve [--port P] [--host H] [--exit-on-stdin-eof] | --connect HOST:PORT]";

/** Parses the command line; exits 2 with the usage on a bad flag. */
function parseArgs(argv) {
  const o = {
    payload: 64,
    inflight: 1,
    calls: 10000,
    warmup: 1000,
    serve: false,
    exitOnStdinEof: false,
    connect: "",
    port: 0,
    host: "127.0.0.1",
  };
  const ints = new Set(["payload", "inflight", "calls", "warmup", "port"]);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i].replace(/^--/, "");
    if (flag === "serve") o.serve = true;
    else if (flag === "exit-on-stdin-eof") o.exitOnStdinEof = true;
    else if (ints.has(flag) || flag === "connect" || flag === "host") {
      const v = argv[++i];
      if (v === undefined) fail(`--${flag} needs a value`);
      if (ints.has(flag)) {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) {
          fail(`--${flag} must be a non-negative integer, got ${v}`);
        }
        o[flag] = n;
      } else o[flag] = v;
    } else fail(`unknown flag ${argv[i]}`);
  }
  if (!o.serve && (o.inflight < 1 || o.calls < 1)) fail("--inflight and --calls must be >= 1");
  if (o.payload > 64 * 1024 * 1024) fail("--payload must be <= 64 MiB");
  return o;
}

function fail(msg) {
  process.stderr.write(`grpc_node: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

const identity = (b) => b;
/** The echo service, defined without a .proto: raw bytes in, the same bytes out. */
const SERVICE = {
  Echo: {
    path: "/verbus.bench.EchoService/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};
const CHANNEL_OPTIONS = {
  "grpc.max_receive_message_length": 80 * 1024 * 1024,
  "grpc.max_send_message_length": 80 * 1024 * 1024,
};

/** Binds the echo server; resolves with the bound port. */
function startServer(host, port) {
  const server = new grpc.Server(CHANNEL_OPTIONS);
  server.addService(SERVICE, { Echo: (call, callback) => callback(null, call.request) });
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
}

/** Spawns this file as a server child; resolves with {child, port}. */
function spawnServer() {
  const child = spawn(process.execPath, [
    fileURLToPath(import.meta.url),
    "--serve",
    "--port",
    "0",
    "--exit-on-stdin-eof",
  ], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => {
      const m = /^PORT (\d+)$/.exec(line);
      if (m) resolve({ child, port: Number(m[1]) });
      else reject(new Error(`server child said ${JSON.stringify(line)}, expected "PORT <n>"`));
    });
    child.once(
      "exit",
      (code) => reject(new Error(`server child exited with ${code} before binding`)),
    );
    child.once("error", reject);
  });
}

/**
 * Runs `count` calls with `inflight` outstanding; records each latency (µs) into `lat` when given.
 * Resolves with the elapsed ms.
 */
function runPhase(client, request, count, inflight, lat) {
  return new Promise((resolve, reject) => {
    let issued = 0, done = 0, failed = false;
    const t0 = performance.now();
    const issue = () => {
      const i = issued++;
      const start = performance.now();
      client.Echo(request, (err, response) => {
        if (failed) return;
        if (err || response.length !== request.length || !response.equals(request)) {
          failed = true;
          reject(
            err ??
              new Error(`call ${i}: response of ${response.length} bytes differs from the request`),
          );
          return;
        }
        if (lat) lat[i] = (performance.now() - start) * 1000;
        if (++done === count) resolve(performance.now() - t0);
        else if (issued < count) issue();
      });
    };
    for (let k = 0; k < Math.min(inflight, count); k++) issue();
  });
}

/** The p-quantile (0..1) of sorted `a` (nearest rank). */
function quantile(a, p) {
  return a[Math.min(a.length - 1, Math.max(0, Math.ceil(p * a.length) - 1))];
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.serve) {
    await startServer(o.host, o.port).then((port) => process.stdout.write(`PORT ${port}\n`));
    if (o.exitOnStdinEof) {
      process.stdin.resume();
      process.stdin.on("end", () => process.exit(0));
    }
    process.on("SIGTERM", () => process.exit(0));
    process.on("SIGINT", () => process.exit(0));
    return;
  }
  let child, target = o.connect;
  if (!target) {
    const s = await spawnServer();
    child = s.child;
    target = `127.0.0.1:${s.port}`;
  }
  try {
    const Client = grpc.makeGenericClientConstructor(SERVICE, "EchoService");
    const client = new Client(target, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    const request = Buffer.alloc(o.payload);
    for (let i = 0; i < request.length; i++) request[i] = (i * 31 + 7) & 0xff;
    if (o.warmup > 0) await runPhase(client, request, o.warmup, o.inflight, null);
    const lat = new Float64Array(o.calls);
    const ms = await runPhase(client, request, o.calls, o.inflight, lat);
    lat.sort();
    client.close();
    const r = {
      name: "grpc-node",
      payload: o.payload,
      inflight: o.inflight,
      calls: o.calls,
      mean_us: Math.round((lat.reduce((x, y) => x + y, 0) / lat.length) * 10) / 10,
      p50_us: Math.round(quantile(lat, 0.5) * 10) / 10,
      p99_us: Math.round(quantile(lat, 0.99) * 10) / 10,
      p999_us: Math.round(quantile(lat, 0.999) * 10) / 10,
      qps: Math.round(o.calls / (ms / 1000)),
    };
    process.stdout.write(JSON.stringify(r) + "\n");
  } finally {
    if (child) child.kill("SIGTERM");
  }
}

main().catch((e) => {
  process.stderr.write(`grpc_node: ${e?.stack ?? e}\n`);
  process.exit(1);
});
