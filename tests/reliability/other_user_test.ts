/**
 * Only the same user can be your agent or your shm peer. A second uid (nobody, 65534, through
 * `setpriv`) squats every name verbus ever used or uses: the old agent ring name in /dev/shm (with
 * a forged header, mode 0666), and the agent directory with a forged record. No byte of a call
 * reaches the squatter and no forged answer is accepted; the real agent starts despite the first
 * squat and says exactly why not for the second. A server and a client of different uids never
 * map each other's memory: the session goes over TCP and the reason names what was refused.
 * @module
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { userInfo } from "node:os";
import { connect } from "../../rpc/client/client.ts";
import { connectAgent } from "../../rpc/agent/agent_client.ts";
import { serve } from "../../rpc/server/server.ts";
import { demoService } from "../../examples/demo/mod.ts";
import { VerbusError } from "../../errors.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { REPO_ROOT, spawnScript } from "../util/proc.ts";
import { agentName, runVerbus, startAgentChild, stopAgent } from "../agent/util.ts";

const NOBODY = 65534;
const me = userInfo().uid;
/** Whether uid nobody can read this checkout (a clone under a 0700 temp directory it cannot). */
function nobodyReadsRepo(): boolean {
  const r = spawnSync("setpriv", [
    "--reuid",
    String(NOBODY),
    "--regid",
    String(NOBODY),
    "--clear-groups",
    "test",
    "-r",
    join(REPO_ROOT, "deno.json"),
  ]);
  return r.status === 0;
}
const skip = me !== 0 ? "needs root (to run a second uid through setpriv)" : false;
/** The tests that run verbus itself as nobody also need the checkout readable by it. */
const skipAsNobody = skip ||
  (nobodyReadsRepo()
    ? false
    : `uid ${NOBODY} cannot read ${REPO_ROOT} (a directory above it is private)`);

/** Runs `script` in sh as uid nobody; throws with its output when it fails. */
function asNobody(script: string): void {
  const r = spawnSync(
    "setpriv",
    ["--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups", "sh", "-c", script],
    { encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`as nobody: ${script}: ${r.stderr}${r.stdout}`);
}

/** A world-writable sticky directory like /tmp, and a temp home nobody may write. */
function scratch(): { dir: string; home: string; done: () => void } {
  const dir = mkdtempSync("/tmp/vb-squat-");
  chmodSync(dir, 0o1777);
  const home = join(dir, "home");
  asNobody(`mkdir -m 700 ${home}`);
  return { dir, home, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment a child of uid nobody needs (a home and caches it can write). */
function nobodyEnv(home: string): Record<string, string> {
  return { HOME: home, DENO_DIR: join(home, "deno"), TMPDIR: home };
}

async function demoServer() {
  const warnings: string[] = [];
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { ...demoService() },
    fabric: { fabrics: ["shm"] },
    logger: { warn: (m) => warnings.push(m), info: () => {} },
  });
  return { server, warnings };
}

test(
  "another uid squats the agent ring's old name with a forged ring: the real agent starts and no byte reaches the squatter",
  async () => {
    const name = agentName("squat");
    const squat = `/dev/shm/verbus-agent-${me}-${name}`;
    // A forged header ('VBAG', version 2, the squatter's own pid), world-writable.
    asNobody(
      `printf 'VBAG\\002\\000\\000\\000' > ${squat} && head -c 8192 /dev/zero >> ${squat} && ` +
        `chmod 666 ${squat}`,
    );
    const before = readFileSync(squat);
    const { server } = await demoServer();
    let agent;
    try {
      agent = await startAgentChild(name, server.port);
      const c = await connectAgent(name);
      try {
        const secret = new TextEncoder().encode("password=hunter2");
        const r = await c.call("verbus.Demo", "Echo", secret);
        assertEquals(
          new TextDecoder().decode(r.response),
          "password=hunter2",
          "the real agent answers",
        );
      } finally {
        await c.close();
      }
      assertEquals(
        readFileSync(squat),
        before,
        "not one byte was written to the squatter's object",
      );
    } finally {
      await stopAgent(agent, name);
      await server.close();
      rmSync(squat, { force: true });
    }
  },
  { skip, timeoutMs: 90_000 },
);

test(
  "another uid made the agent directory with a forged record: the agent refuses to start and a producer refuses to call, naming the owner",
  async () => {
    const s = scratch();
    const dir = join(s.dir, "run");
    const name = agentName("dir");
    asNobody(
      `mkdir -m 777 ${dir} && printf '{"pid":1,"fd":3,"size":8192}' > ${dir}/agent-${name}.json`,
    );
    const before = readdirSync(dir).sort();
    const { server } = await demoServer();
    const saved = process.env.VERBUS_RUNTIME_DIR;
    try {
      const r = runVerbusWith({ VERBUS_RUNTIME_DIR: dir }, [
        "agent",
        "--connect",
        `127.0.0.1:${server.port}`,
        "--listen",
        name,
      ]);
      assertEquals(r.code, 1, `the agent does not start: ${r.output}`);
      assert(/owned by uid 65534/.test(r.output), `it says why: ${r.output}`);
      process.env.VERBUS_RUNTIME_DIR = dir;
      let err: unknown;
      try {
        await connectAgent(name);
      } catch (e) {
        err = e;
      }
      assert(err instanceof VerbusError, `a producer is refused: ${err}`);
      assert(/owned by uid 65534/.test((err as Error).message), (err as Error).message);
      assertEquals(
        readdirSync(dir).sort(),
        before,
        "nothing was written into the squatted directory",
      );
    } finally {
      if (saved === undefined) delete process.env.VERBUS_RUNTIME_DIR;
      else process.env.VERBUS_RUNTIME_DIR = saved;
      await server.close();
      s.done();
    }
  },
  { skip, timeoutMs: 60_000 },
);

/** `verbus ARGS` on this runtime with `env` added, to its end. */
function runVerbusWith(env: Record<string, string>, args: string[]) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return runVerbus(args);
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k]!;
    }
  }
}

