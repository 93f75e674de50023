/**
 * Helpers for the Connect suites: an in-process verbus server (shm offered, small region) with
 * the given services, a verbus Connect transport to it, and a descriptor with a streaming method
 * (the example protos have none).
 */
import { create, createFileRegistry, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { serve, type ServeOptionsOf, type Server } from "../../rpc/server/server.ts";
import {
  createVerbusTransport,
  type VerbusTransport,
  type VerbusTransportOptions,
} from "../../rpc/connect/transport.ts";
import type { HandlerContext } from "@connectrpc/connect";
import { SMALL_REGION } from "../fabric/util.ts";
import type { FabricHostOptions } from "../../rpc/session/server/fabric_host.ts";

/**
 * Runs `fn` with a server of `services` (fabric: false = TCP only, like a stock brpc server;
 * `fabricOptions` add to the fabric host's, e.g. `fabrics: ["urma"]`).
 */
export async function withServer<const T extends readonly DescService[] = []>(
  services: ServeOptionsOf<T>["services"],
  fn: (server: Server, warnings: string[]) => Promise<void>,
  fabric: false | undefined = undefined,
  fabricOptions: Partial<FabricHostOptions> = {},
): Promise<void> {
  const warnings: string[] = [];
  const server = await serve({
    port: 0,
    services,
    fabric: fabric === false ? false : { region: SMALL_REGION, ...fabricOptions },
    logger: { warn: (m) => warnings.push(m), info: () => {} },
  });
  try {
    await fn(server, warnings);
  } finally {
    await server.close();
  }
}

/** A transport to `server` (`fabric: "tcp"` for TCP only), closed after `fn`. */
export async function withTransport(
  server: Server,
  options: Partial<VerbusTransportOptions>,
  fn: (t: VerbusTransport) => Promise<void>,
): Promise<void> {
  const t = createVerbusTransport({
    host: "127.0.0.1",
    port: server.port,
    region: SMALL_REGION,
    ...options,
  });
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

/** Both data planes a same-host client can use: shm (the best path) and TCP. */
export const PLANES = [
  { name: "shm", options: {} as Partial<VerbusTransportOptions>, fabric: "shm" },
  { name: "TCP", options: { fabric: "tcp" } as Partial<VerbusTransportOptions>, fabric: "tcp" },
] as const;

/**
 * `test.streams.StreamService` with a unary `Unary(Req) returns (Req)` and a server-streaming
 * `Watch(Req) returns (stream Req)`, built as protoc would describe it.
 */
export function streamingService(): DescService {
  const file = create(FileDescriptorProtoSchema, {
    name: "streams.proto",
    package: "test.streams",
    syntax: "proto3",
    messageType: [{ name: "Req", field: [] }],
    service: [{
      name: "StreamService",
      method: [
        { name: "Unary", inputType: ".test.streams.Req", outputType: ".test.streams.Req" },
        {
          name: "Watch",
          inputType: ".test.streams.Req",
          outputType: ".test.streams.Req",
          serverStreaming: true,
        },
      ],
    }],
  });
  return createFileRegistry(file, () => undefined).getService("test.streams.StreamService")!;
}

/** What {@link endless} records of the calls it served. */
export interface EndlessLog {
  /** Messages yielded so far (all calls). */
  yielded: number;
  /** How the last call ended: "aborted" (its signal was) or "returned". */
  ended?: string;
  /** The last call's context signal, and its reason at the end. */
  signal?: AbortSignal;
  reason?: unknown;
}

/**
 * A greeter whose streams never end by themselves (`greetMany` yields messages of `size` bytes
 * every millisecond; `chat` greets each request) and record in `log` how they were ended.
 */
export function endless(log: EndlessLog, size = 8) {
  const ended = (ctx: HandlerContext) => {
    log.ended ??= ctx.signal.aborted ? "aborted" : "returned";
    log.reason = ctx.signal.reason;
  };
  return {
    greet: () => ({ greeting: "" }),
    async *greetMany(_r: unknown, ctx: HandlerContext) {
      log.signal = ctx.signal;
      try {
        for (;;) {
          log.yielded++;
          yield { greeting: `n${log.yielded}`.padEnd(size), count: BigInt(log.yielded) };
          await new Promise((r) => setTimeout(r, 1));
        }
      } finally {
        ended(ctx);
      }
    },
    async *chat(requests: AsyncIterable<{ name: string }>, ctx: HandlerContext) {
      log.signal = ctx.signal;
      try {
        for await (const r of requests) {
          log.yielded++;
          yield { greeting: `Hello, ${r.name}!` };
        }
      } finally {
        ended(ctx);
      }
    },
  };
}
