/**
 * MurmurHash3 and the consistent-hashing balancers: the published MurmurHash3_x86_32 vectors,
 * brpc's own hashes and routes (so a mixed fleet routes a code to the same server), stability,
 * ~1/N movement when a server is added, and the request code brpc requires.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { loadBalancer } from "../../rpc/cluster/balancer.ts";
import "../../rpc/cluster/registry.ts";
import { ringPoints } from "../../rpc/cluster/lb_consistent_hashing.ts";
import { murmurHash32, murmurHash3_x86_32 } from "../../rpc/cluster/murmurhash3.ts";
import { seeded, servers } from "./lb_util.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const THREE = servers("127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003");

test("MurmurHash3_x86_32: the published test vectors", () => {
  // The widely published MurmurHash3_x86_32 vectors (the seed-0x9747b28c set and the empty and
  // zero-key cases); brpc's murmurhash3.cpp, compiled (see below), gives the same values.
  const seed = 0x9747b28c;
  assertEquals(murmurHash3_x86_32(bytes(""), 0), 0);
  assertEquals(murmurHash3_x86_32(bytes(""), 1), 0x514e28b7);
  assertEquals(murmurHash3_x86_32(bytes(""), 0xffffffff), 0x81f16f39);
  assertEquals(murmurHash3_x86_32(new Uint8Array(4), 0), 0x2362f9de);
  assertEquals(murmurHash3_x86_32(bytes("a"), seed), 0x7fa09ea6);
  assertEquals(murmurHash3_x86_32(bytes("aa"), seed), 0x5d211726);
  assertEquals(murmurHash3_x86_32(bytes("aaa"), seed), 0x283e0130);
  assertEquals(murmurHash3_x86_32(bytes("aaaa"), seed), 0x5a97808a);
  assertEquals(murmurHash3_x86_32(bytes("abcd"), seed), 0xf0478627);
  assertEquals(murmurHash3_x86_32(bytes("Hello, world!"), seed), 0x24884cba);
  assertEquals(
    murmurHash3_x86_32(bytes("The quick brown fox jumps over the lazy dog"), seed),
    0x2fa826cd,
  );
});

// The constants below were computed by compiling apache/brpc's own
// src/butil/third_party/murmurhash3/murmurhash3.cpp (MurmurHash3_x86_32, seed 0, which is brpc's
// policy::MurmurHash32) and OpenSSL's MD5 (brpc's MD5Hash32 reads the digest's first four bytes
// little-endian) with g++ in a scratch directory, on the point strings brpc's
// DefaultReplicaPolicy / KetamaReplicaPolicy build ("<ip:port>-<i>", 100 replicas per server,
// ketama 25 digests of 4 points), sorting the points and taking std::lower_bound of the code,
// wrapping at the end. Nothing of that build is in this repository.

test("brpc's hashes: point positions and request codes from keys", () => {
  assertEquals(murmurHash32("127.0.0.1:8000-0"), 0xaf0055ea);
  assertEquals(murmurHash32("127.0.0.1:8000-99"), 0xd72a172f);
  assertEquals(murmurHash32("10.0.0.1:80-5"), 0x0f7ee36d);
  assertEquals(murmurHash32("user:1"), 3416794175);
  assertEquals(murmurHash32("user:2"), 3894333430);
  assertEquals(murmurHash32("key-42"), 81749783);
  assertEquals(ringPoints("127.0.0.1:8000", 100, "murmurhash3")[0], 0xaf0055ea);
  assertEquals(ringPoints("127.0.0.1:8000", 100, "md5")[0], 0xa04bf851);
  assertEquals(ringPoints("127.0.0.1:8000", 100, "ketama").length, 100);
});

/** The server (1-3) each code k × 0x11111111, k = 0..15, goes to. */
function routes(spec: string): number[] {
  const lb = loadBalancer(spec);
  lb.setServers(THREE);
  return Array.from({ length: 16 }, (_, k) => {
    const a = lb.select({ excluded: new Set(), requestCode: BigInt(k * 0x11111111) });
    return Number(a!.slice(-1));
  });
}

