/**
 * The selector's example table: named inputs for every rule, boundary and precedence of
 * `rpc/client/selector.ts`, with the path each must get (checked by selector_test.ts).
 * @module
 */
import {
  type CallPath,
  DEFAULT_SELECTOR_CONFIG,
  type SelectInput,
  type SelectorConfig,
} from "../../rpc/client/selector.ts";

/** One named example of the selection rules. */
export interface SelectionRow {
  /** What the row demonstrates. */
  name: string;
  input: SelectInput;
  /** The path {@link selectPath} picks for `input` under the config the table was built for. */
  expected: CallPath;
}

/**
 * Named examples of every rule, boundary and precedence, built for `cfg`'s thresholds (so the
 * table stays true for a custom config). Allocates.
 */
export function selectionTable(cfg: SelectorConfig = DEFAULT_SELECTOR_CONFIG): SelectionRow[] {
  const small = {
    fabricUp: true,
    errorCount: 0,
    requestBytes: Math.min(64, cfg.bulkThreshold - 1),
    requestFitsSlot: true,
  };
  const bulk = cfg.bulkThreshold, large = cfg.largeThreshold;
  const rows: SelectionRow[] = [
    { name: "small request and response", input: { ...small }, expected: "EAGER" },
    {
      name: "response one below the large threshold",
      input: { ...small, expectedResponseBytes: large - 1 },
      expected: "EAGER",
    },
    {
      name: "response exactly at the large threshold",
      input: { ...small, expectedResponseBytes: large },
      expected: "LAZY",
    },
    {
      name: "request one below the bulk threshold",
      input: { ...small, requestBytes: bulk - 1 },
      expected: "EAGER",
    },
    {
      name: "request exactly at the bulk threshold",
      input: { ...small, requestBytes: bulk },
      expected: "BULK",
    },
    {
      name: "request below the bulk threshold that does not fit a slot",
      input: { ...small, requestBytes: bulk - 1, requestFitsSlot: false },
      expected: "BULK",
    },
    {
      name: "large request and large response: BULK before LAZY",
      input: { ...small, requestBytes: bulk, expectedResponseBytes: large },
      expected: "BULK",
    },
    { name: "fabric down", input: { ...small, fabricUp: false }, expected: "TCP_FALLBACK" },
    {
      name: "error count at the threshold (tolerated)",
      input: { ...small, errorCount: cfg.errorThreshold },
      expected: "EAGER",
    },
    {
      name: "error count past the threshold",
      input: { ...small, errorCount: cfg.errorThreshold + 1 },
      expected: "TCP_FALLBACK",
    },
    {
      name: "server ring exactly at its pressure limit",
      input: { ...small, snapshot: { ringOccupancy: cfg.ringPressure, objectPoolUsage: 0 } },
      expected: "EAGER",
    },
    {
      name: "server object pool exactly at its pressure limit",
      input: { ...small, snapshot: { ringOccupancy: 0, objectPoolUsage: cfg.objpoolPressure } },
      expected: "EAGER",
    },
    { name: "forced LAZY", input: { ...small, forcePath: "LAZY" }, expected: "LAZY" },
    {
      name: "forced EAGER beats a large request and too many errors",
      input: {
        ...small,
        forcePath: "EAGER",
        requestBytes: bulk,
        errorCount: cfg.errorThreshold + 1,
      },
      expected: "EAGER",
    },
    {
      name: "forced TCP_FALLBACK on a healthy fabric",
      input: { ...small, forcePath: "TCP_FALLBACK" },
      expected: "TCP_FALLBACK",
    },
    {
      name: "forced BULK with the fabric down",
      input: { ...small, forcePath: "BULK", fabricUp: false },
      expected: "TCP_FALLBACK",
    },
    {
      name: "forced EAGER whose request does not fit a slot",
      input: { ...small, forcePath: "EAGER", requestBytes: bulk, requestFitsSlot: false },
      expected: "BULK",
    },
  ];
  // Pressure rows only where pressure is possible (a limit of 1.0 means "never").
  if (cfg.ringPressure < 1) {
    rows.push({
      name: "server ring over its pressure limit beats BULK",
      input: {
        ...small,
        requestBytes: bulk,
        snapshot: { ringOccupancy: (1 + cfg.ringPressure) / 2, objectPoolUsage: 0 },
      },
      expected: "TCP_FALLBACK",
    });
  }
  if (cfg.objpoolPressure < 1) {
    rows.push({
      name: "server object pool over its pressure limit beats LAZY",
      input: {
        ...small,
        expectedResponseBytes: large,
        snapshot: { ringOccupancy: 0, objectPoolUsage: (1 + cfg.objpoolPressure) / 2 },
      },
      expected: "TCP_FALLBACK",
    });
  }
  return rows;
}
