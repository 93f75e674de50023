/**
 * What a server's engine costs between the calls of a client that calls now and then: one shm
 * client calls ECHO 16 B, then waits `--gap-ms` (a timer), for `--seconds`; the server's CPU
 * (user + kernel, /proc) over that time, as % of a core and µs per call. Alternating rounds of a
 * server with naps off (`progress.napUs` 0: the loop spins each gap until its idle sleep) and on
 * (the default), each a fresh server process of this runtime; medians per setting.
 *
 *   deno run -A bench/e2e/sporadic_cpu.ts [--rounds 3] [--gap-ms 2] [--seconds 2]
 *   bun bench/e2e/sporadic_cpu.ts …
 *
 * The engine naps only where the host is not oversubscribed (`spin_policy.ts`): on a crowded host
 * both settings sleep early and read alike. Quote the load average. Main thread of a bench
 * process; `--serve NAP_US` is the server child's mode.
 * @module
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { connect } from "../../rpc/client/client.ts";
import { serve } from "../../rpc/server/server.ts";
import { demoService } from "../../examples/demo/mod.ts";
import { numArg } from "../common/args.ts";
import { median } from "../common/median.ts";
import { procUsage } from "../common/proc_cpu.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const argv: string[] = g.Deno ? g.Deno.args : g.process.argv.slice(2);
const HERE = fileURLToPath(import.meta.url);

if (argv[0] === "--serve") {
  const s = await serve({
    port: 0,
    services: { ...demoService() },
    fabric: { progress: argv[1] === "default" ? {} : { napUs: Number(argv[1]) } },
    logger: { warn: () => {}, info: () => {} },
  });
  console.log(`listening on ${s.port}`);
} else {
  await measure();
}

/** A server child with `napUs` ("default": not set); its pid, port and a stop function. */
async function server(napUs: string) {
  const cmd = g.Deno
    ? [g.Deno.execPath(), ["run", "-A", HERE, "--serve", napUs]]
    : [g.process.execPath, [HERE, "--serve", napUs]];
  const p = spawn(cmd[0] as string, cmd[1] as string[], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((res, rej) => {
    let out = "";
    p.stdout!.on("data", (d) => {
      out += d;
      const m = /listening on (\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    p.on("exit", (c) => rej(new Error(`server exited ${c}`)));
  });
  const stop = () => {
    p.kill();
    return new Promise((r) => p.on("exit", r));
  };
  return { pid: p.pid!, port, stop };
}

async function measure(): Promise<void> {
  const rounds = numArg("rounds", 3), gapMs = numArg("gap-ms", 2), seconds = numArg("seconds", 2);
  const runs: Record<string, { pct: number[]; perCall: number[] }> = {
    "0": { pct: [], perCall: [] },
    default: { pct: [], perCall: [] },
  };
  for (let r = 0; r < rounds; r++) {
    for (const setting of r % 2 === 0 ? ["0", "default"] : ["default", "0"]) {
      const s = await server(setting);
      const c = await connect({ host: "127.0.0.1", port: s.port }, { fabric: "shm" });
      try {
        const echo = () => c.call("verbus.Demo", "Echo", new Uint8Array(16));
        for (let i = 0; i < 50; i++) await echo();
        const u0 = procUsage(s.pid, { switches: false }), t0 = performance.now();
        let calls = 0;
        while (performance.now() - t0 < seconds * 1000) {
          await echo();
          calls++;
          await new Promise((res) => setTimeout(res, gapMs));
        }
        const u1 = procUsage(s.pid, { switches: false });
        const ms = u1.user + u1.sys - u0.user - u0.sys, wall = performance.now() - t0;
        runs[setting].pct.push((ms / wall) * 100);
        runs[setting].perCall.push((ms * 1000) / calls);
        console.error(
          `round ${r} napUs ${setting}: ${calls} calls, server ${(ms / wall * 100).toFixed(1)} % ` +
            `of a core (load ${loadavg()[0].toFixed(2)})`,
        );
      } finally {
        await c.close();
        await s.stop();
      }
    }
  }
  for (const [setting, v] of Object.entries(runs)) {
    console.log(JSON.stringify({
      runtime: g.Deno ? "deno" : "bun",
      nap_us: setting,
      gap_ms: gapMs,
      server_cpu_pct: +median(v.pct).toFixed(1),
      server_us_per_call: +median(v.perCall).toFixed(1),
      rounds_pct: v.pct.map((x) => +x.toFixed(1)),
      load_at_end: loadavg()[0],
    }));
  }
}