for (const rt of ["deno", "bun"] as RuntimeName[]) {
  test(
    `a ${rt} client of another uid: no shared memory, every call over TCP, the refusal says why`,
    async () => {
      const s = scratch();
      const { server, warnings } = await demoServer();
      try {
        const child = await spawnScript(rt, "tests/fixtures/report_client.ts", {
          args: ["--port", String(server.port), "--calls", "20"],
          ready: /result (\{.*\})/,
          uid: NOBODY,
          env: nobodyEnv(s.home),
          timeoutMs: 60_000,
        });
        await child.exited;
        const res = JSON.parse(/result (\{.*\})/.exec(child.output())![1]);
        assertEquals([res.fabric, res.ok, res.bad], ["tcp", 20, 0], child.output());
        assertEquals(res.paths, { TCP_FALLBACK: 20 });
        const why = `${res.reason}\n${warnings.join("\n")}`;
        assert(/uid 65534|EACCES|EPERM/.test(why), `the refusal names the owner: ${why}`);
        assertEquals(server.fabric?.sessions.size ?? 0, 0, "no fabric session");
      } finally {
        await server.close();
        s.done();
      }
    },
    { skip: skipAsNobody, timeoutMs: 90_000 },
  );
}

test(
  `a ${RUNTIME} server of another uid: this client maps nothing of it and calls over TCP`,
  async () => {
    const s = scratch();
    const srv = await spawnScript(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts", {
      uid: NOBODY,
      env: nobodyEnv(s.home),
      timeoutMs: 60_000,
    });
    try {
      const c = await connect({ host: "127.0.0.1", port: srv.port });
      try {
        assertEquals(c.fabric, "tcp", `reason: ${c.handshake.reason}`);
        const r = await c.call("verbus.Demo", "Echo", new TextEncoder().encode("x"));
        assertEquals([r.path, new TextDecoder().decode(r.response)], ["TCP_FALLBACK", "x"]);
        assert(
          /uid 65534|EACCES|EPERM/.test(c.handshake.reason ?? ""),
          `the reason names the owner: ${c.handshake.reason}`,
        );
      } finally {
        await c.close();
      }
    } finally {
      await srv.kill();
      s.done();
    }
  },
  { skip: skipAsNobody, timeoutMs: 90_000 },
);
