/**
 * The conventions every `verbus` command keeps: `--version`, `verbus help COMMAND` and `--help`
 * per command (stdout, exit 0), exit codes (0 ok, 1 a call failed, 2 usage), errors on stderr
 * (a JSON line with `--json`; a usage error in two lines: what was wrong, where the usage is),
 * `--json` output on every command, and color only on a terminal without `NO_COLOR` or with
 * `FORCE_COLOR` (checked under a pseudo-terminal from util-linux `script`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { VERSION } from "../../cli/version.ts";
import { agentRecordFile } from "../agent/util.ts";
import { otherRuntime, REPO_ROOT, runtimeBinary, spawnScript, withChild } from "../util/proc.ts";

const COMMANDS = ["doctor", "serve", "call", "agent", "bench"];

function argv(args: string[], runtime = RUNTIME as "deno" | "bun"): string[] {
  const main = join(REPO_ROOT, "cli/main.ts");
  return runtime === "deno" ? ["run", "-A", main, ...args] : [main, ...args];
}

function verbus(args: string[], env?: Record<string, string>) {
  const r = spawnSync(runtimeBinary(RUNTIME as "deno" | "bun"), argv(args), {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 120_000,
    ...(env ? { env } : {}),
  });
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" };
}

/**
 * The environment of this process with NO_COLOR empty — "unset" by https://no-color.org (the
 * runner sets it; and Deno's child_process adds the parent's variables back when one is deleted).
 */
function envNoColorEmpty(): Record<string, string> {
  const g = globalThis as unknown as { process: { env: Record<string, string> } };
  return { ...g.process.env, NO_COLOR: "" };
}

/**
 * The environment of a person's terminal: the platform (`node:util` styleText) gives no colour
 * under `CI` (CI runs set it) or without a `TERM` it knows, so those are a terminal's own.
 */
function terminalEnv(): Record<string, string> {
  return { ...envNoColorEmpty(), TERM: "xterm-256color" };
}

/**
 * `argv` as one command line for `script -c`, run without `CI` (`env -u`: a child's env given
 * to Deno's spawnSync is laid over the parent's, so leaving it out of the object is not enough).
 */
function terminalCommand(args: string[]): string {
  return ["env", "-u", "CI", runtimeBinary(RUNTIME as "deno" | "bun"), ...argv(args)]
    .map((a) => `'${a}'`).join(" ");
}

const ESC = "\x1b[";

test("verbus --version (and --json) says the version of package.json and deno.json", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  const deno = JSON.parse(readFileSync(join(REPO_ROOT, "deno.json"), "utf8"));
  assertEquals([pkg.version, deno.version], [VERSION, VERSION]);
  const a = verbus(["--version"]);
  assertEquals(a.code, 0, a.err);
  assert(a.out.startsWith(`verbus ${VERSION} (${RUNTIME} `), a.out);
  const b = verbus(["--version", "--json"]);
  assertEquals(b.code, 0, b.err);
  const j = JSON.parse(b.out);
  assertEquals([j.verbus, j.runtime], [VERSION, RUNTIME]);
});

test("verbus help COMMAND is COMMAND --help; both on stdout, exit 0, for every command", () => {
  for (const c of COMMANDS) {
    const a = verbus(["help", c]), b = verbus([c, "--help"]);
    assertEquals([a.code, b.code], [0, 0], `${c}: ${a.err}${b.err}`);
    assert(a.out.startsWith(`usage: verbus ${c}`), `${c}: ${a.out}`);
    assertEquals(a.out, b.out, c);
    assertEquals(a.err, "", c);
  }
  const all = verbus(["help"]);
  assertEquals(all.code, 0);
  for (const c of COMMANDS) assert(all.out.includes(`  ${c} `), `${c} listed:\n${all.out}`);
});

