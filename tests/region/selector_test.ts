/**
 * Path selection: every rule, every boundary, precedence, forced paths, config validation and the
 * example table.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import {
  CALL_PATHS,
  type CallPath,
  callPathSchema,
  DEFAULT_SELECTOR_CONFIG,
  parseSelectorConfig,
  type SelectInput,
  type SelectorConfig,
  selectPath,
  selectPathWithoutReason,
} from "../../rpc/client/selector.ts";
import { selectionTable } from "./selection_table.ts";

const cfg = DEFAULT_SELECTOR_CONFIG;
const base: SelectInput = {
  fabricUp: true,
  errorCount: 0,
  requestBytes: 100,
  requestFitsSlot: true,
};

function pick(over: Partial<SelectInput>, c: SelectorConfig = cfg) {
  const input = { ...base, ...over };
  const s = selectPath(input, c);
  assertEquals(
    selectPathWithoutReason(input, c),
    s.path,
    "selectPathWithoutReason agrees with selectPath",
  );
  return s;
}

function expectPath(
  over: Partial<SelectInput>,
  path: CallPath,
  reason?: string,
  c?: SelectorConfig,
) {
  const s = pick(over, c);
  assertEquals(s.path, path, `path for ${JSON.stringify(over)}`);
  if (reason !== undefined) assertEquals(s.reason, reason);
}

test("defaults: 8 errors, ring 90 %, object pool 85 %, BULK 8 KiB, LAZY 8 KiB", () => {
  assertEquals({ ...cfg }, {
    errorThreshold: 8,
    ringPressure: 0.9,
    objpoolPressure: 0.85,
    bulkThreshold: 8192,
    largeThreshold: 8192,
  });
});

test("small request and response → EAGER", () => {
  expectPath({}, "EAGER", "small request and response");
  expectPath({ expectedResponseBytes: 0 }, "EAGER");
});

test("bulk threshold: exactly at → BULK, one below → EAGER", () => {
  expectPath({ requestBytes: 8192 }, "BULK", "request 8192 B ≥ bulk threshold 8192 B");
  expectPath({ requestBytes: 16384 }, "BULK", "request 16384 B ≥ bulk threshold 8192 B");
  expectPath({ requestBytes: 8191 }, "EAGER");
});

test("a request that does not fit a slot → BULK even below the bulk threshold", () => {
  expectPath(
    { requestBytes: 5000, requestFitsSlot: false },
    "BULK",
    "request 5000 B does not fit a request slot",
  );
});

test("large threshold: exactly at → LAZY, one below → EAGER", () => {
  expectPath(
    { expectedResponseBytes: 8192 },
    "LAZY",
    "expected response 8192 B ≥ large threshold 8192 B",
  );
  expectPath({ expectedResponseBytes: 8191 }, "EAGER");
});

test("fabric down → TCP_FALLBACK", () => {
  expectPath({ fabricUp: false }, "TCP_FALLBACK", "fabric down");
});

test("error count: at the threshold tolerated, one past it → TCP_FALLBACK", () => {
  expectPath({ errorCount: 8 }, "EAGER");
  expectPath({ errorCount: 9 }, "TCP_FALLBACK", "error count 9 > threshold 8");
  expectPath({ errorCount: 0 }, "EAGER", undefined, { ...cfg, errorThreshold: 0 });
  expectPath({ errorCount: 1 }, "TCP_FALLBACK", undefined, { ...cfg, errorThreshold: 0 });
});

test("ring pressure: at 90 % fine, over 90 % → TCP_FALLBACK", () => {
  expectPath({ snapshot: { ringOccupancy: 0.9, objectPoolUsage: 0 } }, "EAGER");
  expectPath(
    { snapshot: { ringOccupancy: 0.93, objectPoolUsage: 0 } },
    "TCP_FALLBACK",
    "server ring 93% full (> 90%)",
  );
  expectPath({ snapshot: { ringOccupancy: 0.9001, objectPoolUsage: 0 } }, "TCP_FALLBACK");
  expectPath({ snapshot: { ringOccupancy: 1, objectPoolUsage: 0 } }, "TCP_FALLBACK");
});

test("object-pool pressure: at 85 % fine, over 85 % → TCP_FALLBACK", () => {
  expectPath({ snapshot: { ringOccupancy: 0, objectPoolUsage: 0.85 } }, "EAGER");
  expectPath(
    { snapshot: { ringOccupancy: 0, objectPoolUsage: 0.86 } },
    "TCP_FALLBACK",
    "server object pool 86% used (> 85%)",
  );
});

test("an expected answer larger than the server's object pool holds → TCP_FALLBACK", () => {
  // The server would run the call and then have no room for its answer (never redone).
  expectPath(
    { expectedResponseBytes: 100_001, maxResponseBytes: 100_000 },
    "TCP_FALLBACK",
    "expected response 100001 B > the 100000 B the server's object pool holds",
  );
  expectPath({ expectedResponseBytes: 100_000, maxResponseBytes: 100_000 }, "LAZY");
  expectPath(
    { requestBytes: 20_000, expectedResponseBytes: 200_000, maxResponseBytes: 1000 },
    "TCP_FALLBACK",
  );
  expectPath({ expectedResponseBytes: 1 << 30 }, "LAZY", undefined); // pool size unknown
  expectPath({ forcePath: "LAZY", expectedResponseBytes: 2000, maxResponseBytes: 1000 }, "LAZY");
});

test("no snapshot means no pressure check", () => {
  expectPath({ snapshot: undefined, expectedResponseBytes: 10000 }, "LAZY");
});

test("precedence: down > errors > ring > objpool > BULK > no-fit > LAZY > EAGER", () => {
  const all: Partial<SelectInput> = {
    fabricUp: false,
    errorCount: 100,
    snapshot: { ringOccupancy: 1, objectPoolUsage: 1 },
    requestBytes: 9000,
    requestFitsSlot: false,
    expectedResponseBytes: 9000,
  };
  expectPath(all, "TCP_FALLBACK", "fabric down");
  expectPath({ ...all, fabricUp: true }, "TCP_FALLBACK", "error count 100 > threshold 8");
  expectPath(
    { ...all, fabricUp: true, errorCount: 0 },
    "TCP_FALLBACK",
    "server ring 100% full (> 90%)",
  );
  const noRing = {
    ...all,
    fabricUp: true,
    errorCount: 0,
    snapshot: { ringOccupancy: 0, objectPoolUsage: 1 },
  };
  expectPath(noRing, "TCP_FALLBACK", "server object pool 100% used (> 85%)");
  const calm = { ...noRing, snapshot: { ringOccupancy: 0, objectPoolUsage: 0 } };
  expectPath(calm, "BULK", "request 9000 B ≥ bulk threshold 8192 B");
  expectPath({ ...calm, requestBytes: 100 }, "BULK", "request 100 B does not fit a request slot");
  expectPath({ ...calm, requestBytes: 100, requestFitsSlot: true }, "LAZY");
  expectPath(
    { ...calm, requestBytes: 100, requestFitsSlot: true, expectedResponseBytes: 1 },
    "EAGER",
  );
});

test("forced paths win over every rule except an unavailable fabric", () => {
  const bad: Partial<SelectInput> = {
    errorCount: 100,
    snapshot: { ringOccupancy: 1, objectPoolUsage: 1 },
    requestBytes: 20000,
    expectedResponseBytes: 20000,
  };
  for (const p of CALL_PATHS) expectPath({ ...bad, forcePath: p }, p, `forced ${p}`);
  expectPath({ forcePath: "TCP_FALLBACK", fabricUp: false }, "TCP_FALLBACK", "forced TCP_FALLBACK");
  for (const p of ["EAGER", "LAZY", "BULK"] as const) {
    expectPath(
      { forcePath: p, fabricUp: false },
      "TCP_FALLBACK",
      `forced ${p} unavailable: fabric down`,
    );
  }
});

test("forced EAGER / LAZY whose request does not fit a slot → BULK; forced BULK is fine", () => {
  for (const p of ["EAGER", "LAZY"] as const) {
    expectPath(
      { forcePath: p, requestBytes: 40000, requestFitsSlot: false },
      "BULK",
      `forced ${p} unavailable: request 40000 B does not fit a request slot`,
    );
  }
  expectPath(
    { forcePath: "BULK", requestBytes: 40000, requestFitsSlot: false },
    "BULK",
    "forced BULK",
  );
});

test("custom thresholds move every boundary", () => {
  const c = parseSelectorConfig({
    bulkThreshold: 100,
    largeThreshold: 50,
    ringPressure: 0.5,
    objpoolPressure: 0.25,
  });
  expectPath({ requestBytes: 99 }, "EAGER", undefined, c);
  expectPath({ requestBytes: 100 }, "BULK", undefined, c);
  expectPath({ requestBytes: 10, expectedResponseBytes: 50 }, "LAZY", undefined, c);
  expectPath(
    { requestBytes: 10, snapshot: { ringOccupancy: 0.51, objectPoolUsage: 0 } },
    "TCP_FALLBACK",
    undefined,
    c,
  );
  expectPath(
    { requestBytes: 10, snapshot: { ringOccupancy: 0, objectPoolUsage: 0.26 } },
    "TCP_FALLBACK",
    undefined,
    c,
  );
  assertEquals(c.errorThreshold, 8, "unspecified fields keep their defaults");
});

test("config validation names the field", () => {
  assertThrows(() => parseSelectorConfig({ ringPressure: 1.5 }), VerbusError, "ringPressure");
  assertThrows(() => parseSelectorConfig({ bulkThreshold: 0 }), VerbusError, "bulkThreshold");
  assertThrows(() => parseSelectorConfig({ errorThreshold: -1 }), VerbusError, "errorThreshold");
  assertThrows(() => parseSelectorConfig({ largeThreshold: "8k" }), VerbusError, "largeThreshold");
  assertThrows(() => parseSelectorConfig({ bulkTreshold: 1 }), VerbusError, "bulkTreshold");
  const e = assertThrows(() => parseSelectorConfig({ objpoolPressure: -0.1 }), VerbusError);
  assertEquals(e.code, "INVALID_OPTIONS");
  assert(callPathSchema.safeParse("LAZY").success);
  assert(!callPathSchema.safeParse("lazy").success);
});

test("selectionTable rows hold under the defaults and under custom thresholds", () => {
  const configs = [
    cfg,
    parseSelectorConfig({ bulkThreshold: 1, largeThreshold: 1 }),
    parseSelectorConfig({ errorThreshold: 0, ringPressure: 0, objpoolPressure: 1 }),
    parseSelectorConfig({ bulkThreshold: 65536, largeThreshold: 32768, ringPressure: 0.5 }),
  ];
  for (const c of configs) {
    const rows = selectionTable(c);
    assert(rows.length >= 17, "every rule has a row");
    assertEquals(new Set(rows.map((r) => r.name)).size, rows.length, "names are unique");
    for (const r of rows) assertEquals(selectPath(r.input, c).path, r.expected, r.name);
  }
  const seen = new Set(selectionTable().map((r) => r.expected));
  assertEquals(seen.size, 4, "the default table shows all four paths");
});
