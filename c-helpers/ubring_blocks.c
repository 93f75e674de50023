/*
 * ubring_blocks.c — the bulk block copy of brpc's UBRing ring (transport/brpc_ubring/): one call
 * scatters a message into the peer's ring, or gathers what the peer wrote out of this side's,
 * instead of a JavaScript loop per 60-byte block. Nothing is allocated; every value the peer
 * controls (a block's flag, length and read position) is read once and checked before use, and
 * nothing is read or written outside [ring, ring + ring_bytes) or the caller's buffer.
 *
 * The ring is brpc's DataQ: ring_bytes / 64 blocks of struct vb_ubring_block. Flow control (which
 * blocks are free, the tail) stays with the caller.
 */
#include "verbus_helper.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>

_Static_assert(sizeof(struct vb_ubring_block) == 64, "a UBRing block is 64 bytes");
_Static_assert(offsetof(struct vb_ubring_block, flag) == VB_UBRING_PAYLOAD, "flag after payload");

int32_t vb_ubring_scatter(uint8_t *ring, uint64_t ring_bytes, uint32_t first, const uint8_t *src,
			  uint32_t len)
{
	const uint64_t cap = ring_bytes / sizeof(struct vb_ubring_block);
	if (ring == NULL || src == NULL || len == 0 || first >= cap)
		return -EINVAL;
	const uint64_t n = ((uint64_t)len + VB_UBRING_PAYLOAD - 1) / VB_UBRING_PAYLOAD;
	if (n >= cap) /* one block always stays empty */
		return -ENOSPC;
	struct vb_ubring_block *b = (struct vb_ubring_block *)ring;
	/* Blocks 1..n-1 first, whole; the first block's flag last (release), so a reader that sees
	 * it sees the whole write. */
	uint64_t idx = first + 1 == cap ? 0 : first + 1;
	const uint8_t *s = src + VB_UBRING_PAYLOAD;
	for (uint64_t i = 1; i < n; i++) {
		const uint32_t k = i + 1 < n ? VB_UBRING_PAYLOAD : len - (uint32_t)i * VB_UBRING_PAYLOAD;
		struct vb_ubring_block *blk = &b[idx];
		memcpy(blk->payload, s, k);
		blk->len = (uint8_t)k;
		blk->cur = 0;
		blk->flag = i + 1 < n ? VB_UBRING_EXIST : VB_UBRING_EOF;
		s += VB_UBRING_PAYLOAD;
		idx = idx + 1 == cap ? 0 : idx + 1;
	}
	struct vb_ubring_block *head = &b[first];
	const uint32_t k0 = n == 1 ? len : VB_UBRING_PAYLOAD;
	memcpy(head->payload, src, k0);
	head->len = (uint8_t)k0;
	head->cur = 0;
	__atomic_store_n(&head->flag, n == 1 ? VB_UBRING_EOF : VB_UBRING_EXIST, __ATOMIC_RELEASE);
	return (int32_t)n;
}

int32_t vb_ubring_gather(uint8_t *ring, uint64_t ring_bytes, uint32_t pos, uint8_t *out,
			 uint32_t max, struct vb_ubring_gather *st)
{
	const uint64_t cap = ring_bytes / sizeof(struct vb_ubring_block);
	if (st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->pos = pos;
	if (ring == NULL || pos >= cap || (out == NULL && max > 0))
		return -EINVAL;
	struct vb_ubring_block *b = (struct vb_ubring_block *)ring;
	uint32_t total = 0, n = 0, p = pos;
	int32_t rc = VB_UBRING_OK;
	while (n < cap) {
		struct vb_ubring_block *blk = &b[p];
		const uint8_t flag = __atomic_load_n(&blk->flag, __ATOMIC_ACQUIRE);
		if (flag == VB_UBRING_NONE)
			break;
		/* Read once: the peer may change them under us; only these copies are used. */
		const uint8_t len = __atomic_load_n(&blk->len, __ATOMIC_RELAXED);
		const uint8_t cur = __atomic_load_n(&blk->cur, __ATOMIC_RELAXED);
		if (flag > VB_UBRING_EOF || len == 0 || len > VB_UBRING_PAYLOAD || cur >= len) {
			rc = flag > VB_UBRING_EOF ? VB_UBRING_BAD_FLAG : VB_UBRING_BAD_LENGTH;
			st->bad_block = p;
			st->flag = flag;
			st->len = len;
			st->cur = cur;
			break;
		}
		const uint32_t k = (uint32_t)(len - cur);
		if (k > max - total) /* no room left: the block waits for the next call */
			break;
		memcpy(out + total, blk->payload + cur, k);
		total += k;
		/* The payload is copied: the block is free (the writer reuses it only once the caller
		 * moved its tail past it). */
		__atomic_store_n(&blk->flag, VB_UBRING_NONE, __ATOMIC_RELEASE);
		p = p + 1 == cap ? 0 : p + 1;
		n++;
	}
	st->blocks = n;
	st->bytes = total;
	st->pos = p;
	return rc;
}

/*
 * The calling thread's timer slack (PR_SET_TIMERSLACK): how much later than asked the kernel may
 * end its timed sleeps (50 µs by default). A UBRing poller naps between looks at a ring nobody
 * signals, so its naps' length is its latency. Sets `ns` (0 restores the thread's default) and
 * returns the slack before, or -errno.
 */
int64_t vb_timer_slack(uint64_t ns)
{
	const int before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (before < 0)
		return -errno;
	if (prctl(PR_SET_TIMERSLACK, (unsigned long)ns, 0, 0, 0) != 0)
		return -errno;
	return before;
}
