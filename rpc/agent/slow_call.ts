/**
 * The agent client's slow path: a call that cannot be posted at once — not joined yet (or the
 * agent restarted), headers the ring's records cannot carry, a record larger than a slot (it
 * spills into this process's spill area), no free slot, or the ring FULL. It joins, waits for
 * room until the call's deadline, or goes over the client's own connection when `fallback` names
 * the server; anything else fails with an error naming what did not fit.
 *
 * Threading: the agent client's JS thread.
 * @module
 */
import { TimeoutError, VerbusError } from "../../errors.ts";
import type { AgentRingProducer } from "../../transport/agent_ring/mod.ts";
import type { ClientCallOptions } from "../client/client_options.ts";
import type { AgentCallResult } from "./agent_client_options.ts";
import type { AgentFallback } from "./agent_fallback.ts";
import { encodeRequest, requestBytes, type RequestFields } from "./request_record.ts";
import type { SlotCalls } from "./slot_calls.ts";

/** What the slow path needs of its agent client (the client builds one for its life). */
export interface SlowCallHost {
  /** The agent's name (for messages). */
  readonly name: string;
  /** The client's default timeout. */
  readonly timeoutMs: number;
  /** The client's own connection, or null without `fallback`. */
  readonly fallback: AgentFallback | null;
  /** The ring joined now (null: not joined, or the agent went away). */
  port(): AgentRingProducer | null;
  /** Joins the agent's ring (NOT_FOUND without an agent; FULL with every producer entry taken). */
  join(): Promise<AgentRingProducer>;
  /** The calls in the joined ring's slots. */
  calls(): SlotCalls<AgentCallResult>;
  /** Posts slot k's record of `len` bytes: the call's promise, or null when the ring is FULL. */
  post(
    port: AgentRingProducer,
    k: number,
    len: number,
    deadline: number,
  ): Promise<AgentCallResult> | null;
  /** Counts a post the ring refused as FULL. */
  countFull(): void;
}

/** One call through the slow path (see the module documentation). */
export async function callSlow(
  host: SlowCallHost,
  service: string,
  method: string,
  request: Uint8Array,
  options: ClientCallOptions,
): Promise<AgentCallResult> {
  const fallback = host.fallback;
  if (options.userFields !== undefined || options.requestId !== undefined) {
    // The agent's ring records have no room for headers: never drop them silently.
    if (fallback) return await fallback.call(service, method, request, options);
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `${service}.${method}: headers (user_fields, request_id) do not pass through agent "${host.name}"'s ring; give the agent client a fallback to call directly`,
    );
  }
  const timeoutMs = options.timeoutMs ?? host.timeoutMs;
  const deadline = performance.now() + timeoutMs;
  const fields: RequestFields = {
    service,
    method,
    request,
    attachment: options.attachment ?? new Uint8Array(0),
    timeoutMs,
    forcePath: options.forcePath,
    expectedResponseBytes: options.expectedResponseBytes,
    logId: options.logId,
  };
  let port: AgentRingProducer;
  try {
    port = host.port() ?? await host.join(); // joined: no await (a turn per call)
  } catch (e) {
    // No agent by that name, or every producer entry of its ring taken: our own connection.
    if (fallback && e instanceof VerbusError && (e.code === "NOT_FOUND" || e.code === "FULL")) {
      return await fallback.call(service, method, request, options);
    }
    throw e;
  }
  // Larger than a slot: the record spills into this process's spill area of the agent's ring.
  const need = requestBytes(fields);
  if (need > port.maxRecord) {
    if (fallback) return await fallback.call(service, method, request, options);
    throw new VerbusError(
      "BOUNDS",
      `request of ${
        request.length + fields.attachment.length
      } bytes does not fit agent "${host.name}"'s ${port.slotData}-byte slot nor its ${port.maxRecord}-byte spill half (set fallback to call directly)`,
    );
  }
  for (;;) {
    const calls = host.calls();
    while (calls.freeSlots === 0 && host.port() === port) {
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new TimeoutError(`no free slot of agent "${host.name}" before the deadline`);
      }
      await calls.waitForFree(left);
    }
    if (host.port() !== port) return await callSlow(host, service, method, request, options);
    const k = calls.takeFree();
    const area = port.area(k, need);
    if (area === null) { // the spill area is taken by calls in flight: wait for room
      calls.giveBack(k);
      if (performance.now() > deadline) {
        throw new TimeoutError(`no room in agent "${host.name}"'s spill area before the deadline`);
      }
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    let len: number;
    try {
      len = encodeRequest(area, fields);
    } catch (e) {
      calls.giveBack(k); // not posted: the slot is free again
      throw e;
    }
    if (len < 0) {
      calls.giveBack(k);
      throw new VerbusError("BOUNDS", `service or method name of over 65535 bytes`);
    }
    const posted = host.post(port, k, len, deadline);
    if (posted !== null) return await posted;
    calls.giveBack(k);
    host.countFull();
    if (fallback) return await fallback.call(service, method, request, options);
    if (performance.now() > deadline) {
      throw new VerbusError("FULL", `agent "${host.name}"'s ring stayed full for ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
}
