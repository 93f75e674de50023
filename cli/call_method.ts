/**
 * `verbus call --method SERVICE/METHOD --body-hex HEX [--attachment-bytes N]`: one baidu_std
 * call of any method (a grpcurl for baidu_std), printing the response bytes in hex and the size
 * of the response attachment — over the verbus client (every fabric) or, with `--brpc-rdma`,
 * over a plain channel in brpc's RDMA mode (a stock brpc server started with -use_rdma=true).
 * CLI only; the main JS thread.
 * @module
 */
import { decodeEchoMessage, encodeEchoMessage } from "../examples/demo/mod.ts";
import { type CallPath, connectChannel } from "../mod.ts";
import { fromHex, toHex } from "../util/hex.ts";
import type { CallArgs, CallOptions } from "./call_options.ts";
import { headerOptions } from "./call_headers.ts";
import { EXIT_FAILED } from "./options.ts";
import { reportError } from "./style.ts";
import { cliLogger } from "../util/log.ts";
import type { OpReport } from "./call.ts";

/** What one call returns, whatever carried it. */
export interface MethodAnswer {
  response: Uint8Array;
  attachment: Uint8Array;
  path?: CallPath;
  fabric?: string;
}

/** A function that makes one call. */
export type MethodCaller = (
  service: string,
  method: string,
  body: Uint8Array,
  attachment: Uint8Array | undefined,
) => Promise<MethodAnswer>;

/** Splits `SERVICE/METHOD` (service: a full protobuf name, method: an identifier). */
export function parseMethod(spec: string): { service: string; method: string } {
  const m = /^([A-Za-z_][A-Za-z0-9_.]*)\/([A-Za-z_][A-Za-z0-9_]*)$/.exec(spec);
  if (!m) {
    throw new Error(
      `--method: expected SERVICE/METHOD like example.EchoService/Echo, got "${spec}"`,
    );
  }
  return { service: m[1], method: m[2] };
}

/** `n` attachment bytes (0, 1, 2, … mod 256). */
export function attachmentOf(n: number | undefined): Uint8Array | undefined {
  if (!n) return undefined;
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = i & 0xff;
  return b;
}

/** What `--method` calls: the method and the request's body and attachment. */
export type MethodSpec = Pick<CallOptions, "method" | "body-hex" | "attachment-bytes">;

/** Runs `--method`; never throws (a failure is a report with ok false). */
export async function runMethod(call: MethodCaller, o: MethodSpec): Promise<OpReport> {
  const t0 = performance.now();
  const us = () => Math.round((performance.now() - t0) * 10_000) / 10;
  try {
    const { service, method } = parseMethod(o.method!);
    const body = fromHex(o["body-hex"] ?? "");
    const r = await call(service, method, body, attachmentOf(o["attachment-bytes"]));
    return {
      ok: true,
      op: "method",
      path: r.path ?? "-",
      fabric: r.fabric ?? "tcp",
      latency_us: us(),
      result: { response_hex: toHex(r.response), attachment_bytes: r.attachment.length },
    };
  } catch (e) {
    return {
      ok: false,
      op: "method",
      path: "-",
      fabric: "-",
      latency_us: us(),
      error: String((e as Error).message),
    };
  }
}

/**
 * A `--brpc-echo` op's report from its `runMethod` report: the answer's message as the result
 * (what `--brpc-echo` prints without --brpc-rdma / --brpc-ubring), or a failure naming an answer
 * that is not an EchoResponse.
 */
export function echoReport(r: OpReport): OpReport {
  if (!r.ok) return { ...r, op: "brpc-echo" };
  try {
    const hex = (r.result as { response_hex: string }).response_hex;
    return { ...r, op: "brpc-echo", result: decodeEchoMessage(fromHex(hex), "EchoResponse") };
  } catch (e) {
    const { result: _, ...rest } = r;
    return { ...rest, ok: false, op: "brpc-echo", error: (e as Error).message };
  }
}

/**
 * `verbus call --brpc-rdma` / `--brpc-ubring`: a channel in brpc's RDMA or UBRing mode (it stays
 * on TCP, saying why, when either side cannot), running the `--method` and `--brpc-echo` ops in
 * the order given (others are left to the caller to refuse). Returns the exit code.
 */
export async function runBrpcMode(o: CallArgs, emit: (r: OpReport) => void): Promise<number> {
  const logger = cliLogger("verbus call", o.json);
  let ch;
  try {
    ch = await connectChannel({ host: o.host, port: o.port! }, { // --port: checked by the schema
      timeoutMs: o["timeout-ms"],
      brpcRdma: o["brpc-rdma"] ? (o["rdma-device"] ? { device: o["rdma-device"] } : {}) : false,
      brpcUbring: o["brpc-ubring"] ? {} : false,
      logger,
    });
  } catch (e) {
    return reportError("call", (e as Error).message, EXIT_FAILED, o.json);
  }
  const reports: OpReport[] = [];
  const call: MethodCaller = async (s, m, body, attachment) => {
    const r = await ch.call(s, m, body, { ...headerOptions(o.header), attachment });
    return { ...r, fabric: ch.transport };
  };
  try {
    for (const op of o.ops) {
      if (op.name === "method") reports.push(await runMethod(call, { ...o, method: op.arg }));
      if (op.name === "brpc-echo") {
        const r = await runMethod(call, {
          method: "example.EchoService/Echo",
          "body-hex": toHex(encodeEchoMessage(op.arg)),
        });
        reports.push(echoReport(r));
      }
    }
  } finally {
    await ch.close();
  }
  for (const r of reports) emit(r);
  return reports.every((r) => r.ok) ? 0 : EXIT_FAILED;
}
