// SPDX-License-Identifier: MIT
/*
 * ckpt_io.c - the checkpoint I/O engine: a few large buffers registered
 * with an io_uring, requests on them in flight while the caller fills or
 * drains others. Short transfers are resubmitted for the rest. Where no
 * ring can be had (io_uring disabled by sysctl or a seccomp filter), the
 * same calls run synchronously with pread/pwrite.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include "core/gpuopt_i.h"
#include "io/uring_i.h"

/*
 * Valgrind does not see the kernel write into a buffer through the ring:
 * tell it, or every byte a read brings in counts as uninitialised.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define MARK_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#endif
#endif
#ifndef MARK_DEFINED
#define MARK_DEFINED(p, n) ((void)(p), (void)(n))
#endif

struct ckpt_tuning gpo__ckpt_tune;

int gpo__ckio_dio_align(int fd, size_t *align, size_t *mem_align)
{
	struct statx stx;

	*align = CKPT_ALIGN;
	*mem_align = CKPT_ALIGN;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) ||
	    !(stx.stx_mask & STATX_DIOALIGN))
		return 0;	/* the kernel cannot tell: assume 4096 */
	if (!stx.stx_dio_offset_align)
		return -EOPNOTSUPP;
	if (stx.stx_dio_offset_align > *align)
		*align = stx.stx_dio_offset_align;
	if (stx.stx_dio_mem_align > *mem_align)
		*mem_align = stx.stx_dio_mem_align;
	return 0;
}

int gpo__ckio_set_direct(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

static void free_bufs(struct ckio *io)
{
	int i;

	if (!io->req)
		return;
	for (i = 0; i < io->nbuf && !io->ext_mem; i++)
		free(io->req[i].p);
	free(io->req);
	io->req = NULL;
}

static int alloc_bufs(struct ckio *io, size_t mem_align, char *mem)
{
	int i;

	io->req = calloc(io->nbuf + 1, sizeof(*io->req));
	if (!io->req)
		return -ENOMEM;
	io->ext_mem = mem != NULL;
	for (i = 0; i < io->nbuf && mem; i++)
		io->req[i].p = mem + (size_t)i * io->chunk;
	for (i = 0; i < io->nbuf && !mem; i++)
		if (posix_memalign((void **)&io->req[i].p, mem_align,
				   io->chunk))
			return -ENOMEM;
	return 0;
}

/* Registered buffers are pinned: RLIMIT_MEMLOCK may refuse, and that is
 * fine, unregistered ones only cost a page-table walk per request. */
static void register_bufs(struct ckio *io)
{
	struct iovec *iov;
	int i;

	if (gpo__ckpt_tune.no_fixed)
		return;
	iov = calloc(io->nbuf, sizeof(*iov));
	if (!iov)
		return;
	for (i = 0; i < io->nbuf; i++) {
		iov[i].iov_base = io->req[i].p;
		iov[i].iov_len = io->chunk;
	}
	io->fixed = !io_uring_register_buffers(&io->ring, iov, io->nbuf);
	free(iov);
}

int gpo__ckio_init(struct ckio *io, int fd, int writing, size_t chunk, int nbuf,
	      size_t mem_align)
{
	return gpo__ckio_init_mem(io, fd, writing, chunk, nbuf, mem_align, NULL);
}

int gpo__ckio_init_mem(struct ckio *io, int fd, int writing, size_t chunk,
		       int nbuf, size_t mem_align, char *mem)
{
	memset(io, 0, sizeof(*io));
	io->fd = fd;
	io->writing = writing;
	io->chunk = chunk;
	io->nbuf = nbuf;
	if (alloc_bufs(io, mem_align < 4096 ? 4096 : mem_align, mem)) {
		free_bufs(io);
		return gpo__err(-ENOMEM, "out of memory for %d I/O buffers of %zu bytes",
			       nbuf, chunk);
	}
	if (!gpo__ckpt_tune.no_ring &&
	    !io_uring_queue_init((unsigned int)nbuf + 2, &io->ring, 0)) {
		io->ring_ok = 1;
		register_bufs(io);
	}
	return 0;
}

static void prep(struct ckio *io, struct io_uring_sqe *sqe, int i)
{
	struct ckio_req *r = &io->req[i];
	char *p = r->p + r->done;
	unsigned int n = (unsigned int)(r->len - r->done);
	uint64_t off = r->off + r->done;

	if (io->fixed && i < io->nbuf) {
		if (io->writing)
			io_uring_prep_write_fixed(sqe, io->fd, p, n, off, i);
		else
			io_uring_prep_read_fixed(sqe, io->fd, p, n, off, i);
	} else if (io->writing) {
		io_uring_prep_write(sqe, io->fd, p, n, off);
	} else {
		io_uring_prep_read(sqe, io->fd, p, n, off);
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)i);
}

