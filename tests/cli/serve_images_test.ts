/**
 * `verbus serve` leaves no image directory behind: it makes its temp directory at the first image
 * upload (not at start-up) and removes it when it stops (SIGTERM) and when listening fails (it
 * once made `/tmp/verbus-images-XXXXXX` at every start and never removed it). Each serve runs
 * with a private TMPDIR, so what it made is exactly what that directory holds.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server as NetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

const rt = RUNTIME as "deno" | "bun";

function verbusArgv(args: string[]): [string, string[]] {
  const main = join(REPO_ROOT, "cli/main.ts");
  return [runtimeBinary(rt), rt === "deno" ? ["run", "-A", main, ...args] : [main, ...args]];
}

/** Runs `fn` with a fresh directory to be the child's TMPDIR; removes it afterwards. */
async function withTmp(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "verbus-serve-tmp-"));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test(`serve (${rt}) on a busy port fails and leaves no image directory`, async () => {
  const busy: NetServer = createServer();
  await new Promise<void>((r) => busy.listen(0, "127.0.0.1", () => r()));
  const port = (busy.address() as { port: number }).port;
  try {
    await withTmp((tmp) => {
      const [bin, argv] = verbusArgv(["serve", "--port", String(port), "--json"]);
      const r = spawnSync(bin, argv, {
        cwd: REPO_ROOT,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, TMPDIR: tmp },
      });
      assert(r.status !== 0 && r.status !== null, `exit ${r.status}\n${r.stdout}${r.stderr}`);
      assert(/cannot listen on 127\.0\.0\.1:\d+/.test(r.stdout + r.stderr), r.stdout + r.stderr);
      assertEquals(readdirSync(tmp), [], "nothing made in TMPDIR");
    });
  } finally {
    await new Promise((r) => busy.close(r));
  }
}, { timeoutMs: 90_000 });

test(
  `serve (${rt}) makes its image directory at the first upload and removes it on SIGTERM`,
  async () => {
    await withTmp(async (tmp) => {
      const [bin, argv] = verbusArgv(["serve", "--port", "0", "--json", "--fabric", "none"]);
      const srv = spawn(bin, argv, {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TMPDIR: tmp },
      });
      let out = "";
      srv.stdout!.on("data", (d) => (out += d));
      srv.stderr!.on("data", (d) => (out += d));
      const exited = new Promise<number | string>((res) =>
        srv.on("exit", (c, s) => res(c ?? s ?? "?"))
      );
      try {
        for (let i = 0; i < 600 && !/"port":(\d+)/.test(out); i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const line = JSON.parse(out.split("\n").find((l) => l.startsWith("{"))!);
        assertEquals([line.listening, line.imageDir], [true, null], out);
        assertEquals(readdirSync(tmp), [], "no directory before an upload");
        const image = join(tmp, "..", `verbus-serve-img-${process.pid}-${Date.now()}.bin`);
        writeFileSync(image, new Uint8Array(60_000).fill(7));
        try {
          const [cb, ca] = verbusArgv([
            "call",
            "--port",
            String(line.port),
            "--fabric",
            "tcp",
            "--json",
            "--image-put",
            "pic.bin",
            image,
          ]);
          const c = spawnSync(cb, ca, { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
          assertEquals(c.status, 0, c.stdout + c.stderr);
        } finally {
          rmSync(image, { force: true });
        }
        const made = readdirSync(tmp);
        assertEquals(made.length, 1, String(made));
        assert(made[0].startsWith("verbus-images-"), made[0]);
        assertEquals(readdirSync(join(tmp, made[0])), ["pic.bin"]);
        srv.kill("SIGTERM");
        // 0; Deno's child_process reports a child it sent SIGTERM as "SIGTERM" whatever its exit
        // (a kill by the signal would leave the directory: the check below tells them apart).
        const code = await exited;
        assert(code === 0 || (code === "SIGTERM" && RUNTIME === "deno"), `exit ${code}\n${out}`);
        assertEquals(readdirSync(tmp), [], "the image directory is gone after the stop");
      } finally {
        srv.kill("SIGKILL");
        await exited;
      }
    });
  },
  { timeoutMs: 120_000 },
);
