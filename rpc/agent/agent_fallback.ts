/**
 * An agent client's own connection to the server, for the calls the agent cannot take (no agent,
 * the ring full, a record too large, headers): opened on the first such call, closed with the
 * client. Answers say `via: "direct"`.
 *
 * Threading: the agent client's JS thread.
 * @module
 */
import type { ClientCallOptions, ClientOptions } from "../client/client_options.ts";
import type { Client } from "../client/direct_client.ts";
import type { AgentCallResult } from "./agent_client_options.ts";

/** See the module documentation. */
export class AgentFallback {
  /** Calls made over this connection. */
  calls = 0;
  #client: Promise<Client> | null = null;

  constructor(
    private readonly address: string | { host: string; port: number },
    private readonly options: Record<string, unknown>,
  ) {}

  /** Makes one call over the fallback connection (opened on first use). */
  async call(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions,
  ): Promise<AgentCallResult> {
    this.calls++;
    this.#client ??= import("../client/direct_client.ts").then((m) =>
      m.connectDirect(this.address, this.options as ClientOptions)
    );
    const r = await (await this.#client).call(service, method, request, options);
    return { ...r, via: "direct" };
  }

  /** Closes the connection if one was opened. */
  async close(): Promise<void> {
    if (this.#client) await (await this.#client).close();
  }
}
