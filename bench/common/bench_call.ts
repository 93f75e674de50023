/**
 * The arguments of one `verbus call --async-bench` client, as the e2e, A/B and CPU benches run it.
 * @module
 */

/** What one bench client does. */
export interface AsyncBench {
  port: number;
  fabric: string;
  /** `--bench-op`. */
  op: string;
  bytes: number;
  window: number;
  calls: number;
  /** Calls made first and left out of the figures. */
  warmup: number;
  /** Stop the measured phase after this many seconds (`--async-seconds`; default: no limit). */
  seconds?: number;
  /**
   * `--async-sync`: after the warm-up it prints `{"ready":true}` and waits for a line on stdin
   * (the harness starts several clients' measured calls together).
   */
  sync?: boolean;
}

/** `verbus call` arguments for `b` (JSON output, 30 s call timeout). */
export function asyncBenchArgs(b: AsyncBench): string[] {
  return [
    "call",
    "--port",
    String(b.port),
    "--json",
    "--fabric",
    b.fabric,
    "--async-bench",
    String(b.calls),
    "--bench-op",
    b.op,
    "--bench-bytes",
    String(b.bytes),
    "--async-window",
    String(b.window),
    "--async-warmup",
    String(b.warmup),
    "--timeout-ms",
    "30000",
    ...(b.seconds === undefined ? [] : ["--async-seconds", String(b.seconds)]),
    ...(b.sync ? ["--async-sync"] : []),
  ];
}
