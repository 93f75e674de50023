/**
 * The simulator's shared registry against other users and bystanders
 * (c-helpers/urma_sim/sim_registry.c): another uid that takes the rendezvous names first neither
 * blocks the user nor receives a byte; truncating what the sim processes map kills none of them;
 * a full /dev/shm makes urma_init fail by name and size, never a SIGBUS. Each case runs sim
 * processes of this runtime (tests/urma/fixtures/registry_peer.ts) in a namespace of its own.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";
import { fnv, pattern, SIM_PATH, SKIP_NO_SIM } from "./util.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const BIN = runtimeBinary(RUNTIME === "bun" ? "bun" : "deno");
const ARGS = RUNTIME === "deno"
  ? ["run", "-A", "tests/urma/fixtures/registry_peer.ts"]
  : ["tests/urma/fixtures/registry_peer.ts"];
const SHM_PREFIX = "/dev/shm/verbus-urma-sim.v4.";
const NOBODY = 65534;
const isRoot = () => g.process.getuid?.() === 0;
const has = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
const SKIP_SQUAT = SKIP_NO_SIM || (!isRoot() ? "needs root (to act as uid 65534)" : false) ||
  (has("setpriv") ? false : "no setpriv");
const SKIP_UNSHARE = SKIP_NO_SIM || (!isRoot() ? "needs root (mount namespace)" : false) ||
  (spawnSync("unshare", ["-m", "true"]).status === 0 ? false : "unshare -m does not work here");

/** A namespace no other test or engineer uses. */
const freshNs = (what: string) => `${what}${g.process.pid}x${Date.now() % 1e8}`;

interface Peer {
  child: ChildProcess;
  pid: number;
  read(ms?: number): Promise<Record<string, unknown>>;
  send(o: unknown): void;
  /** Exit code, or the signal's conventional 128 + n (SIGBUS: 135). */
  exited: Promise<number>;
  stderr(): string;
}