test("c_murmurhash, c_md5, c_ketama: each code goes where brpc sends it", () => {
  assertEquals(routes("c_murmurhash"), [3, 3, 3, 2, 1, 1, 3, 2, 1, 2, 3, 3, 3, 2, 3, 3]);
  assertEquals(routes("c_md5"), [2, 2, 3, 2, 1, 3, 1, 3, 3, 2, 2, 2, 3, 2, 3, 2]);
  assertEquals(routes("c_ketama"), [3, 2, 3, 3, 2, 1, 1, 1, 1, 1, 3, 1, 1, 2, 1, 3]);
  const lb = loadBalancer("c_murmurhash");
  lb.setServers(THREE);
  const at = (code: bigint) => lb.select({ excluded: new Set(), requestCode: code });
  assertEquals(at(1n), "127.0.0.1:8003");
  assertEquals(at(12345n), "127.0.0.1:8003");
  assertEquals(at(0x7fffffffn), "127.0.0.1:8002");
  assertEquals(at(0x80000000n), "127.0.0.1:8002");
  assertEquals(at(0xffffffffn), "127.0.0.1:8003"); // past the last point: wraps to the first
  assertEquals(at(BigInt(murmurHash32("key-42"))), "127.0.0.1:8002");
});

test("c_murmurhash: a code always goes to the same server, whatever the list order", () => {
  const a = loadBalancer("c_murmurhash"), b = loadBalancer("c_murmurhash");
  a.setServers(THREE);
  b.setServers([...THREE].reverse());
  const random = seeded(11);
  const used = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const requestCode = BigInt(Math.floor(random() * 2 ** 32));
    const first = a.select({ excluded: new Set(), requestCode })!;
    used.add(first);
    assertEquals(a.select({ excluded: new Set(), requestCode }), first);
    assertEquals(b.select({ excluded: new Set(), requestCode }), first);
  }
  assertEquals(used.size, 3);
});

test("c_murmurhash: adding a fourth server moves about 1/4 of the codes, all to it", () => {
  const lb = loadBalancer("c_murmurhash");
  lb.setServers(THREE);
  const random = seeded(99);
  const codes = Array.from({ length: 20_000 }, () => BigInt(Math.floor(random() * 2 ** 32)));
  const before = codes.map((requestCode) => lb.select({ excluded: new Set(), requestCode }));
  lb.setServers([...THREE, ...servers("127.0.0.1:8004")]);
  let moved = 0;
  codes.forEach((requestCode, i) => {
    const now = lb.select({ excluded: new Set(), requestCode });
    if (now === before[i]) return;
    moved++;
    assertEquals(now, "127.0.0.1:8004", `code ${requestCode} moved between old servers`);
  });
  const share = moved / codes.length;
  assert(share > 0.15 && share < 0.35, `moved ${share}`);
});

test("c_murmurhash: an excluded server's codes go to the next server on the ring", () => {
  const lb = loadBalancer("c_murmurhash");
  lb.setServers(THREE);
  const requestCode = BigInt(murmurHash32("key-42"));
  const excluded = new Set(["127.0.0.1:8002"]);
  const other = lb.select({ excluded, requestCode });
  assert(other !== null && other !== "127.0.0.1:8002", `${other}`);
  assertEquals(lb.select({ excluded, requestCode }), other);
});

test("consistent hashing: no request code, or one past 32 bits, is INVALID_ARGUMENT", () => {
  for (const name of ["c_murmurhash", "c_md5", "c_ketama"]) {
    const lb = loadBalancer(name);
    lb.setServers(THREE);
    let e = assertThrows(() => lb.select({ excluded: new Set() }), VerbusError, "request code");
    assertEquals(e.code, "INVALID_ARGUMENT");
    e = assertThrows(
      () => lb.select({ excluded: new Set(), requestCode: 1n << 32n }),
      VerbusError,
      "32 bits",
    );
    assertEquals(e.code, "INVALID_ARGUMENT");
  }
});