static int ring_queue(struct ckio *io, int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	int ret;

	if (!sqe)
		return -EBUSY;	/* cannot happen: depth > requests */
	prep(io, sqe, i);
	ret = io_uring_submit(&io->ring);
	if (ret < 0)
		return ret;
	io->inflight++;
	return 0;
}

/* The synchronous fallback: the whole request, now. */
static void sync_io(struct ckio *io, struct ckio_req *r)
{
	while (r->done < r->want) {
		ssize_t n = io->writing ?
			pwrite(io->fd, r->p + r->done, r->len - r->done,
			       r->off + r->done) :
			pread(io->fd, r->p + r->done, r->len - r->done,
			      r->off + r->done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->res = n < 0 ? -errno : io->writing ? -EIO : -ENODATA;
			break;
		}
		r->done += n;
	}
	r->busy = 0;
}

int gpo__ckio_submit(struct ckio *io, int i, void *p, uint64_t off, size_t len,
		size_t want)
{
	struct ckio_req *r = &io->req[i];

	if (i == io->nbuf)
		r->p = p;
	r->off = off;
	r->len = len;
	r->want = want;
	r->done = 0;
	r->res = 0;
	r->busy = 1;
	if (!io->ring_ok) {
		sync_io(io, r);
		return 0;
	}
	r->res = ring_queue(io, i);
	if (r->res)
		r->busy = 0;
	return r->res;
}

/* Account one completion; a short transfer goes back for the rest. */
static void complete(struct ckio *io, int i, int res)
{
	struct ckio_req *r = &io->req[i];

	io->inflight--;
	if (res == -EINTR || res == -EAGAIN) {
		res = ring_queue(io, i);
		if (!res)
			return;
	}
	if (res < 0) {
		r->res = res;
		r->busy = 0;
		return;
	}
	if (!io->writing)
		MARK_DEFINED(r->p + r->done, (size_t)res);
	r->done += (size_t)res;
	if (r->done >= r->want) {
		r->busy = 0;
		return;
	}
	if (!res) {
		/* end of file before @want: the file shrank, or no space */
		r->res = io->writing ? -EIO : -ENODATA;
		r->busy = 0;
		return;
	}
	r->res = ring_queue(io, i);
	if (r->res)
		r->busy = 0;
}

static int reap_one(struct ckio *io)
{
	struct io_uring_cqe *cqe;
	int ret;

	do {
		ret = io_uring_wait_cqe(&io->ring, &cqe);
	} while (ret == -EINTR);
	if (ret)
		return ret;
	complete(io, (int)io_uring_cqe_get_data64(cqe), cqe->res);
	io_uring_cqe_seen(&io->ring, cqe);
	return 0;
}

int gpo__ckio_wait(struct ckio *io, int i)
{
	int ret;

	while (io->req[i].busy) {
		ret = reap_one(io);
		if (ret)
			return ret;
	}
	return io->req[i].res;
}

int gpo__ckio_drain(struct ckio *io)
{
	int i, ret, first = 0;

	for (i = 0; i <= io->nbuf; i++) {
		ret = gpo__ckio_wait(io, i);
		if (ret && !first)
			first = ret;
	}
	return first;
}

void gpo__ckio_exit(struct ckio *io)
{
	if (io->ring_ok) {
		/* the kernel may still write into the buffers: wait first */
		while (io->inflight > 0 && !reap_one(io))
			;
		io_uring_queue_exit(&io->ring);
		io->ring_ok = 0;
	}
	free_bufs(io);
}