/** Starts registry_peer.ts (through `wrap` if given: argv before the runtime binary). */
function startPeer(ns: string | undefined, wrap: string[] = []): Peer {
  const env: Record<string, string> = { ...g.process.env, VERBUS_LIBURMA: SIM_PATH, NO_COLOR: "1" };
  if (ns) env.URMA_SIM_NAMESPACE = ns;
  else delete env.URMA_SIM_NAMESPACE;
  const argv = [...wrap, BIN, ...ARGS];
  const child = spawn(argv[0], argv.slice(1), {
    cwd: REPO_ROOT,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "", err = "";
  child.stdout!.on("data", (d: Uint8Array) => (out += new TextDecoder().decode(d)));
  child.stderr!.on("data", (d: Uint8Array) => (err += new TextDecoder().decode(d)));
  const signals: Record<string, number> = { SIGBUS: 7, SIGSEGV: 11, SIGKILL: 9, SIGABRT: 6 };
  const exited = new Promise<number>((r) =>
    child.on(
      "exit",
      (code: number | null, sig: string | null) => r(code ?? 128 + (signals[sig!] ?? 64)),
    )
  );
  const read = async (ms = 20_000) => {
    const end = Date.now() + ms;
    while (!out.includes("\n")) {
      if (Date.now() > end || child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `no line from the sim peer (exit ${child.exitCode ?? child.signalCode}); stderr:\n${err}`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const i = out.indexOf("\n");
    const line = out.slice(0, i);
    out = out.slice(i + 1);
    return JSON.parse(line);
  };
  const send = (o: unknown) => child.stdin!.write(JSON.stringify(o) + "\n");
  return { child, pid: child.pid!, read, send, exited, stderr: () => err };
}

async function stop(...peers: Peer[]): Promise<void> {
  for (const p of peers) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  }
  await Promise.all(peers.map((p) => p.exited));
}

/** Each peer imports the other; then each WRITEs `seed` (+1 for b) and the other sees the bytes. */
async function exchange(a: Peer, b: Peer, helloA: unknown, helloB: unknown, seed: number) {
  if (helloA && helloB) {
    a.send({ peer: helloB });
    b.send({ peer: helloA });
    assertEquals([(await a.read()).imported, (await b.read()).imported], [true, true]);
  }
  a.send({ write: seed });
  b.send({ write: seed + 1 });
  const [wa, wb] = [await a.read(), await b.read()];
  assertEquals([wa.wrote, wb.wrote], [0, 0], JSON.stringify([wa, wb]));
  a.send("sum");
  b.send("sum");
  assertEquals([(await a.read()).sum, (await b.read()).sum], [
    fnv(pattern(new Uint8Array(256), seed + 1)),
    fnv(pattern(new Uint8Array(256), seed)),
  ], "each process holds the bytes the other wrote");
}

/** Runs `script` as uid/gid 65534 with no groups (the squatter); throws on failure. */
function asNobody(script: string, ...args: string[]): void {
  const r = spawnSync("setpriv", [
    "--reuid",
    `${NOBODY}`,
    "--regid",
    `${NOBODY}`,
    "--clear-groups",
    "sh",
    "-c",
    script,
    "sh",
    ...args,
  ], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`squatter script failed (${r.status}): ${r.stderr}`);
}

function removeNames(base: string): void {
  for (const f of readdirSync("/dev/shm")) {
    if (`/dev/shm/${f}` === base || `/dev/shm/${f}`.startsWith(base + "~")) {
      rmSync(`/dev/shm/${f}`, { recursive: true, force: true });
    }
  }
}

test(
  "another uid squats the rendezvous names first: the user's sim meets in a name of its own, no byte reaches the squatter",
  async () => {
    const ns = freshNs("squat");
    const base = SHM_PREFIX + ns;
    // a 64 KiB file (mode 0666), a world-writable directory and a symlink to the file
    asNobody(
      'umask 0; : > "$1" && truncate -s 65536 "$1" && mkdir -m 0777 "$1~1" && ln -s "$1" "$1~2"',
      base,
    );
    const a = startPeer(ns), b = startPeer(ns);
    try {
      const [ha, hb] = [await a.read(), await b.read()];
      assertEquals([ha.ready, hb.ready], [true, true], JSON.stringify([ha, hb]));
      assertEquals([ha.registry, hb.registry], [base + "~3", base + "~3"]);
      const st = lstatSync(base + "~3");
      assertEquals([st.isDirectory(), st.uid, st.mode & 0o7777], [true, 0, 0o700]);
      await exchange(a, b, ha, hb, 40);
      // the squatter's objects are as it left them
      const file = readFileSync(base);
      assertEquals(
        [file.length, file.every((x: number) => x === 0)],
        [65536, true],
        "no byte in the file",
      );
      assertEquals(readdirSync(base + "~1"), [], "nothing in the squatter's directory");
      assertEquals([statSync(base).uid, lstatSync(base + "~2").isSymbolicLink()], [NOBODY, true]);
      a.send("bye");
      b.send("bye");
      assertEquals([await a.exited, await b.exited], [0, 0]);
    } finally {
      await stop(a, b);
      removeNames(base);
    }
  },
  { skip: SKIP_SQUAT, timeoutMs: 60_000 },
);

test(
  "another uid squats every candidate name: urma_init fails naming the object, its owner and mode",
  async () => {
    const ns = freshNs("squatall");
    const base = SHM_PREFIX + ns;
    asNobody('umask 022; for s in "" ~1 ~2 ~3 ~4 ~5 ~6 ~7; do : > "$1$s" || exit 1; done', base);
    const a = startPeer(ns);
    try {
      const h = await a.read();
      assertEquals(h.ready, false);
      const msg = String(h.error);
      assert(msg.startsWith("urma_init failed"), msg);
      assert(
        msg.includes(
          `${base} is owned by uid ${NOBODY} (mode 0644), not you (uid 0): another user created it; ` +
            "remove it or set URMA_SIM_NAMESPACE",
        ),
        msg,
      );
      assertEquals(await a.exited, 3, "a clean exit, not a crash");
      assertEquals(statSync(base).size, 0, "the squatter's file was not written");
    } finally {
      await stop(a);
      removeNames(base);
    }
  },
  { skip: SKIP_SQUAT, timeoutMs: 60_000 },
);

/** The abstract name ("\0" + name) of the socket that is fd `fd` of process `pid`. */
function abstractNameOf(pid: number, fd: number): string {
  const inode = /socket:\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
  for (const line of readFileSync("/proc/net/unix", "utf8").split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f[6] === inode && f[7]?.startsWith("@")) return f[7].slice(1);
  }
  throw new Error(`no abstract name for socket ${inode} (fd ${fd} of ${pid})`);
}

/**
 * Python that sends a 4-byte doorbell for JFC slots 0..7 (a fresh namespace's first JFC is slot
 * 0) to abstract name argv[1], without blocking: the receiver queues only a few datagrams.
 */
const RING_ALL = "import socket,struct,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\n" +
  "for i in range(8): s.sendto(struct.pack('I',i),socket.MSG_DONTWAIT,b'\\0'+sys.argv[1].encode())";

test(
  "doorbells: the JFCE's name is the kernel's pick, and a doorbell from another uid wakes nothing",
  async () => {
    const ns = freshNs("bell");
    const a = startPeer(ns);
    try {
      const h = await a.read();
      assertEquals(h.ready, true, JSON.stringify(h));
      const name = abstractNameOf(a.pid, h.jfceFd as number);
      assert(/^[0-9a-f]{5}$/.test(name), `an autobound name, not a predictable one: ${name}`);
      asNobody(`exec /usr/bin/python3 -c "$1" "$2"`, RING_ALL, name);
      a.send({ wait: 300 });
      assertEquals((await a.read()).events, 0, "another user's doorbells are dropped");
      // the same datagrams from this user do wake it (the check above can fail)
      const r = spawnSync("/usr/bin/python3", ["-c", RING_ALL, name], { encoding: "utf8" });
      assertEquals(r.status, 0, r.stderr);
      a.send({ wait: 2000 });
      assertEquals((await a.read()).events, 1, "this user's doorbell wakes its JFC");
      a.send("bye");
      assertEquals(await a.exited, 0);
    } finally {
      await stop(a);
      removeNames(SHM_PREFIX + ns);
    }
  },
  {
    skip: SKIP_SQUAT || (existsSync("/usr/bin/python3") ? false : "no /usr/bin/python3"),
    timeoutMs: 60_000,
  },
);

/** The [start-end] range and file of the mapping of `pid` whose name contains `needle`. */
function mappingOf(pid: number, needle: string): { range: string; file: string } | null {
  for (const line of readFileSync(`/proc/${pid}/maps`, "utf8").split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 6 && f.slice(5).join(" ").includes(needle)) {
      return { range: f[0], file: f.slice(5).join(" ") };
    }
  }
  return null;
}

test(
  "a same-user truncation of everything the sim maps, while two processes use it, kills neither",
  async () => {
    const ns = freshNs("trunc");
    const a = startPeer(ns), b = startPeer(ns);
    try {
      const [ha, hb] = [await a.read(), await b.read()];
      assertEquals([ha.ready, hb.ready], [true, true], JSON.stringify([ha, hb]));
      await exchange(a, b, ha, hb, 7);
      // whatever the sim maps (a named file or a memfd), through the kernel's map_files link
      const tried: string[] = [];
      for (const p of [a, b]) {
        const m = mappingOf(p.pid, "verbus-urma-sim");
        assert(m !== null, `no sim mapping in /proc/${p.pid}/maps`);
        const r = spawnSync("truncate", ["-s", "0", `/proc/${p.pid}/map_files/${m!.range}`], {
          encoding: "utf8",
        });
        tried.push(`${m!.file}: ${r.status === 0 ? "truncated" : r.stderr.trim()}`);
      }
      await exchange(a, b, null, null, 90); // both still move bytes (a shrunk mapping: SIGBUS)
      // the holders file is never mapped: shrinking it costs nothing either
      const holders = `${ha.registry}/holders`;
      assert(existsSync(holders), holders);
      assertEquals(spawnSync("truncate", ["-s", "0", holders]).status, 0);
      await exchange(a, b, null, null, 120);
      a.send("bye");
      b.send("bye");
      assertEquals([await a.exited, await b.exited], [0, 0], tried.join("; "));
    } finally {
      await stop(a, b);
      removeNames(SHM_PREFIX + ns);
    }
  },
  { skip: SKIP_UNSHARE, timeoutMs: 60_000 },
);

/** sh -c prologue that gives the child a private `size` tmpfs on /dev/shm, filled when `fill`. */
function privateShm(size: string, fill: boolean): string[] {
  const filler = fill ? "dd if=/dev/zero of=/dev/shm/filler bs=4k 2>/dev/null; " : "";
  return [
    "unshare",
    "-m",
    "sh",
    "-c",
    `mount -t tmpfs -o size=${size} tmpfs /dev/shm && ${filler}exec "$0" "$@"`,
  ];
}

test("a full /dev/shm: urma_init fails naming the object and its size (no SIGBUS)", async () => {
  const a = startPeer(undefined, privateShm("64k", true));
  try {
    const h = await a.read();
    assertEquals(h.ready, false, JSON.stringify(h));
    const msg = String(h.error);
    assert(
      /reserving \/dev\/shm\/verbus-urma-sim\.v4\.uid0\/holders \(16384 bytes\): No space left on device/
        .test(msg),
      msg,
    );
    assertEquals(await a.exited, 3, `a clean exit; stderr: ${a.stderr()}`);
  } finally {
    await stop(a);
  }
}, { skip: SKIP_UNSHARE, timeoutMs: 60_000 });

test(
  "a 64 KiB /dev/shm: the registry (reserved, outside /dev/shm) works; nothing there but the holders file",
  async () => {
    const a = startPeer(undefined, privateShm("64k", false));
    try {
      const h = await a.read();
      assertEquals(h.ready, true, JSON.stringify(h));
      a.send({ peer: h }); // itself: a loopback WRITE touches the registry's slots and rings
      assertEquals((await a.read()).imported, true);
      a.send({ write: 3 });
      assertEquals((await a.read()).wrote, 0);
      a.send("sum");
      assertEquals((await a.read()).sum, fnv(pattern(new Uint8Array(256), 3)));
      const m = mappingOf(a.pid, "verbus-urma-sim");
      assert(m !== null && m.file.startsWith("/memfd:"), `mapped from ${m?.file}`);
      a.send("bye");
      assertEquals(await a.exited, 0);
    } finally {
      await stop(a);
    }
  },
  { skip: SKIP_UNSHARE, timeoutMs: 60_000 },
);
