/**
 * brpc's UBRing protocol (apache/brpc `src/brpc/ubshm/`, `SOCKET_MODE_UBRING`, POSIX shm backend
 * `--ub_shm_type=1`): the wire and memory layouts, as named offsets. Learned from brpc's
 * `ub_endpoint.cpp` (handshake), `ub_ring.cpp` (rings, close, heartbeat), `ubr_trx.h` /
 * `ubr_msg.h` (layouts) and `shm/shm_ipc.cpp` (objects); written from that description.
 * Pure constants; any thread.
 *
 * ## Handshake (on the TCP connection, before any baidu_std byte)
 * ```
 *   hello, 64 bytes, integers big-endian (client → server, then server → client)
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-------------------------------+-------------------------------+
 *   |          magic "UB"           |           msg_len = 64        |  0
 *   +-------------------------------+-------------------------------+
 *   |         hello_ver = 2         |          impl_ver = 1         |  4
 *   +-------------------------------+-------------------------------+
 *   |                 len: bytes of the sender's shm object         |  8
 *   |                       (u64; a multiple of 4 MiB)              |
 *   +---------------------------------------------------------------+
 *   |        shm_name[48]: the CLIENT's object name, NUL-padded     | 16
 *   |                 (the server echoes the client's)              |
 *   +---------------------------------------------------------------+  64
 *   ACK, 4 bytes: u32 big-endian, bit 0x1 = use the ring (client → server)
 * ```
 * client  C_ALLOC_SHM → C_HELLO_SEND → C_HELLO_WAIT → C_MAP_REMOTE_SHM → C_ACK_SEND → ESTABLISHED
 * server  S_HELLO_WAIT → S_ALLOC_SHM → S_HELLO_SEND → S_ACK_WAIT → ESTABLISHED
 * (either may end FALLBACK_TCP or FAILED).
 * 1. The client creates `UBRING_<its local ip:port>_C` (O_CREAT|O_EXCL, `len` bytes, zeroed) and
 *    sends its hello naming it.
 * 2. The server reads 2 bytes: anything but "UB" is a plain TCP client (those bytes are
 *    baidu_std). Versions other than 2/1 → it answers a hello with zeroed versions (TCP). Else it
 *    opens the client's object (its size must be ≥ `len`), creates `UBRING_<ip:port>_S` (the
 *    client's name with its last `_…` replaced by `_S`), initialises both (below) and answers
 *    `len` = its object's size and the client's name.
 * 3. The client checks magic (anything else: FAILED) and versions (zero: FALLBACK_TCP), maps
 *    `UBRING_<its local ip:port>_S`, whose size it derives from the tail the server wrote into
 *    its object (`64 × (tail + 1) + 64`), marks both CONNECTED and sends ACK 0x1 (0x0 to stay on
 *    TCP). Both unlink their own object's name once ESTABLISHED (the mappings stay).
 * 4. From then the TCP connection carries nothing: a byte on it is a protocol error, its close
 *    ends the connection.
 *
 * ## One shm object per side (each 4 MiB by default, brpc `--data_queue_size` MiB)
 * ```
 *   0        16        32           44    64                                    len
 *   +--------+---------+------------+-----+-------------------------------------+
 *   |TxEventQ|RxEventQ |DataStatusQ | pad |  DataQ: (len − 64) / 64 blocks      |
 *   +--------+---------+------------+-----+-------------------------------------+
 *   EventQ (16): io_id u64 @0, flag i32 @8 (NONE 0, CONNECTED 1, CLOSING 2, CLOSED 3)
 *   DataStatusQ (12): tail u32 @0, timeout u32 @4 (connect timeout, s), heart_beat u8 @8
 *   integers in host order (little-endian here); the data queue starts 64-byte aligned.
 * ```
 * Who writes what in the object O of side A (B is the peer):
 * - O.DataQ: B writes blocks (it is A's receive ring); A reads them and clears their flags.
 * - O.RxEventQ.io_id: B bumps it after each write (brpc's edge trigger); .flag: CONNECTED at the
 *   handshake, CLOSED by B when B closes or acknowledges A's close.
 * - O.TxEventQ.flag: A's own sending state (CLOSED once A closed); B sets CLOSING when B closes.
 * - O.DataStatusQ.tail: B writes the index of the last block it consumed from ITS ring (the one A
 *   writes): A's flow control. The server initialises both tails to (peer ring blocks − 1).
 * - O.DataStatusQ.heart_beat: B sets 1 every 5 s; A resets it to 0 when it sees it.
 *
 * ## Block (64 bytes)
 * ```
 *   0                                                          60   61   62   63
 *   +----------------------------------------------------------+----+----+----+----+
 *   |                      payload[60]                         |flag|len |cur | -- |
 *   +----------------------------------------------------------+----+----+----+----+
 *   flag: NONE 0 (free), EXIST 1 (more of this write follows), EOF 2 (last block of a write)
 *   len: payload bytes (60 in EXIST blocks, 1..60 in the EOF block); cur: read progress (0)
 * ```
 * The ring is a byte stream (baidu_std frames cross blocks and writes freely). A write of n bytes
 * takes ceil(n / 60) consecutive blocks, all of them free; one write needs fewer blocks than the
 * ring has.
 *
 * ## Flow control
 * Writer: `free = write_pos > tail ? tail + cap − write_pos : tail − write_pos` (one block stays
 * empty); a write that does not fit waits. Reader: per consumed block, flag := NONE, then the
 * writer's tail := that block's index.
 *
 * ## Notification
 * None: no futex, eventfd or doorbell. brpc polls every connection from its poller bthreads
 * (`--ub_poller_num`), reading the head block's flag (and, edge-triggered, RxEventQ.io_id).
 * verbus polls the same way (poller.ts): hot while traffic flows; idle, in short futex waits on
 * the io_id word (which only their timeout or an io_id already moved ends: nobody wakes them).
 *
 * ## Liveness and close
 * Heartbeat every 5 s (`--ub_hb_timer_interval`): set the peer's heart_beat to 1, check (and
 * clear) one's own; 10 misses in a row (`--ub_hb_retry_cnt`) end the connection.
 * Close: peer.TxEventQ.flag := CLOSING, own TxEventQ.flag := CLOSED, peer.RxEventQ.flag := CLOSED;
 * the peer acknowledges by setting the closer's RxEventQ.flag := CLOSED (brpc waits up to 5 s).
 *
 * ## Fallback to TCP
 * A server that sees no "UB" serves the bytes as TCP; zeroed versions or a failed allocation or
 * mapping on either side → ACK 0x0, the same TCP connection carries baidu_std. A stock brpc
 * client FAILs when the server's answer is not a hello (verbus dials again over plain TCP).
 * @module
 */

