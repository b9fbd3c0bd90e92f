/* SPDX-License-Identifier: MIT */
/*
 * uring_i.h - the file I/O engine of checkpoints: a few large buffers
 * registered with an io_uring, several requests in flight
 */
#ifndef GPUOPT_IO_URING_I_H
#define GPUOPT_IO_URING_I_H

#include <stddef.h>
#include <stdint.h>
#include <liburing.h>

/* direct-I/O alignment when the filesystem does not report one */
#define CKPT_ALIGN	4096

struct ckio_req {
	char *p;
	uint64_t off;		/* file offset */
	size_t len;		/* bytes asked for (aligned for direct I/O) */
	size_t want;		/* bytes that must transfer (<= len) */
	size_t done;
	int busy;
	int res;		/* 0 or -errno, once complete */
};

/*
 * Requests 0..nbuf-1 use the engine's registered buffers (chunk bytes
 * each, aligned for direct I/O); request nbuf is for a caller's buffer.
 */
struct ckio {
	struct io_uring ring;
	int ring_ok;		/* else synchronous pread/pwrite */
	int fixed;		/* buffers registered with the ring */
	int fd;
	int writing;
	size_t chunk;
	int nbuf;
	int ext_mem;		/* the buffers are the caller's */
	struct ckio_req *req;
	int inflight;
};

/* Test and benchmark knobs; 0 means the default. Not thread-safe. */
struct ckpt_tuning {
	size_t chunk;		/* bytes per buffer (multiple of 4096) */
	int nbuf;		/* buffers, i.e. requests in flight */
	int no_prealloc;	/* skip fallocate (to hit ENOSPC mid-write) */
	int no_ring;		/* synchronous pread/pwrite */
	int no_fixed;		/* do not register the buffers */
};

extern struct ckpt_tuning gpo__ckpt_tune;

#define CKIO_CHUNK	(2u << 20)
/*
 * through pinned staging from a GPU: a chunk is one DMA copy and one
 * fence wait, which costs little beside 16 MiB at PCIe speed
 */
#define CKIO_DEV_CHUNK	(16u << 20)
#define CKIO_NBUF	8

/*
 * gpo__ckio_init - set up the ring and @nbuf buffers of @chunk bytes for @fd.
 * Falls back to unregistered buffers, and to synchronous I/O when the
 * ring cannot be created. Returns 0 or -ENOMEM.
 */
int gpo__ckio_init(struct ckio *io, int fd, int writing, size_t chunk, int nbuf,
	      size_t mem_align);
/*
 * gpo__ckio_init_mem - gpo__ckio_init() with the caller's buffer memory:
 * @mem holds @nbuf * @chunk bytes, aligned for direct I/O, and outlives
 * gpo__ckio_exit() (checkpoints pass pinned memory the device copies
 * into by DMA). NULL: as gpo__ckio_init().
 */
int gpo__ckio_init_mem(struct ckio *io, int fd, int writing, size_t chunk,
		       int nbuf, size_t mem_align, char *mem);
/* gpo__ckio_exit - wait for what is in flight, then free everything */
void gpo__ckio_exit(struct ckio *io);
/*
 * gpo__ckio_submit - queue request @i: @len bytes at file offset @off, of
 * which @want must transfer (a read may end at the end of the file).
 * For i == nbuf, @p is the caller's buffer; else it must be NULL.
 */
int gpo__ckio_submit(struct ckio *io, int i, void *p, uint64_t off, size_t len,
		size_t want);
/* gpo__ckio_wait - wait until request @i is complete; returns its result */
int gpo__ckio_wait(struct ckio *io, int i);
/* gpo__ckio_drain - wait for every request; returns the first error */
int gpo__ckio_drain(struct ckio *io);

/*
 * gpo__ckio_dio_align - whether @fd (opened with O_DIRECT) can do direct I/O
 * and with which alignment: 0 and *@align set, or -EOPNOTSUPP when the
 * filesystem reports that it cannot (the caller clears O_DIRECT).
 * Without STATX_DIOALIGN the alignment is CKPT_ALIGN.
 */
int gpo__ckio_dio_align(int fd, size_t *align, size_t *mem_align);

/* gpo__ckio_set_direct - turn O_DIRECT on or off for @fd; 0 or -errno */
int gpo__ckio_set_direct(int fd, int on);

#endif /* GPUOPT_IO_URING_I_H */
