/**
 * `verbus call --header NAME=VALUE` (repeatable): the request headers every call of the command
 * sends, mapped as the Connect transport maps a generated client's headers (rpc/connect/headers.ts):
 * `log-id` → `log_id` (a decimal unsigned 64-bit integer), `x-request-id` → `request_id`, any
 * other → `user_fields[NAME]` (names lower-cased, a name given twice joined with ", "). They
 * travel on every path: on a fabric in the call's metadata block, on TCP in the RpcMeta.
 * CLI only; pure.
 * @module
 */
import { z } from "zod";
import type { ClientCallOptions } from "../mod.ts";

/** What a `--header` value must look like: an HTTP header name, "=", the value (may be empty). */
export const headerOptionSchema: z.ZodString = z.string().regex(
  /^[!#$%&'*+.^_`|~0-9A-Za-z-]+=[^\r\n\0]*$/,
  "expected NAME=VALUE (a header name, then =, then its value)",
).refine(
  (s) => !/^log-id=/i.test(s) || /^log-id=\d{1,20}$/i.test(s) && BigInt(s.slice(7)) < 1n << 64n,
  "log-id: expected a decimal unsigned 64-bit integer",
);

/** The headers of `--header` values (checked by {@link headerOptionSchema}) as call options. */
export function headerOptions(
  values: readonly string[] | undefined,
): Pick<ClientCallOptions, "userFields" | "requestId" | "logId"> {
  if (values === undefined || values.length === 0) return {};
  const o: Pick<ClientCallOptions, "userFields" | "requestId" | "logId"> = {};
  const fields = new Map<string, string>();
  for (const v of values) {
    const eq = v.indexOf("=");
    const name = v.slice(0, eq).toLowerCase(), value = v.slice(eq + 1).trim();
    if (name === "log-id") {
      const id = BigInt.asIntN(64, BigInt(value)); // an int64 on the wire (2^64-1 is -1)
      o.logId = id >= BigInt(Number.MIN_SAFE_INTEGER) && id <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(id)
        : id;
    } else if (name === "x-request-id") o.requestId = value;
    else fields.set(name, fields.has(name) ? `${fields.get(name)}, ${value}` : value);
  }
  if (fields.size > 0) o.userFields = fields;
  return o;
}
