/**
 * What a caller learns of a handler's unexpected exception: `internal error (id <16 hex>)`, never
 * the exception's text (it may carry paths, keys, another caller's data). The server logs the
 * full error with the same id, so an operator given the caller's message finds the cause.
 * Errors thrown on purpose (`RpcError`, and a Connect handler's `ConnectError`, which becomes an
 * `RpcError`) keep their text; they never come here. Any thread.
 * @module
 */

/** A fresh random 64-bit id (16 lower-case hex digits). */
export function internalErrorId(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** The text a caller gets for the unexpected error logged with `id`. */
export function internalErrorText(id: string): string {
  return `internal error (id ${id})`;
}

/** The id in a text made by {@link internalErrorText}, or undefined when it is not one. */
export function internalErrorIdOf(text: string): string | undefined {
  return /^internal error \(id ([0-9a-f]{16})\)$/.exec(text)?.[1];
}
