/**
 * Helpers shared by the demo tests: temp directories and an in-process caller.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Caller, DemoCallContext, DemoHandler } from "../../examples/demo/mod.ts";

/** A fresh temp directory; `remove()` deletes it with its contents. */
export function tempDir(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), "verbus-demo-test-"));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A {@link Caller} that dispatches straight into method tables, passing attachments like a server. */
export function directCaller(
  services: Readonly<Record<string, Readonly<Record<string, DemoHandler>>>>,
): Caller {
  return async (service, method, request, options) => {
    const handler = services[service]?.[method];
    if (handler === undefined) throw new Error(`no method ${service}.${method}`);
    const ctx: DemoCallContext = { requestAttachment: options?.attachment };
    const response = await handler(request, ctx);
    return { response, attachment: ctx.responseAttachment };
  };
}
