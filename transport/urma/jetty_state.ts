/**
 * A jetty's state after an error: `urma_query_jetty` (its state), `urma_modify_jetty` (to ERROR
 * before a teardown, or RESET → READY to recover) and `urma_flush_jetty` (the work requests it
 * had not completed come back as WR_FLUSH_ERR records, which the caller collects). Optional
 * symbols: on a library without them these report "unsupported" (null / false). Control path;
 * the JS thread of the jetty's context.
 * @module
 */
import { URMA_JETTY_CFG } from "../../ffi/layouts/urma.ts";
import {
  URMA_JETTY_ATTR,
  URMA_JETTY_ATTR_MASK,
  URMA_JETTY_STATE,
} from "../../ffi/layouts/urma_events.ts";
import { URMA_CR_STATUS } from "../../ffi/symbols/liburma.ts";
import type { CrReader } from "./data_path.ts";
import type { Jetty } from "./jetty.ts";
import { checkStatus } from "./urma_lib.ts";

/** The jetty's state name ("READY", "ERROR", ...), or null when urma_query_jetty is absent. */
export function queryJettyState(jetty: Jetty): string | null {
  const fn = jetty.context.lib.lib.symbols.urma_query_jetty;
  if (!fn) return null;
  const attr = new Uint8Array(URMA_JETTY_ATTR.$size);
  const cfg = new Uint8Array(URMA_JETTY_CFG.$size);
  checkStatus(jetty.context.lib, fn(jetty.handle, cfg, attr), "urma_query_jetty", "jetty");
  const state = new DataView(attr.buffer).getUint32(URMA_JETTY_ATTR.state, true);
  const names = Object.keys(URMA_JETTY_STATE) as (keyof typeof URMA_JETTY_STATE)[];
  return names.find((k) => URMA_JETTY_STATE[k] === state) ?? `state ${state}`;
}

/** Moves the jetty to `state` (urma_modify_jetty); false when the library lacks it. */
export function modifyJettyState(jetty: Jetty, state: keyof typeof URMA_JETTY_STATE): boolean {
  const fn = jetty.context.lib.lib.symbols.urma_modify_jetty;
  if (!fn) return false;
  const attr = new Uint8Array(URMA_JETTY_ATTR.$size);
  const d = new DataView(attr.buffer);
  d.setUint32(URMA_JETTY_ATTR.mask, URMA_JETTY_ATTR_MASK.STATE, true);
  d.setUint32(URMA_JETTY_ATTR.state, URMA_JETTY_STATE[state], true);
  checkStatus(jetty.context.lib, fn(jetty.handle, attr), "urma_modify_jetty", state);
  return true;
}

/**
 * Flushes the jetty's outstanding work requests into `into` until none is left; returns how
 * many records came back and how many of them were WR_FLUSH_ERR (-1, -1 when the library has
 * no urma_flush_jetty).
 */
export function flushJetty(jetty: Jetty, into: CrReader): { records: number; flushErr: number } {
  const fn = jetty.context.lib.lib.symbols.urma_flush_jetty;
  if (!fn) return { records: -1, flushErr: -1 };
  const flushErrCode = URMA_CR_STATUS.indexOf("WR_FLUSH_ERR");
  let records = 0, flushErr = 0;
  for (let round = 0; round < 64; round++) {
    const n = fn(jetty.handle, into.max, into.buffer);
    if (n <= 0) break;
    records += n;
    for (let i = 0; i < n; i++) if (into.status(i) === flushErrCode) flushErr++;
  }
  return { records, flushErr };
}
