/**
 * `verbus doctor [--json]`: what this host can do, said plainly (or as one JSON object).
 * @module
 */
import { z } from "zod";
import {
  type AnyFabricDescriptor,
  type BrpcUbringCapability,
  brpcUbringCapability,
  FABRIC_DESCRIPTORS,
  fabricDoctorLines,
  type HostCapabilities,
  parseUbringAddress,
  probeHost,
  simulatorPath,
} from "../mod.ts";
import { parseCommandLine, usageError } from "./options.ts";
import { wantsJson } from "./style.ts";

/** What doctor says about one native library. */
type LibraryStatus = HostCapabilities["libraries"]["libibverbs"];

/** The simulated liburma of this build (`--urma=sim`); see the library's `simulatorPath`. */
export { simulatorPath };

const HELP = `usage: verbus doctor [--json] [--urma=sim | --urma PATH] [--brpc-ubring HOST:PORT]

--urma=sim uses verbus's simulated liburma (build/urma_sim); it is never used otherwise.
--brpc-ubring HOST:PORT also runs brpc's UBRing handshake with the server there and says
                whether it answers over UBRing, and why not.

Reports the runtime, the C helper (found, loaded, struct layouts checked), libibverbs /
librdmacm / liburma (found or not, and every path tried), RDMA devices with ports, state, MTU,
link layer and GIDs, URMA devices, shared memory, and the fabrics this host can therefore use.`;

function lib(name: string, s: LibraryStatus): string[] {
  if (s.found) return [`  ${name.padEnd(11)} found: ${s.path} (${s.source})`];
  const out = [`  ${name.padEnd(11)} not found`];
  for (const t of s.tried) out.push(`               tried ${t.source}: ${t.path} — ${t.reason}`);
  if (s.tried.length === 0 && s.error) out.push(`               ${s.error}`);
  return out;
}

/**
 * Renders the capabilities for a person: each fabric's section as its descriptor writes it
 * (`fabrics` as given to probeHost; default: the registered ones).
 */
export function formatDoctor(
  c: HostCapabilities,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
  ubring?: BrpcUbringCapability,
): string {
  const out: string[] = [];
  out.push(`runtime      ${c.runtime.name} ${c.runtime.version}`);
  if (c.helper.found && c.helper.layoutOk) {
    out.push(
      `helper       ${c.helper.version} loaded from ${c.helper.path} (${c.helper.source}); ${c.helper.layoutEntries} layout entries match`,
    );
  } else {
    const [first, ...more] = c.helper.error?.split("\n") ?? [];
    out.push(`helper       NOT usable: ${first}`);
    for (const t of c.helper.tried) {
      out.push(`               tried ${t.source}: ${t.path} — ${t.reason}`);
    }
    // what to do about it (the loader's hint), without repeating the attempts listed above
    for (const line of more.filter((l) => !l.startsWith("  "))) out.push(`               ${line}`);
  }
  out.push("libraries");
  for (const [name, status] of Object.entries(c.libraries)) out.push(...lib(name, status));
  out.push(...fabricDoctorLines(c, fabrics));
  out.push(
    `brpc-rdma    ${
      c.brpcRdma.usable
        ? `usable on ${c.brpcRdma.where} (serve/call --brpc-rdma)`
        : `not usable: ${c.brpcRdma.reason} (--brpc-rdma stays on TCP)`
    }`,
  );
  if (ubring !== undefined) {
    out.push(
      `brpc-ubring  ${
        ubring.usable
          ? "usable: /dev/shm takes brpc's 4 MiB ring objects (serve/call --brpc-ubring)"
          : `not usable: ${ubring.reason} (--brpc-ubring stays on TCP)`
      }`,
    );
    const p = ubring.peer;
    if (p) {
      out.push(
        `             ${p.address}: ${
          p.reachable ? "reachable over UBRing" : "not over UBRing"
        }: ${p.detail}`,
      );
    }
  }
  out.push(`fabrics      ${c.fabrics.join(" > ")}  (best first)`);
  return out.join("\n");
}

const schema = z.object({
  urma: z.string().min(1, "--urma needs a value").optional(),
  json: z.boolean().default(false),
  "brpc-ubring": z.string().min(1, "--brpc-ubring needs HOST:PORT").optional(),
}).strict();

/** Parses `verbus doctor`'s argv (`--urma sim` or `--urma=sim`, `--json`); throws naming the option. */
export function parseDoctorArgs(args: string[]): z.output<typeof schema> {
  return parseCommandLine(schema, args);
}

/** Entry point of `verbus doctor`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let o: z.output<typeof schema>;
  try {
    o = parseDoctorArgs(args);
  } catch (e) {
    return usageError("doctor", e, wantsJson(args));
  }
  const urma = o.urma;
  let target: { host: string; port: number } | undefined;
  try {
    target = o["brpc-ubring"] === undefined ? undefined : parseUbringAddress(o["brpc-ubring"]);
  } catch (e) {
    return usageError("doctor", new Error(`--brpc-ubring: ${(e as Error).message}`), o.json);
  }
  const caps = await probeHost(urma === "sim" ? simulatorPath() : urma);
  const ubring = await brpcUbringCapability(target);
  console.log(
    o.json
      ? JSON.stringify({ ...caps, brpcUbring: ubring }, null, 2)
      : formatDoctor(caps, FABRIC_DESCRIPTORS, ubring),
  );
  return 0;
}
