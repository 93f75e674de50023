/**
 * The e2e report's rows give the mean and p99.9 beside p50 and p99 (a bimodal latency — most
 * calls fast, a few slow — shows in the mean, not in the p50); a row whose producer measured
 * neither shows "—", and the median over rounds keeps them only when every round has them.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { markdown, medianRows, type Row } from "../../bench/e2e/report.ts";

const row = (round: number, extra: Partial<Row>): Row => ({
  round,
  runtime: "bun",
  case: "ECHO 64 B",
  system: "verbus shm",
  inflight: 1,
  p50_us: 2.5,
  p99_us: 30,
  qps: 41170,
  path: "EAGER",
  ...extra,
});

test("e2e rows: mean and p99.9 columns, the median over rounds, '—' where not measured", () => {
  const rows = [
    row(0, { mean_us: 24.3, p999_us: 900 }),
    row(1, { mean_us: 20.1, p999_us: 700 }),
    row(2, { mean_us: 26, p999_us: 1100 }),
    row(0, { system: "grpc-js" }),
  ];
  const m = medianRows(rows);
  assertEquals([m[0].mean_us, m[0].p999_us], [24.3, 900]);
  assertEquals([m[1].mean_us, m[1].p999_us], [undefined, undefined]);
  const md = markdown(rows, "header");
  assert(md.includes("| in flight | mean µs | p50 µs | p99 µs | p99.9 µs | calls/s |"), md);
  assert(
    md.includes(
      "| bun | ECHO 64 B | verbus shm | EAGER | 1 | 24.3 | 2.5 | 30 | 900 | 41170 | 41170–41170 |",
    ),
    md,
  );
  assert(
    md.includes(
      "| bun | ECHO 64 B | grpc-js | EAGER | 1 | — | 2.5 | 30 | — | 41170 | 41170–41170 |",
    ),
    md,
  );
});
