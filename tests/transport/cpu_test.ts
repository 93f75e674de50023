/**
 * `transport/cpu.ts`: the runnable-task count the spin policy reads about ten times a second.
 * It is parsed from `/proc/loadavg` bytes read through one descriptor kept open (no open and no
 * string per reading), and agrees with the file's text.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { parseRunnable, runnableTasks } from "../../transport/cpu.ts";

const enc = new TextEncoder();
const parse = (s: string) => parseRunnable(enc.encode(s), enc.encode(s).length);
const fds = () => readdirSync("/proc/self/fd").length;

test("parseRunnable reads the 4th field's numerator, and -1 for anything malformed", () => {
  assertEquals(parse("0.52 0.58 0.59 3/412 12345\n"), 3);
  assertEquals(parse("10.00 9.50 8.25 117/2048 99\n"), 117);
  assertEquals(parse("0.52 0.58 0.59 /412 1"), -1, "no digits");
  assertEquals(parse("0.52 0.58 0.59 3x/412 1"), -1, "not a number");
  assertEquals(parse("0.52 0.58 0.59 34"), -1, "no slash: cut short");
  assertEquals(parse("0.52 0.58"), -1, "too few fields");
  assertEquals(parse(""), -1);
});

test("runnableTasks agrees with /proc/loadavg and keeps one descriptor across readings", () => {
  const first = runnableTasks(); // opens the file (once)
  const open = fds();
  let least = Infinity, most = -Infinity;
  for (let i = 0; i < 2000; i++) {
    const v = runnableTasks();
    least = Math.min(least, v);
    most = Math.max(most, v);
  }
  assertEquals(fds(), open, "no descriptor per reading");
  const kept = readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === "/proc/loadavg";
    } catch {
      return false; // the listing's own descriptor, closed by now
    }
  });
  assertEquals(kept.length, 1, "one descriptor of /proc/loadavg stays open");
  const text = readFileSync("/proc/loadavg", "latin1");
  const total = Number(/^\S+ \S+ \S+ \d+\/(\d+)/.exec(text)![1]);
  // This thread runs while it reads: at least 1; never more than the tasks that exist.
  assert(first >= 1 && least >= 1, `runnable ${first}, least ${least}`);
  assert(most <= total, `runnable ${most} of ${total} tasks`);
});
