/**
 * A/B probe inside the Soft-RoCE VM: one verbs session of the tree named by the first argument
 * (its tests/vm/fabric_verbs_util.ts: server on rxe1 in event mode, client on rxe0), ECHO 64 B
 * p50 at 1 in flight and calls/s at 16 in flight, client in poll then event mode. Run it for two
 * trees alternately in one VM session, e.g.
 *   for t in /work/main $PWD; do (cd $t && deno run -A $OLDPWD/bench/vm/ab_probe.ts $t); done
 * @module
 */
// deno-lint-ignore-file no-explicit-any
const root = (globalThis as any).Deno
  ? (globalThis as any).Deno.args[0]
  : (globalThis as any).process.argv[2];
const { verbsClient, verbsServer } = await import(`${root}/tests/vm/fabric_verbs_util.ts`);
const out: string[] = [];
for (const cm of ["poll", "event"]) {
  const { server } = await verbsServer({ mode: "event" });
  const c = await verbsClient(server.port, { mode: cm });
  const msg = new Uint8Array(64);
  for (let i = 0; i < 100; i++) await c.call("t.Verbs", "Echo", msg);
  const t: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    await c.call("t.Verbs", "Echo", msg);
    t.push((performance.now() - t0) * 1000);
  }
  t.sort((a, b) => a - b);
  let n = 0;
  const end = performance.now() + 2000;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (performance.now() < end) {
      await c.call("t.Verbs", "Echo", msg);
      n++;
    }
  }));
  out.push(`${cm}: p50 ${t[150].toFixed(0)} µs, 16-in-flight ${(n / 2).toFixed(0)}/s`);
  await c.close();
  await server.close();
}
console.log(root.includes("main") ? "MAIN " : "NEW  ", out.join(" | "));
