/**
 * Where the agent's time goes: one `verbus serve`, one `verbus agent` under the CPU profiler,
 * `--procs` workers through it for `--seconds`; then the agent's top functions by self time.
 *
 *   node_modules/.bin/deno run -A bench/agent/profile.ts [--runtime deno|bun] [--procs 8]
 *       [--seconds 5] [--top 30]
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { arg, numArg, sleep } from "../common/args.ts";
import type { CpuProfile } from "../profile/analyze.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const rt = arg("runtime", "deno") as "deno" | "bun";
const PROCS = numArg("procs", 8), SECONDS = numArg("seconds", 5), TOP = numArg("top", 30);
const bin = (r: string) => join(ROOT, `node_modules/.bin/${r}`);
const dir = mkdtempSync(join(tmpdir(), "verbus-agent-prof-"));
const name = `prof-${Math.random().toString(36).slice(2, 6)}`;

function run(r: string, args: string[]) {
  const argv = r === "deno" ? ["run", "-A", ...args] : args;
  const c = spawn(bin(r), argv, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  c.stdout!.on("data", (b) => (out += b));
  c.stderr!.on("data", (b) => (out += b));
  return { c, out: () => out };
}
async function until(p: { out(): string }, re: RegExp): Promise<RegExpExecArray> {
  for (let i = 0; i < 6000; i++) {
    const m = re.exec(p.out());
    if (m) return m;
    await sleep(20);
  }
  throw new Error(`no ${re}:\n${p.out()}`);
}

const server = run("bun", ["cli/main.ts", "serve", "--port", "0", "--json"]);
const port = (await until(server, /"port":(\d+)/))[1];
const prof = rt === "deno"
  ? ["--cpu-prof", `--cpu-prof-dir=${dir}`]
  : ["--cpu-prof", `--cpu-prof-dir=${dir}`];
const agentArgs = ["cli/main.ts", "agent", "--connect", `127.0.0.1:${port}`, "--listen", name];
const agent = rt === "deno"
  ? run("deno", [...prof, ...agentArgs])
  : run("bun", [...prof, ...agentArgs]);
await until(agent, /listening on agent:/);
const go = join(dir, "go");
const workers = Array.from(
  { length: PROCS },
  () =>
    run("bun", [
      "bench/agent/worker.ts",
      "--agent",
      name,
      "--go",
      go,
      "--seconds",
      String(SECONDS),
    ]),
);
for (const w of workers) await until(w, /^ready$/m);
writeFileSync(go, "");
const results = await Promise.all(workers.map((w) => until(w, /result (\{.*\})/)));
const calls = results.map((m) => JSON.parse(m[1])).reduce((a, r) => a + r.calls / r.seconds, 0);
agent.c.kill("SIGTERM");
await new Promise((r) => agent.c.once("exit", r));
server.c.kill("SIGTERM");
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
if (!file) throw new Error(`no profile in ${dir}:\n${agent.out()}`);
const p: CpuProfile = JSON.parse(readFileSync(join(dir, file), "utf8"));
const self = new Map<number, number>();
p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0)));
const byFn = new Map<string, number>();
let total = 0;
for (const n of p.nodes) {
  const us = self.get(n.id) ?? 0;
  total += us;
  const f = n.callFrame;
  const key = `${f.functionName || "(anon)"} ${f.url.replace(`file://${ROOT}/`, "")}:${
    (f.lineNumber ?? 0) + 1
  }`;
  byFn.set(key, (byFn.get(key) ?? 0) + us);
}
console.log(
  `agent (${rt}) with ${PROCS} bun workers: ${Math.round(calls)} calls/s; profile ${
    (total / 1e6).toFixed(1)
  } s`,
);
for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
  console.log(`${(us / total * 100).toFixed(1).padStart(5)} %  ${k}`);
}
rmSync(dir, { recursive: true, force: true });
