// Sums the JSON reports of tests/run.ts (one per suite) into the closing line CI reads:
// "N passed, N failed". A suite listed as expected but without a report counts as one failure.
// usage: node scripts/sum_results.mjs DIR suite1 suite2 ...
import { existsSync, readFileSync } from "node:fs";
const [dir, ...suites] = process.argv.slice(2);
let passed = 0, failed = 0, skipped = 0;
for (const s of suites) {
  const f = `${dir}/${s}.json`;
  if (!existsSync(f)) {
    console.log(`suite ${s}: no report (the suite crashed or did not run) — counted as 1 failure`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(f, "utf8"));
  console.log(`suite ${s}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped`);
  for (const x of r.failures ?? []) console.log(`  FAILED ${x}`);
  passed += r.passed;
  failed += r.failed;
  skipped += r.skipped;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 ? 1 : 0);