test("usage errors exit 2 with the message on stderr (a JSON line with --json)", () => {
  for (const args of [[], ["frobnicate"], ["help", "frobnicate"], ["--frobnicate"]]) {
    const r = verbus(args);
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.out}${r.err}`);
    assertEquals(r.out, "", `nothing on stdout for ${args.join(" ")}`);
    assert(r.err.startsWith("verbus: "), r.err);
  }
  const j = verbus(["call", "--port", "1", "--frobnicate", "--json"]);
  assertEquals([j.code, j.out], [2, ""]);
  const e = JSON.parse(j.err.trim());
  assertEquals([e.ok, e.command, e.exit], [false, "call", 2]);
  assert(String(e.error).includes("--frobnicate"), j.err);
  for (const c of ["doctor", "serve", "agent", "bench"]) {
    const r = verbus([c, "--frobnicate"]);
    assertEquals(r.code, 2, `${c}: ${r.err}`);
    assert(r.err.startsWith(`verbus ${c}: unknown option --frobnicate`), r.err);
  }
});

test("a call that cannot connect exits 1, the error on stderr (a JSON line with --json)", async () => {
  // a port nobody listens on: bind one, then free it
  const { createServer } = await import("node:net");
  const s = createServer();
  const port = await new Promise<number>((r) =>
    s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port))
  );
  await new Promise((r) => s.close(r));
  const a = verbus(["call", "--port", String(port), "--ping"]);
  assertEquals([a.code, a.out], [1, ""], a.err);
  assert(a.err.startsWith("verbus call: "), a.err);
  const b = verbus(["call", "--port", String(port), "--ping", "--json"]);
  assertEquals([b.code, b.out], [1, ""], b.err);
  const e = JSON.parse(b.err.trim().split("\n").pop()!);
  assertEquals([e.ok, e.command, e.exit], [false, "call", 1]);
});

test("--json on every command; a failed op exits 1 with ok:false on stdout", async () => {
  const d = verbus(["doctor", "--json"]);
  assertEquals(d.code, 0, d.err);
  assert(Array.isArray(JSON.parse(d.out).fabrics), d.out);
  const srv = await spawnScript(otherRuntime(), "cli/main.ts", {
    args: ["serve", "--port", "0", "--json"],
    ready: /\{"listening":true[^\n]*"port":(\d+)[^\n]*\}\n/,
  });
  try {
    // (its log lines are JSON too under --json: the listening line is the one that says so)
    const line = JSON.parse(srv.output().split("\n").find((l) => l.startsWith('{"listening"'))!);
    assertEquals([line.listening, line.port > 0, typeof line.fabrics], [true, true, "string"]);
    const p = String(srv.port);
    const ok = verbus(["call", "--port", p, "--json", "--ping"]);
    assertEquals(ok.code, 0, ok.err);
    assertEquals(JSON.parse(ok.out).ok, true);
    // the lifecycle demo needs the fabric: over TCP it fails, and says so
    const bad = verbus(["call", "--port", p, "--json", "--fabric", "tcp", "--lifecycle", "1"]);
    assertEquals(bad.code, 1, bad.out + bad.err);
    assertEquals(JSON.parse(bad.out).ok, false);
    const name = `conv-${RUNTIME}-${Date.now() % 100000}`;
    await withChild(RUNTIME as "deno" | "bun", "cli/main.ts", {
      args: ["agent", "--connect", `127.0.0.1:${p}`, "--listen", name, "--json"],
      ready: /(\{"listening":"agent:[^\n]*\})\n/,
    }, async (agent) => {
      const a = JSON.parse(/(\{"listening":"agent:[^\n]*\})\n/.exec(agent.output())![1]);
      assertEquals([a.listening, a.remote], [`agent:${name}`, `127.0.0.1:${p}`]);
      // Stopped as a user stops it (SIGTERM), it removes its record (its ring, a memfd, goes
      // with the process).
      const ring = agentRecordFile(name);
      assert(existsSync(ring), `the agent's record ${ring} exists while it runs`);
      await agent.kill("SIGTERM"); // the moment it is ready: its handler must already listen
      assert(!existsSync(ring), `a stopped agent leaves no record behind (${ring})`);
    });
  } finally {
    await srv.kill("SIGTERM");
  }
}, { timeoutMs: 120_000 });

// (Not its exit code: a Deno parent's child_process reports a child it sent SIGTERM as killed by
// it even when the child handled the signal and exited 0; a Node or Bun parent sees the 0.)
test("verbus serve stopped by SIGTERM the moment it is ready stops gracefully", async () => {
  for (let k = 0; k < 3; k++) {
    const srv = await spawnScript(RUNTIME as "deno" | "bun", "cli/main.ts", {
      args: ["serve", "--port", "0"],
    });
    await srv.kill("SIGTERM");
    assert(srv.output().includes("verbus serve: stopped"), srv.output());
  }
}, { timeoutMs: 120_000 });

