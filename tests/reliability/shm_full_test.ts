/**
 * A full /dev/shm is an error, never a crash. In a mount namespace of its own (so the rest of the
 * machine keeps its /dev/shm), a 256 KiB tmpfs is mounted over /dev/shm and filled; there, a
 * server on this runtime serves clients of both runtimes: a named object fails at creation with
 * ENOSPC naming it and its size (its pages are reserved, not left to fault later), while shm
 * sessions — sealed memfds on the kernel's internal tmpfs, as are the notify pages — carry every
 * call. No process dies (SIGBUS would end one with 135).
 * @module
 */
import { spawnSync } from "node:child_process";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";
import { userInfo } from "node:os";

const canUnshare = userInfo().uid === 0 &&
  spawnSync("unshare", ["-m", "true"]).status === 0;

test(
  `a full /dev/shm: a ${RUNTIME} server and clients of both runtimes still call over shm; a named object fails with ENOSPC`,
  () => {
    const rt = RUNTIME as RuntimeName;
    const run = [
      runtimeBinary(rt),
      ...(rt === "deno" ? ["run", "-A"] : []),
      "tests/fixtures/shm_full_pair.ts",
    ]
      .map((a) => `'${a}'`).join(" ");
    const r = spawnSync("unshare", [
      "-m",
      "sh",
      "-c",
      "mount -t tmpfs -o size=256k tmpfs /dev/shm && " +
      "(head -c 1M /dev/zero > /dev/shm/fill 2>/dev/null; true) && " +
      `test "$(df --output=avail /dev/shm | tail -1)" -eq 0 && exec ${run}`,
    ], { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 });
    const out = `${r.stdout}${r.stderr}`;
    assertEquals([r.status, r.signal], [0, null], `exit: ${out}`);
    const res = JSON.parse(/result (\{.*\})/.exec(r.stdout)![1]);
    assert(/ENOSPC/.test(res.named) && /1048576 bytes/.test(res.named), `named: ${res.named}`);
    for (const c of ["deno", "bun"]) {
      const got = res.clients[c];
      assertEquals([got.fabric, got.ok, got.bad], ["shm", 30, 0], `${c}: ${JSON.stringify(got)}`);
    }
  },
  {
    timeoutMs: 150_000,
    skip: canUnshare ? false : "needs root and unshare -m (a private /dev/shm)",
  },
);