/** Bytes of a hello, each way. */
export const HELLO_LEN = 64;
/** The hello's first two bytes. */
export const HELLO_MAGIC = "UB";
/** Hello offsets (big-endian integers). */
export const HELLO = {
  MAGIC: 0,
  MSG_LEN: 2,
  HELLO_VER: 4,
  IMPL_VER: 6,
  LEN: 8,
  NAME: 16,
} as const;
/** Bytes of the name field, NUL included (brpc `SHM_MAX_NAME_BUFF_LEN`). */
export const NAME_FIELD = 48;
/** The versions brpc speaks. */
export const HELLO_VER = 2;
export const IMPL_VER = 1;
/** Bytes of the ACK; its bit meaning "use the ring". */
export const ACK_LEN = 4;
export const ACK_UB_OK = 0x1;

/** Object names: `UBRING_<client ip:port>_C` / `_S`. */
export const NAME_PREFIX = "UBRING_";
export const CLIENT_SUFFIX = "_C";
export const SERVER_SUFFIX = "_S";

/** Object sizes: a multiple of this (brpc's `SHM_ALLOC_UNIT_SIZE`). */
export const ALLOC_UNIT = 4 * 1024 * 1024;

/** Object header offsets. */
export const OBJ = {
  TX_IO_ID: 0,
  TX_FLAG: 8,
  RX_IO_ID: 16,
  RX_FLAG: 24,
  TAIL: 32,
  TIMEOUT: 36,
  HEART_BEAT: 40,
  /** First block (44 rounded up to 64). */
  DATA: 64,
} as const;

/** EventQ flag values. */
export const STATE = { NONE: 0, CONNECTED: 1, CLOSING: 2, CLOSED: 3 } as const;

/** Bytes of a block, of its payload, and its header offsets. */
export const BLOCK = 64;
export const PAYLOAD = 60;
export const BLOCK_FLAG = 60;
export const BLOCK_LEN = 61;
export const BLOCK_CUR = 62;
/** Block flag values. */
export const CHUNK = { NONE: 0, EXIST: 1, EOF: 2 } as const;

/** Blocks of the ring in an object of `bytes` bytes. */
export function ringBlocks(bytes: number): number {
  return Math.floor((bytes - OBJ.DATA) / BLOCK);
}

/** Object bytes a peer derives from a tail: brpc's `64 × (tail + 1) + 64`. */
export function objectBytesForTail(tail: number): number {
  return BLOCK * (tail + 1) + OBJ.DATA;
}
