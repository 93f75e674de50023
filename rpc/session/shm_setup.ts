/**
 * Control path of the shm fabric for a session: the server creates the session's shm object
 * (`/verbus-<pid>-<session>`, server region then client region), stamps both control pages and
 * writes a random nonce into its proof field; the client maps the object by name, checks the
 * stamps and the nonce it was told in the hello, and copies the nonce into its own proof field —
 * which the server checks on ACK: only a process on this host that really mapped the object can
 * have written it. The name is unlinked as soon as both sides hold a mapping.
 * @module
 */
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import { ShmEndpoint } from "../../transport/shm/shm_endpoint.ts";
import { ShmMapping, shmName } from "../../transport/shm/shm_object.ts";
import { CONTROL, REGION_MAGIC, REGION_VERSION, type RegionLayout } from "../region/layout.ts";

/** What the server sends the client about the object. */
export interface ShmOffer {
  name: string;
  size: number;
  serverOffset: number;
  serverSize: number;
  clientOffset: number;
  clientSize: number;
  nonce: string;
}

function stamp(bytes: Uint8Array, at: number, role: number): void {
  const w = new Uint32Array(bytes.buffer, bytes.byteOffset + at, 4);
  w[CONTROL.magic >> 2] = REGION_MAGIC;
  w[CONTROL.version >> 2] = REGION_VERSION;
  w[CONTROL.role >> 2] = role;
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** Server: creates and stamps the session's object. The caller owns the endpoint. */
export async function createShmSession(
  helper: Helper,
  session: number,
  server: RegionLayout,
  client: RegionLayout,
): Promise<{ endpoint: ShmEndpoint; offer: ShmOffer }> {
  const name = shmName(pid, session);
  const size = server.size + client.size;
  const mapping = await ShmMapping.create(name, size);
  const b = mapping.bytes;
  stamp(b, 0, 1);
  stamp(b, server.size, 2);
  const nonce = crypto.getRandomValues(new Uint8Array(16));
  b.set(nonce, CONTROL.proof);
  const endpoint = new ShmEndpoint(mapping, {
    localOffset: 0,
    localSize: server.size,
    remoteOffset: server.size,
    remoteSize: client.size,
  }, helper);
  return {
    endpoint,
    offer: {
      name,
      size,
      serverOffset: 0,
      serverSize: server.size,
      clientOffset: server.size,
      clientSize: client.size,
      nonce: hex(nonce),
    },
  };
}

/** Server, on ACK: did the client copy the nonce into its proof field? */
export function checkShmProof(endpoint: ShmEndpoint, offer: ShmOffer): boolean {
  const b = endpoint.mapping.bytes;
  return hex(
    b.subarray(offer.clientOffset + CONTROL.proof, offer.clientOffset + CONTROL.proof + 16),
  ) === offer.nonce;
}

/**
 * Client: maps the offered object, checks it against the offer and the expected layouts, writes
 * the proof. Throws HANDSHAKE (with what to check) when anything disagrees.
 */
export async function openShmSession(
  helper: Helper,
  offer: ShmOffer,
  server: RegionLayout,
  client: RegionLayout,
): Promise<ShmEndpoint> {
  if (
    offer.serverSize !== server.size || offer.clientSize !== client.size ||
    offer.serverOffset !== 0 || offer.clientOffset !== server.size ||
    offer.size !== server.size + client.size
  ) {
    throw new VerbusError(
      "HANDSHAKE",
      `shm offer sizes disagree with the negotiated region layout`,
    );
  }
  let mapping: ShmMapping;
  try {
    mapping = await ShmMapping.open(offer.name, offer.size);
  } catch (e) {
    throw new VerbusError(
      "HANDSHAKE",
      `cannot map ${offer.name} (${
        (e as Error).message
      }): not the same host, or /dev/shm is not shared`,
    );
  }
  try {
    const b = mapping.bytes;
    const w = new Uint32Array(b.buffer, b.byteOffset, 4);
    const cw = new Uint32Array(b.buffer, b.byteOffset + offer.clientOffset, 4);
    if (w[0] !== REGION_MAGIC || w[1] !== REGION_VERSION || cw[0] !== REGION_MAGIC) {
      throw new VerbusError(
        "HANDSHAKE",
        `${offer.name} does not hold a verbus region (magic/version)`,
      );
    }
    if (hex(b.subarray(CONTROL.proof, CONTROL.proof + 16)) !== offer.nonce) {
      throw new VerbusError(
        "HANDSHAKE",
        `${offer.name} holds another nonce: not the object the server meant`,
      );
    }
    b.copyWithin(offer.clientOffset + CONTROL.proof, CONTROL.proof, CONTROL.proof + 16);
    return new ShmEndpoint(mapping, {
      localOffset: offer.clientOffset,
      localSize: offer.clientSize,
      remoteOffset: 0,
      remoteSize: offer.serverSize,
    }, helper);
  } catch (e) {
    mapping.close();
    throw e;
  }
}