const hasScript = existsSync("/usr/bin/script");

test("color only on a terminal, never with NO_COLOR; none when piped", () => {
  const cmd = terminalCommand(["help"]);
  const tty = (env: Record<string, string>) =>
    spawnSync("script", ["-qec", cmd, "/dev/null"], { encoding: "utf8", env, timeout: 60_000 })
      .stdout ?? "";
  const colored = tty(terminalEnv());
  assert(colored.includes("usage:"), colored);
  assert(colored.includes(ESC), "a terminal without NO_COLOR gets color");
  const plain = tty({ ...terminalEnv(), NO_COLOR: "1" });
  assert(plain.includes("usage:") && !plain.includes(ESC), "NO_COLOR=1: no escape codes");
  const piped = verbus(["help"], envNoColorEmpty());
  assert(piped.out.includes("usage:") && !piped.out.includes(ESC), "a pipe gets no color");
}, { skip: hasScript ? undefined : "needs util-linux script for a pseudo-terminal" });

test("FORCE_COLOR colors even a pipe (FORCE_COLOR=0 never, not on a terminal either), errors too", () => {
  const forced = verbus(["help"], { ...envNoColorEmpty(), FORCE_COLOR: "1" });
  assert(forced.out.includes(`${ESC}1musage:`), `FORCE_COLOR=1 into a pipe: ${forced.out}`);
  const zero = verbus(["help"], { ...envNoColorEmpty(), FORCE_COLOR: "0" });
  assert(zero.out.includes("usage:") && !zero.out.includes(ESC), "FORCE_COLOR=0: no color");
  const err = verbus(["call", "--frobnicate"], { ...envNoColorEmpty(), FORCE_COLOR: "1" });
  assertEquals(err.code, 2);
  assert(err.err.includes(`${ESC}31mverbus call:`), `the error's prefix red: ${err.err}`);
  const plain = verbus(["call", "--frobnicate"], { ...envNoColorEmpty(), NO_COLOR: "1" });
  assert(!plain.err.includes(ESC), plain.err);
  if (!hasScript) return;
  const cmd = terminalCommand(["help"]);
  const tty = spawnSync("script", ["-qec", cmd, "/dev/null"], {
    encoding: "utf8",
    env: { ...terminalEnv(), FORCE_COLOR: "0" },
    timeout: 60_000,
  }).stdout ?? "";
  assert(tty.includes("usage:") && !tty.includes(ESC), "FORCE_COLOR=0 on a terminal: no color");
});

test("a usage error is one line saying what was wrong, then where the usage is; exit 2", () => {
  const cases: [string[], string][] = [
    [["call", "--port", "1", "--ecko", "x"], "unknown option --ecko (did you mean --echo?)"],
    [["call", "--port", "abc", "--ping"], `--port: expected a number, got "abc"`],
    [["call", "--port", "1"], "no op given"],
    [["serve", "--port", "99999"], `--port: expected at most 65535, got "99999"`],
    [["serve", "--prot", "1"], "unknown option --prot (did you mean --port?)"],
    [["agent", "--connect", "nohost"], `--connect: expected HOST:PORT, got "nohost"`],
    [["bench", "--inflight", "0"], `--inflight: "0": expected at least 1`],
    [["doctor", "--urma"], "--urma needs a value"],
  ];
  for (const [args, what] of cases) {
    const r = verbus(args, envNoColorEmpty());
    const c = args[0];
    assertEquals([r.code, r.out], [2, ""], `${args.join(" ")}: ${r.err}`);
    const lines = r.err.trimEnd().split("\n");
    assertEquals(lines.length, 2, `${args.join(" ")}: two lines, not the help:\n${r.err}`);
    assert(lines[0].startsWith(`verbus ${c}: `) && lines[0].includes(what), r.err);
    assertEquals(lines[1], `see: verbus help ${c}`);
  }
  const typo = verbus(["serv"]);
  assertEquals(typo.code, 2);
  assertEquals(
    typo.err.trimEnd(),
    "verbus: unknown command 'serv' (did you mean 'serve'?)\nsee: verbus help",
  );
});
