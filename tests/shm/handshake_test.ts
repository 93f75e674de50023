/**
 * The shm fabric's providers, driven directly through the fabric contract (`transport/provider.ts`):
 * refuse → offer → open → connect, a data round trip across the connected pair, and every way the
 * handshake must fail (wrong nonce, wrong sizes, no client stamp, abort) — each releasing the
 * session's shm object.
 * @module
 */
import { heldSessionFds, sessionObjectLive as existsSync } from "../util/shm.ts";
import { pid } from "node:process";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { Completions, type FabricEndpoint, OK, SIGNALED } from "../../transport/fabric.ts";
import { FABRIC_HEADER_BYTES, ROLE_CLIENT } from "../../transport/control_page.ts";
import { newNonce, nonceFromHex, stampRegion } from "../../transport/proof.ts";
import type {
  ClientFabricProvider,
  PeerInfo,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../../transport/provider.ts";
import { createClientProvider, createServerProvider } from "../../transport/shm/provider.ts";
import { hostBootId } from "../../transport/host.ts";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import type { ShmOffer } from "../../transport/shm/handshake.ts";

const SIZES: SessionSizes = { server: 8192, client: 12288, maxMessage: 4096 };
const SAME_HOST: PeerInfo = { bootId: hostBootId(), pid, host: "127.0.0.1" };
let nextSession = 900_000 + Math.floor(Math.random() * 50_000);
/** The session object of an offer (its memfd's label). */
const objectPath = (o: ServerOffer) => (o.offer as ShmOffer).name;

async function providers(): Promise<
  { server: ServerFabricProvider; client: ClientFabricProvider }
> {
  const logs: string[] = [];
  const server = await createServerProvider(undefined, (l) => logs.push(l));
  const client = await createClientProvider({});
  if (typeof server === "string") throw new Error(`no shm server provider: ${server}`);
  if (typeof client === "string") throw new Error(`no shm client provider: ${client}`);
  return { server, client };
}

function offerFor(server: ServerFabricProvider, sizes = SIZES): Promise<ServerOffer> {
  return server.offer({ sessionId: nextSession++, sizes, peer: SAME_HOST, params: {} });
}

test("refuse: a client on this host is served, one with another boot id or bad params is not", async () => {
  const { server } = await providers();
  assertEquals(server.kind, "shm");
  assertEquals(server.refuse(SAME_HOST, {}), undefined);
  assertEquals(server.refuse(SAME_HOST, undefined), undefined);
  const elsewhere = server.refuse(
    { ...SAME_HOST, bootId: "00000000-0000-0000-0000-000000000000" },
    {},
  );
  assert(elsewhere?.includes("another host"), `refusal names the host: ${elsewhere}`);
  assert(server.refuse({ ...SAME_HOST, bootId: "" }, {})?.includes("another host"));
  const badParams = server.refuse(SAME_HOST, { ring: 3 });
  assert(badParams?.includes("shm hello params"), `refusal names the params: ${badParams}`);
  server.close();
  server.close();
});

test("options: shm takes none; unknown keys are INVALID_OPTIONS on both sides", async () => {
  const e1 = await assertRejects(
    () => createServerProvider({ size: 1 }, () => {}),
    VerbusError,
    "providerOptions.shm",
  );
  assertEquals(e1.code, "INVALID_OPTIONS");
  const e2 = await assertRejects(() => createClientProvider({ x: true }), VerbusError, "x");
  assertEquals(e2.code, "INVALID_OPTIONS");
  assert(typeof (await createClientProvider(undefined)) !== "string");
});

test("offer → open → connect yields a connected pair: writes, reads, completions, kick and wait", async () => {
  const { server, client } = await providers();
  const offer = await offerFor(server);
  assert(existsSync(objectPath(offer)), "the object exists while the offer is pending");
  let s: FabricEndpoint | undefined, c: FabricEndpoint | undefined;
  try {
    c = await client.open(offer.offer, SIZES);
    s = await offer.connect();
    assert(
      !heldSessionFds().has(objectPath(offer).slice(1)),
      "the server's memfd fd is closed once both sides mapped it",
    );
    offer.abort("late abort after connect is a no-op");
    assertEquals([s.kind, c.kind, s.simulated], ["shm", "shm", false]);
    assertEquals([s.local.length, s.remoteSize], [SIZES.server, SIZES.client]);
    assertEquals([c.local.length, c.remoteSize], [SIZES.client, SIZES.server]);

    const at = FABRIC_HEADER_BYTES + 64;
    const done = new Completions(8);
    assertEquals(c.write(7, at, new Uint8Array([1, 2, 3, 4, 5]), SIGNALED), OK);
    assertEquals(c.writeU32(8, at + 8, 0xdeadbeef, 0), OK);
    assertEquals(Array.from(s.local.subarray(at, at + 5)), [1, 2, 3, 4, 5]);
    assertEquals(
      new DataView(s.local.buffer, s.local.byteOffset).getUint32(at + 8, true),
      0xdeadbeef,
    );
    assertEquals(c.poll(done), 1);
    assertEquals([done.wrId[0], done.status[0]], [7, 0]);

    c.local.set([9, 8, 7], at);
    const into = s.local.subarray(at + 100, at + 103);
    assertEquals(s.read(11, into, at, SIGNALED), OK);
    assertEquals(Array.from(into), [9, 8, 7]);
    assertEquals(s.poll(done), 1);
    assertEquals(done.wrId[0], 11);

    const seen = s.doorbell();
    const woke = s.waitInbound(seen, 10_000);
    c.kick();
    assert(await woke, "the server's wait ends on the client's kick");
    assert(s.doorbell() !== seen, "the kick moved the server's doorbell");
    const back = c.doorbell();
    s.kick();
    assert(await c.waitInbound(back, 10_000), "the client sees the server's kick");

    assertEquals(s.faults.supported, ["fail", "fail-next-write"]);
    const notShm = assertThrows(
      () => s!.faults.inject("bad-remote-key"),
      VerbusError,
      "bad-remote-key",
    );
    assertEquals(notShm.code, "INVALID_ARGUMENT");
    assertEquals(c.failed, false);
    c.faults.inject("fail", "test fault");
    assertEquals([c.failed, c.failureReason], [true, "test fault"]);
    assert(c.write(1, at, new Uint8Array(1), 0) < 0, "a failed endpoint posts nothing");
  } finally {
    c?.close();
    s?.close();
    c?.close();
    s?.close();
    client.close();
    server.close();
  }
});

test("a client with another session's nonce fails with HANDSHAKE naming the nonce", async () => {
  const { server, client } = await providers();
  const offer = await offerFor(server);
  try {
    const forged = { ...(offer.offer as ShmOffer), nonce: "0".repeat(32) };
    const e = await assertRejects(() => client.open(forged, SIZES), VerbusError, "nonce");
    assertEquals(e.code, "HANDSHAKE");
    const bad = await assertRejects(
      () => client.open({ ...forged, nonce: "xyz" }, SIZES),
      VerbusError,
      "shm offer: field nonce",
    );
    assertEquals(bad.code, "HANDSHAKE");
    const unstamped = await assertRejects(() => offer.connect(), VerbusError, "did not prove");
    assertEquals(unstamped.code, "HANDSHAKE");
  } finally {
    offer.abort("test over");
  }
  assert(!existsSync(objectPath(offer)), "a failed connect released the object");
});

test("a client whose sizes disagree with the offer fails with HANDSHAKE naming the field", async () => {
  const { server, client } = await providers();
  const offer = await offerFor(server);
  try {
    const e = await assertRejects(
      () => client.open(offer.offer, { ...SIZES, server: SIZES.server * 2 }),
      VerbusError,
      "serverSize",
    );
    assertEquals(e.code, "HANDSHAKE");
    const e2 = await assertRejects(
      () => client.open(offer.offer, { ...SIZES, client: 4096 }),
      VerbusError,
      "clientSize",
    );
    assertEquals(e2.code, "HANDSHAKE");
  } finally {
    offer.abort("test over");
  }
});

test("abort before connect unlinks the object, is safe twice, and connect then fails", async () => {
  const { server } = await providers();
  const offer = await offerFor(server);
  const path = objectPath(offer);
  assert(existsSync(path), `${path} exists after offer()`);
  offer.abort("no ACK");
  assert(!existsSync(path), `${path} is gone after abort()`);
  offer.abort("again");
  const e = await assertRejects(() => offer.connect(), VerbusError, "aborted");
  assertEquals(e.code, "HANDSHAKE");
});

test("connect() without the client's stamp fails with HANDSHAKE and releases the object", async () => {
  const { server } = await providers();
  const offer = await offerFor(server);
  const o = offer.offer as ShmOffer;
  const e = await assertRejects(() => offer.connect(), VerbusError, "did not prove");
  assertEquals(e.code, "HANDSHAKE");
  assert(e.message.includes("magic"), `says what was missing: ${e.message}`);
  assert(!existsSync(objectPath(offer)), "released");
  offer.abort("after the failed connect");

  // A client region stamped with some other nonce is refused too.
  const other = await offerFor(server);
  const ov = other.offer as ShmOffer;
  const m = await ShmMapping.openSealed(ov.pid, ov.fd, ov.size, ov.name);
  try {
    stampRegion(m.bytes.subarray(ov.clientOffset), ROLE_CLIENT, newNonce());
    const e2 = await assertRejects(() => other.connect(), VerbusError, "another session's nonce");
    assertEquals(e2.code, "HANDSHAKE");
  } finally {
    m.close();
    other.abort("test over");
  }
  assert(o.name !== ov.name);

  // Another process that opens the memfd can read the server's nonce from the mapping; the
  // client's stamp needs the client nonce, which only the Hello's answer carried.
  const third = await offerFor(server);
  const tv = third.offer as ShmOffer;
  const m3 = await ShmMapping.openSealed(tv.pid, tv.fd, tv.size, tv.name);
  try {
    stampRegion(m3.bytes.subarray(tv.clientOffset), ROLE_CLIENT, nonceFromHex(tv.nonce));
    const e3 = await assertRejects(() => third.connect(), VerbusError, "another session's nonce");
    assertEquals(e3.code, "HANDSHAKE");
  } finally {
    m3.close();
    third.abort("test over");
  }
});

test("offer() refuses region sizes that are not whole pages", async () => {
  const { server } = await providers();
  const e = await assertRejects(
    () => offerFor(server, { ...SIZES, client: 5000 }),
    VerbusError,
    "client region size 5000",
  );
  assertEquals(e.code, "INVALID_ARGUMENT");
});
