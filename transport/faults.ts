/**
 * The faults port: the one door through which tests and demos break a fabric on purpose. Data
 * path code never calls it; an endpoint exposes it as `endpoint.faults`, and a fabric that cannot
 * inject a kind says so in `supported` (inject then throws INVALID_ARGUMENT). The client
 * handshake wraps a fresh endpoint with {@link failingNthOp} only when `faults.opFail` asks for it.
 * One JS thread (the endpoint's).
 * @module
 */
import { type FabricEndpoint, FAILED } from "./fabric.ts";

// The port's interface is part of the endpoint contract (fabric.ts), which owns it.
export type { FabricFaults, FaultKind } from "./fabric.ts";

/**
 * The fabric operations a {@link failingNthOp} endpoint counts: every one-sided post (write,
 * scatter-gather write, u32 publication, read).
 */
const COUNTED_OPS = ["write", "writeSg", "writeU32", "read"] as const;

/**
 * Wraps `endpoint` (any fabric) so that its `n`th fabric operation (1-based, over
 * {@link COUNTED_OPS}) really fails: that post is not made, the endpoint fails with `reason`
 * (as when the fabric reports an error: every later post returns FAILED, `failed` is true) and
 * the post returns FAILED. Every other member is the endpoint's own; the wrapper owns nothing
 * (close() closes the endpoint). Used by `connect({ faults: { opFail: n } })` and
 * `verbus call --simulate-op-fail N`. One JS thread (the endpoint's).
 */
export function failingNthOp(
  endpoint: FabricEndpoint,
  n: number,
  reason = `simulated failure of fabric operation ${n}`,
): FabricEndpoint {
  let left = n;
  const counted = (op: (...a: never[]) => number) => (...args: never[]): number => {
    if (--left === 0) {
      endpoint.fail(reason);
      return FAILED;
    }
    return op.apply(endpoint, args);
  };
  const wrapper = Object.create(endpoint) as FabricEndpoint;
  for (const name of COUNTED_OPS) {
    const op = endpoint[name] as unknown as (...a: never[]) => number;
    Object.defineProperty(wrapper, name, { value: counted(op) });
  }
  // Methods of a class with private fields must run on the endpoint itself, not on the wrapper.
  for (
    let p = Object.getPrototypeOf(endpoint);
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
      if (name === "constructor" || Object.hasOwn(wrapper, name)) continue;
      if (typeof d.value === "function") {
        Object.defineProperty(wrapper, name, { value: d.value.bind(endpoint) });
      } else if (d.get) {
        Object.defineProperty(wrapper, name, { get: () => d.get!.call(endpoint) });
      }
    }
  }
  return wrapper;
}
