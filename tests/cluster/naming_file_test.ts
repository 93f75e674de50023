/**
 * file:// — lines with tags, comments and IPv6; a bad line named by number; changes seen whether
 * the file is rewritten in place or replaced by a rename, told only when the list differs; a file
 * that disappears or fails to parse keeps the last list and is reported once; a watch stopped by
 * close() leaves nothing running (a child process exits by itself).
 */
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import process from "node:process";
import { VerbusError } from "../../errors.ts";
import { namingService } from "../../rpc/cluster/naming.ts";
import "../../rpc/cluster/registry.ts";
import { fileNamingService, parseServerFile } from "../../rpc/cluster/naming_file.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { exitsAfterClose, Recorder, sleep } from "./naming_util.ts";

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "vb-nsfile-"));
}

/** Writes by a rename, as a careful writer does. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

test("file://: lines, comments, tags, IPv6; a bad line is named with its number", () => {
  const text =
    "# servers\n\n10.0.0.1:80 3\r\n  [::1]:81 main # primary\n\thost.example:82\n10.0.0.1:80\n";
  assertEquals(parseServerFile(text, "f"), [
    { address: "10.0.0.1:80", tag: "3", weight: 3 },
    { address: "[::1]:81", tag: "main", weight: 1 },
    { address: "host.example:82", tag: "", weight: 1 },
  ]);
  try {
    parseServerFile("a:1\n# ok\nb:2 x\nc:70000 y\n", "file://list");
    throw new Error("no error");
  } catch (e) {
    assert(e instanceof VerbusError && e.code === "INVALID_ARGUMENT", String(e));
    assert(e.message.includes('file://list line 4: "c:70000 y"'), e.message);
  }
});

test("file://: relative and absolute paths; a missing file is NOT_FOUND", async () => {
  const dir = tempDir();
  try {
    writeFileSync(join(dir, "list"), "127.0.0.1:9 2\n");
    const ns = namingService(`file://${join(dir, "list")}`);
    assertEquals(await ns.resolve(), [{ address: "127.0.0.1:9", tag: "2", weight: 2 }]);
    ns.close();
    // file://a/b is the relative path a/b (brpc's reading), not host a and path /b.
    const rel = fileNamingService(`file://${relative(process.cwd(), join(dir, "list"))}`);
    assertEquals((await rel.resolve()).map((s) => s.address), ["127.0.0.1:9"]);
    rel.close();
    const missing = fileNamingService(`file://${join(dir, "nothing")}`);
    const e = await assertRejects(() => missing.resolve(), VerbusError);
    assertEquals(e.code, "NOT_FOUND");
    assert(e.message.includes(join(dir, "nothing")), e.message);
    missing.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("file://: changes are told (in place and by rename), only when the list differs", async () => {
  const dir = tempDir();
  const path = join(dir, "servers");
  // A poll far away: what is seen in time is seen through the directory watch.
  const ns = fileNamingService(`file://${path}`, { pollMs: 60_000 });
  try {
    writeFileSync(path, "127.0.0.1:1\n");
    const r = new Recorder();
    ns.watch(r);
    assertEquals(await r.servers("first"), ["127.0.0.1:1"]);
    replace(path, "127.0.0.1:1\n127.0.0.1:2 5\n");
    assertEquals(await r.servers("after a rename"), ["127.0.0.1:1", "127.0.0.1:2 5"]);
    writeFileSync(path, "127.0.0.1:2 5\n");
    assertEquals(await r.servers("after a write in place"), ["127.0.0.1:2 5"]);
    writeFileSync(path, "# same servers, other text\n127.0.0.1:2   5\n");
    await sleep(400);
    assertEquals(r.pending(), 0, `an unchanged list was told: ${r.show()}`);
    replace(path, "");
    assertEquals(await r.servers("emptied"), [], "an empty file is a real answer");
  } finally {
    ns.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("file://: polling alone sees a change (mtime and size)", async () => {
  const dir = tempDir();
  const path = join(dir, "servers");
  writeFileSync(path, "127.0.0.1:1\n");
  const ns = fileNamingService(`file://${path}`, { pollMs: 100, fileWatch: false });
  try {
    const r = new Recorder();
    ns.watch(r);
    assertEquals(await r.servers("first"), ["127.0.0.1:1"]);
    writeFileSync(path, "127.0.0.1:3\n");
    assertEquals(await r.servers("changed"), ["127.0.0.1:3"]);
  } finally {
    ns.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("file://: a file gone or unparsable keeps the last list, reported once", async () => {
  const dir = tempDir();
  const path = join(dir, "servers");
  writeFileSync(path, "127.0.0.1:1\n");
  const logs: string[] = [];
  const ns = fileNamingService(`file://${path}`, { pollMs: 50, log: (l) => logs.push(l) });
  try {
    const r = new Recorder();
    ns.watch(r);
    assertEquals(await r.servers("first"), ["127.0.0.1:1"]);
    unlinkSync(path);
    const gone = await r.error("deleted");
    assertEquals(gone.code, "NOT_FOUND");
    assert(gone.message.includes(path), gone.message);
    await sleep(300); // six polls of a missing file
    assertEquals(r.pending(), 0, `reported more than once: ${r.show()}`);
    replace(path, "127.0.0.1:1\n127.0.0.1:oops\n");
    const bad = await r.error("bad line");
    assertEquals(bad.code, "INVALID_ARGUMENT");
    assert(bad.message.includes('line 2: "127.0.0.1:oops"'), bad.message);
    await sleep(300);
    assertEquals(r.pending(), 0, `reported more than once: ${r.show()}`);
    replace(path, "127.0.0.1:4\n");
    assertEquals(await r.servers("fixed"), ["127.0.0.1:4"]);
    assert(logs.some((l) => l.includes("keeping the last list")), logs.join("\n"));
  } finally {
    ns.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("file://: close() stops the watch; a child exits by itself", async () => {
  const dir = tempDir();
  const path = join(dir, "servers");
  writeFileSync(path, "127.0.0.1:1\n");
  try {
    const ns = fileNamingService(`file://${path}`, { pollMs: 20 });
    const r = new Recorder();
    ns.watch(r);
    await r.servers("first");
    ns.close();
    replace(path, "127.0.0.1:2\n");
    await sleep(200);
    assertEquals(r.pending(), 0, `told after close: ${r.show()}`);
    const out = await exitsAfterClose(`file://${path}`, { pollMs: 60_000 });
    assert(out.includes('servers ["127.0.0.1:2"]'), out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
