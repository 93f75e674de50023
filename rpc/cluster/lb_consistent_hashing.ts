/**
 * `c_murmurhash`, `c_md5`, `c_ketama`: brpc's consistent hashing. Each server is placed on a
 * ring of 2^32 positions at `replicas` points (default 100, brpc's `-chash_num_replicas`); a call goes to
 * the first point at or after its request code (wrapping), skipping excluded servers. The points
 * are computed exactly as brpc computes them — the hash of `"<ip:port>-<i>"` (MurmurHash3_x86_32
 * seed 0, or the first four bytes of its MD5 read little-endian; ketama takes all sixteen bytes
 * of the MD5 of `"<ip:port>-<i>"` as four points, i < replicas / 4) — and ties are ordered as
 * brpc orders them (hash, then IPv4 address and port, then tag), so a verbus client and a brpc
 * client route a code to the same server. As in brpc the request code is the ring position
 * itself, not hashed again: it must fit 32 bits (make one with `murmurHash32(key)` as brpc users
 * do). brpc hashes the resolved IP: name servers by IP for a mixed fleet to agree. Adding one
 * server to N moves about 1/(N+1) of the codes, all to the new server.
 * Parameter: `replicas` (1..65536; ketama: a multiple of 4).
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing;
 * `setServers` builds the ring.
 * @module
 */
import { createHash } from "node:crypto";
import { VerbusError } from "../../errors.ts";
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import { intParam, onlyParams } from "./lb_params.ts";
import { murmurHash32 } from "./murmurhash3.ts";

/** How points are hashed: brpc's `MurmurHash32`, `MD5Hash32`, or ketama. */
export type RingHash = "murmurhash3" | "md5" | "ketama";

/** brpc's default replicas per server (`-chash_num_replicas`). */
export const DEFAULT_REPLICAS = 100;

const MAX_CODE = 0xffffffffn;

/** The first four bytes of `digest` from `at`, little-endian, as brpc reads its MD5 points. */
function le32(digest: Uint8Array, at: number): number {
  return (digest[at] | (digest[at + 1] << 8) | (digest[at + 2] << 16) | (digest[at + 3] << 24)) >>>
    0;
}

/** The ring points of one server (position values), computed as brpc does. */
export function ringPoints(address: string, replicas: number, hash: RingHash): number[] {
  const points: number[] = [];
  if (hash === "ketama") {
    for (let i = 0; i < replicas / 4; i++) {
      const d = createHash("md5").update(`${address}-${i}`).digest();
      for (let j = 0; j < 4; j++) points.push(le32(d, j * 4));
    }
    return points;
  }
  for (let i = 0; i < replicas; i++) {
    const key = `${address}-${i}`;
    points.push(
      hash === "md5" ? le32(createHash("md5").update(key).digest(), 0) : murmurHash32(key),
    );
  }
  return points;
}

/**
 * brpc's endpoint order for equal hashes: the IPv4 address as its in-memory `s_addr` word (the
 * network bytes read little-endian), then the port; other hosts by text.
 */
function endpointKey(address: string): { ip: number; port: number } | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d+)$/.exec(address);
  if (!m) return null;
  const ip = (Number(m[1]) | (Number(m[2]) << 8) | (Number(m[3]) << 16) | (Number(m[4]) << 24)) >>>
    0;
  return { ip, port: Number(m[5]) };
}

function compareServers(a: ServerNode, b: ServerNode): number {
  const ka = endpointKey(a.address), kb = endpointKey(b.address);
  if (ka && kb) {
    if (ka.ip !== kb.ip) return ka.ip - kb.ip;
    if (ka.port !== kb.port) return ka.port - kb.port;
  } else if (a.address !== b.address) {
    return a.address < b.address ? -1 : 1;
  }
  return a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0;
}

/** brpc's consistent-hashing balancers (see the module documentation). */
export class ConsistentHashingBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  readonly #hash: RingHash;
  readonly #replicas: number;
  /** The ring: point positions ascending, and the server of each point. Rebuilt by setServers. */
  #positions: Uint32Array = new Uint32Array(0);
  #owners: string[] = [];

  constructor(name: string, params: Readonly<Record<string, string>>, hash: RingHash) {
    onlyParams(name, params, ["replicas"]);
    this.name = name;
    this.#hash = hash;
    this.#replicas = intParam(name, params, "replicas", 1, 65536) ?? DEFAULT_REPLICAS;
    if (hash === "ketama" && this.#replicas % 4 !== 0) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `load balancer "${name}": ketama replicas=${this.#replicas} is not a multiple of 4`,
      );
    }
    this.params = { replicas: this.#replicas };
  }

  setServers(servers: readonly ServerNode[]): void {
    const points: { pos: number; server: ServerNode }[] = [];
    for (const server of servers) {
      for (const pos of ringPoints(server.address, this.#replicas, this.#hash)) {
        points.push({ pos, server });
      }
    }
    points.sort((a, b) => a.pos - b.pos || compareServers(a.server, b.server));
    this.#positions = Uint32Array.from(points, (p) => p.pos);
    this.#owners = points.map((p) => p.server.address);
  }

  select(request: SelectRequest): string | null {
    const code = request.requestCode;
    if (code === undefined) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `load balancer "${this.name}" routes by request code: the call has none`,
      );
    }
    if (code < 0n || code > MAX_CODE) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `load balancer "${this.name}": request code ${code} does not fit 32 bits (as in brpc)`,
      );
    }
    const pos = this.#positions;
    const n = pos.length;
    if (n === 0) return null;
    const target = Number(code);
    // The first point at or after the code (lower bound); past the last one wraps to the first.
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pos[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    for (let i = 0, at = lo === n ? 0 : lo; i < n; i++, at = at + 1 === n ? 0 : at + 1) {
      if (!request.excluded.has(this.#owners[at])) return this.#owners[at];
    }
    return null;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `c_murmurhash`. */
export function consistentMurmur(
  name: string,
  params: Readonly<Record<string, string>>,
): LoadBalancer {
  return new ConsistentHashingBalancer(name, params, "murmurhash3");
}

/** The factory {@link ./registry.ts} registers as `c_md5`. */
export function consistentMd5(
  name: string,
  params: Readonly<Record<string, string>>,
): LoadBalancer {
  return new ConsistentHashingBalancer(name, params, "md5");
}

/** The factory {@link ./registry.ts} registers as `c_ketama`. */
export function consistentKetama(
  name: string,
  params: Readonly<Record<string, string>>,
): LoadBalancer {
  return new ConsistentHashingBalancer(name, params, "ketama");
}
