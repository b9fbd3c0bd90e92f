// SPDX-License-Identifier: MIT
/*
 * comm.c - data-parallel gradient reduction over MPI (libgpuopt-mpi)
 *
 * No GPU-aware MPI knows OpenCL or Vulkan buffers, so gradients are staged
 * through pinned host memory (gpo_host_alloc()). A step's shard gradients
 * are read back as each shard's backward finishes; the last one is read
 * bucket by bucket inside the reduction, so that its copies overlap the
 * collectives of the buckets before. A bucket goes through three stages:
 *
 *	A  (last shard's copy to the host), pack, MPI_Ialltoallv
 *	B  wait, the ordered sum of this rank's slice, MPI_Iallgatherv
 *	C  wait, the bucket back to the device's grad buffer
 *
 * and bucket b's A runs beside b-1's B and b-2's C (two buffers each).
 * A rank with K >= 2 shards does not keep the ones before its last for
 * stage A: right after shard k's copy, round k (an all-to-all of its
 * slices) is posted, and a progress thread tests it while shard k + 1
 * computes; stage B then adds the S gradients in the same order.
 * With overlap=1 (the default) the last shard's backward runs in
 * segments, each ending where it has finished the gradients of one or
 * more buckets (tensor/graph.c finds each bucket's last writer); after
 * each segment those buckets are read back and go into the pipeline,
 * in the order backward finishes them (the last layer's first), while
 * the device computes the next segment. The pipeline is the same, in
 * that order: stage A (read already) and B run between segments, and C
 * keeps its write to the device until backward has ended.
 * Every wait has a timeout (timeout=, 300 s): a rank that died or hangs
 * makes the others' step fail with -ETIMEDOUT instead of waiting forever.
 *
 * The sum of element i is ((g_0[i] + g_1[i]) + ...) + g_{S-1}[i], then
 * / S, in f32, whatever the rank count: shard k is always the same rows of
 * the batch and its gradient does not depend on who computed it, so the
 * bits do not either. deterministic=0 instead sums a rank's own shards and
 * lets MPI_Iallreduce(MPI_SUM) add the ranks' sums.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include <gpuopt/comm.h>
#include "core/gpuopt_i.h"
#include "optim/optim_i.h"
#include "train/train_i.h"

#define NBUF	2
/* the requests the progress thread tests: the round's, the slots' */
#define W_ROUND	0
#define NWATCH	(1 + NBUF)

struct gpo_comm {
	MPI_Comm comm;
	int rank, size, local_rank;
	uint32_t shards, lo, hi;	/* this rank's shards [lo, hi) */
	int deterministic;
	uint64_t bucket;		/* elements */
	uint32_t max_ranks;
	uint64_t timeout_ns;		/* a wait on MPI; 0: none */
	int overlap;			/* the last shard in segments */

	/* attached: */
	struct gpo_optim *opt;
	struct gpo_device *dev;
	uint64_t total;			/* elements of the flat gradient */
	float *shard;			/* pinned: (hi - lo) x total */
	float *out;			/* pinned: the reduced gradient */
	float *send[NBUF], *recv[NBUF];
	double *sloss, *sacc;		/* per shard, all S */
	uint32_t last_pending;		/* the last shard awaits its copy */
	/*
	 * The bucket pipeline of a step, over the buckets in the order
	 * @ord (backward's with segments, else by position): of @nbk,
	 * stage A posted for @na, B done for @nbd, C for @nc, written
	 * back to the device for @nw (C leaves the write for later while
	 * @bwd_open: the device still runs backward), the last shard's
	 * copy read for @nread. @req: each buffer slot's request.
	 */
	uint64_t nbk, *ord;
	uint64_t na, nbd, nc, nw, nread;
	int seg, bwd_open;
	int seg_more;			/* segments are still to come */
	MPI_Request req[NBUF];
	/*
	 * counts and displacements, size each: MPI reads them until a
	 * nonblocking collective completes, so each buffer slot has its own
	 * for the all-to-all (send, receive) and the all-gather
	 */
	int *cnt[NBUF], *dsp[NBUF], *rcnt[NBUF], *rdsp[NBUF];
	int *gcnt[NBUF], *gdsp[NBUF];
	int *counts;			/* what they point into */
	struct gpo_comm_stats st;

	/*
	 * ZeRO-1 (zero=1): rank q owns the flat elements [zstart(q),
	 * zstart(q + 1)), this rank [@zlo, @zlo + @zn), and sums exactly
	 * those of each bucket; @zopt is an optimizer of one tensor of them
	 * whose param and grad are views of the model optimizer's buffers
	 * and which alone keeps their state (the model's keeps none);
	 * @full: pinned, the whole flat buffer for the all-gathers;
	 * @state_out: the model's slots were given back for a save
	 */
	int zero;
	struct gpo_optim *zopt;
	uint64_t zlo, zn, zalign;
	float *full;
	int state_out;

	/*
	 * Rounds (deterministic=1, K = hi - lo >= 2 shards a rank): round j
	 * sends every rank's j-th shard's slices to their owners as soon as
	 * it is read back, while the next shard computes; only the last
	 * shard goes through the bucket pipeline. @mine: the elements of
	 * this rank's slices of all buckets, @qmine[q] rank q's;
	 * @rrecv: (K - 1) x size x mine, round j from rank p at
	 * (j size + p) mine; @rsend: one round's packed slices. A progress
	 * thread tests the round in flight (MPI_THREAD_SERIALIZED: only one
	 * thread calls MPI at a time) so that it moves during the compute.
	 */
	int rounds;
	uint64_t mine, *qmine;
	float *rsend, *rrecv;
	int *rc4;			/* counts, displacements: 4 x size */
	MPI_Request rreq;
	int rflight;			/* rreq is posted, not waited for */

	/*
	 * The progress thread (MPI_THREAD_SERIALIZED: one thread in MPI
	 * at a time) tests the posted requests while the training thread
	 * computes: lent them (@thr_has) when it leaves the comm layer,
	 * it hands them back (@thr_stop) before that calls MPI again.
	 * Hidden time: the training thread computing (@computing: outside
	 * the comm layer) while requests are in flight (@inflight of them,
	 * @wpost[w] each: posted, not seen done), counted from @hsince.
	 * All under @mu.
	 */
	pthread_t thr;
	int thr_on;			/* the progress thread runs */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int mu_on;			/* mu and cv made */
	int thr_has, thr_stop, thr_quit, thr_rc;
	int computing, inflight, wpost[NWATCH];
	uint64_t hsince;
};

static int mpi_err(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return 0;
	MPI_Error_string(rc, msg, &len);
	return gpo__err(-EIO, "%s: %.*s", what, len, msg);
}

static int parse_opts(struct gpo_comm *c, const char *opts)
{
	const char *pos = opts ? opts : "";
	char key[32], val[64];
	uint64_t v;
	int ret, b;

	while ((ret = gpo__kv_next(&pos, key, sizeof(key), val,
				   sizeof(val))) > 0) {
		if (!strcmp(key, "deterministic") || !strcmp(key, "zero") ||
		    !strcmp(key, "overlap")) {
			if (gpo__parse_bool(val, &b))
				return gpo__err(-EINVAL, "%s '%s': 0 or 1", key,
						val);
			if (key[0] == 'd')
				c->deterministic = b;
			else if (key[0] == 'z')
				c->zero = b;
			else
				c->overlap = b;
			continue;
		}
		if (strcmp(key, "shards") && strcmp(key, "bucket_bytes") &&
		    strcmp(key, "max_ranks") && strcmp(key, "timeout"))
			return gpo__err(-EINVAL, "unknown comm setting '%s' (shards, deterministic, bucket_bytes, max_ranks, timeout, zero, overlap)",
					key);
		if (gpo__parse_u64(val, &v))
			return gpo__err(-EINVAL, "%s '%s': a whole number", key,
					val);
		if (!strcmp(key, "shards")) {
			if (!v || v > 65536)
				return gpo__err(-EINVAL, "shards %llu: 1..65536",
						(unsigned long long)v);
			c->shards = (uint32_t)v;
		} else if (!strcmp(key, "bucket_bytes")) {
			if (v < 4096 || v > (1u << 30) || v % 4)
				return gpo__err(-EINVAL, "bucket_bytes %llu: 4096..1073741824, a multiple of 4",
						(unsigned long long)v);
			c->bucket = v / 4;
		} else if (!strcmp(key, "timeout")) {
			if (v > 86400)
				return gpo__err(-EINVAL, "timeout %llu: 0..86400 seconds",
						(unsigned long long)v);
			c->timeout_ns = v * 1000000000ull;
		} else {
			if (!v || v > 1u << 20)
				return gpo__err(-EINVAL, "max_ranks %llu: 1..1048576",
						(unsigned long long)v);
			c->max_ranks = (uint32_t)v;
		}
	}
	return ret;
}

int gpo_comm_new(const void *mpi_comm, const char *opts,
		 struct gpo_comm **out)
{
	MPI_Comm base = mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD;
	struct gpo_comm *c;
	MPI_Comm local;
	int init = 0, ret, i;

	if (!out)
		return gpo__err(-EINVAL, "gpo_comm_new: NULL argument");
	MPI_Initialized(&init);
	if (!init)
		return gpo__err(-EINVAL, "gpo_comm_new: MPI is not initialised (MPI_Init)");
	c = calloc(1, sizeof(*c));
	if (!c)
		return gpo__err(-ENOMEM, "out of memory");
	c->deterministic = 1;
	c->overlap = 1;
	c->bucket = (4u << 20) / 4;
	c->max_ranks = 1024;
	c->timeout_ns = 300ull * 1000000000ull;
	c->comm = MPI_COMM_NULL;
	c->rreq = MPI_REQUEST_NULL;
	for (i = 0; i < NBUF; i++)
		c->req[i] = MPI_REQUEST_NULL;
	if (pthread_mutex_init(&c->mu, NULL)) {
		free(c);
		return gpo__err(-ENOMEM, "pthread_mutex_init");
	}
	if (pthread_cond_init(&c->cv, NULL)) {
		pthread_mutex_destroy(&c->mu);
		free(c);
		return gpo__err(-ENOMEM, "pthread_cond_init");
	}
	c->mu_on = 1;
	ret = parse_opts(c, opts);
	if (ret)
		goto out_free;
	ret = mpi_err(MPI_Comm_dup(base, &c->comm), "MPI_Comm_dup");
	if (ret)
		goto out_free;
	MPI_Comm_rank(c->comm, &c->rank);
	MPI_Comm_size(c->comm, &c->size);
	if ((uint32_t)c->size > c->max_ranks) {
		ret = gpo__err(-EINVAL, "%d ranks: more than max_ranks=%u",
			       c->size, c->max_ranks);
		goto out_free;
	}
	if (c->zero && !c->deterministic) {
		ret = gpo__err(-EINVAL, "zero=1 needs deterministic=1 (each rank owns a slice of the sum)");
		goto out_free;
	}
	if (!c->shards)
		c->shards = (uint32_t)c->size;
	if (c->shards % (uint32_t)c->size) {
		ret = gpo__err(-EINVAL, "shards=%u is not a multiple of the %d ranks",
			       c->shards, c->size);
		goto out_free;
	}
	c->lo = c->shards / c->size * c->rank;
	c->hi = c->lo + c->shards / c->size;
	ret = mpi_err(MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED,
					  c->rank, MPI_INFO_NULL, &local),
		      "MPI_Comm_split_type");
	if (ret)
		goto out_free;
	MPI_Comm_rank(local, &c->local_rank);
	MPI_Comm_free(&local);
	c->counts = calloc(6 * NBUF * (size_t)c->size, sizeof(int));
	if (!c->counts) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < NBUF; i++) {
		int *p = c->counts + 6 * i * c->size;

		c->cnt[i] = p;
		c->dsp[i] = p + c->size;
		c->rcnt[i] = p + 2 * c->size;
		c->rdsp[i] = p + 3 * c->size;
		c->gcnt[i] = p + 4 * c->size;
		c->gdsp[i] = p + 5 * c->size;
	}
	*out = c;
	return 0;

out_free:
	gpo_comm_free(c);
	return ret;
}

static void thread_stop(struct gpo_comm *c);

static void detach(struct gpo_comm *c)
{
	int i;

	thread_stop(c);
	free(c->qmine);
	free(c->rsend);
	free(c->rrecv);
	free(c->rc4);
	free(c->ord);
	c->ord = NULL;
	c->nbk = 0;
	c->qmine = NULL;
	c->rsend = c->rrecv = NULL;
	c->rc4 = NULL;
	c->rounds = 0;

	if (c->dev) {
		gpo_host_free(c->dev, c->shard);
		gpo_host_free(c->dev, c->out);
		gpo_host_free(c->dev, c->full);
	}
	if (c->zopt) {
		/* the views are the model optimizer's buffers: not freed here */
		memset(&c->zopt->param, 0, sizeof(c->zopt->param));
		memset(&c->zopt->grad, 0, sizeof(c->zopt->grad));
		c->zopt->ext[0] = c->zopt->ext[1] = NULL;
	}
	gpo_optim_free(c->zopt);
	c->zopt = NULL;
	c->full = NULL;
	for (i = 0; i < NBUF; i++) {
		free(c->send[i]);
		free(c->recv[i]);
		c->send[i] = c->recv[i] = NULL;
	}
	free(c->sloss);
	c->shard = c->out = NULL;
	c->sloss = c->sacc = NULL;
	c->opt = NULL;
	c->dev = NULL;
}

void gpo_comm_free(struct gpo_comm *c)
{
	if (!c)
		return;
	detach(c);
	if (c->comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->comm);
	free(c->counts);
	if (c->mu_on) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
	}
	free(c);
}

int gpo_comm_rank(const struct gpo_comm *c)
{
	return c ? c->rank : -EINVAL;
}

int gpo_comm_size(const struct gpo_comm *c)
{
	return c ? c->size : -EINVAL;
}

int gpo_comm_stats(const struct gpo_comm *c, struct gpo_comm_stats *st)
{
	if (!c || !st)
		return gpo__err(-EINVAL, "gpo_comm_stats: NULL argument");
	*st = c->st;
	return 0;
}

int gpo_comm_device(struct gpo_comm *c, struct gpo_ctx *ctx, const char *spec,
		    struct gpo_device **out)
{
	char item[64], id[64];
	const char *p, *e;
	int n, i, k, hits;

	if (!c || !ctx || !out)
		return gpo__err(-EINVAL, "gpo_comm_device: NULL argument");
	spec = spec ? spec : "";
	if (strchr(spec, ',')) {
		/* rank r takes item r modulo the count */
		for (n = 1, p = spec; (p = strchr(p, ',')); p++)
			n++;
		for (p = spec, k = c->rank % n; k; k--)
			p = strchr(p, ',') + 1;
		e = strchr(p, ',');
		i = e ? (int)(e - p) : (int)strlen(p);
		if (i >= (int)sizeof(item))
			return gpo__err(-EINVAL, "device '%.*s': too long", i, p);
		memcpy(item, p, i);
		item[i] = 0;
		return gpo_device_select(ctx, item, out);
	}
	if (strcmp(spec, "cpu") && strcmp(spec, "opencl") &&
	    strcmp(spec, "vulkan"))
		return gpo_device_select(ctx, spec, out);
	n = gpo_device_count(ctx);
	for (i = 0, hits = 0; i < n; i++) {
		struct gpo_device_info di;

		if (!gpo_device_info(ctx, i, &di) && !strcmp(di.backend, spec))
			hits++;
	}
	if (!hits)
		return gpo__err(-ENODEV, "no %s device", spec);
	k = c->local_rank % hits;
	for (i = 0; i < n; i++) {
		struct gpo_device_info di;

		if (gpo_device_info(ctx, i, &di) || strcmp(di.backend, spec))
			continue;
		if (!k--) {
			snprintf(id, sizeof(id), "%s", di.id);
			return gpo_device_select(ctx, id, out);
		}
	}
	return gpo__err(-ENODEV, "no %s device", spec);
}

/* ZeRO-1: the first flat element rank @q owns (q = size: the end) */
static uint64_t zstart(const struct gpo_comm *c, int q)
{
	if (q >= c->size)
		return c->total;
	/* aligned, so that the shard optimizer's views can bind there */
	return c->total * (uint64_t)q / (uint64_t)c->size / c->zalign *
	       c->zalign;
}

/*
 * Where rank @q's slice of the bucket [@b0, @b0 + @len) starts, in it:
 * an even cut of each bucket, or with ZeRO-1 the part of rank q's range
 * that lies in the bucket (empty for most ranks)
 */
static uint64_t slice_lo(const struct gpo_comm *c, uint64_t b0, uint64_t len,
			 int q)
{
	uint64_t z;

	if (!c->zero)
		return len * (uint64_t)q / (uint64_t)c->size;
	z = zstart(c, q);
	return z <= b0 ? 0 : z - b0 < len ? z - b0 : len;
}

static int read_grad(struct gpo_comm *c, float *dst, uint64_t from,
		     uint64_t n)
{
	struct gpo_device *dev = c->dev;
	uint64_t t0 = gpo__now_ns();
	int ret;

	pthread_mutex_lock(&dev->lock);
	ret = dev->ops->read(dev, &c->opt->grad, from * 4, dst, n * 4);
	pthread_mutex_unlock(&dev->lock);
	c->st.d2h_ns += gpo__now_ns() - t0;
	return ret;
}

/*
 * Wait for @r, at most the timeout: a peer that died or hangs would keep
 * this rank in the collective forever. Polls (MPI_Wait cannot time out),
 * spinning briefly first, then sleeping 20 us between tests.
 */
static int wait_req(struct gpo_comm *c, MPI_Request *r, const char *what)
{
	struct timespec nap = { 0, 20000 };
	uint64_t t0 = gpo__now_ns(), now;
	int done = 0, rc, spins = 0;

	if (!c->timeout_ns) {
		rc = MPI_Wait(r, MPI_STATUS_IGNORE);
		c->st.wait_ns += gpo__now_ns() - t0;
		return mpi_err(rc, what);
	}
	for (;;) {
		rc = MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS || done)
			break;
		now = gpo__now_ns();
		if (now - t0 > c->timeout_ns) {
			c->st.wait_ns += now - t0;
			return gpo__err(-ETIMEDOUT, "rank %d: %s: no answer from the other ranks in %llu s (one died or hangs)",
					c->rank, what,
					(unsigned long long)(c->timeout_ns / 1000000000ull));
		}
		if (++spins > 200)
			nanosleep(&nap, NULL);
	}
	c->st.wait_ns += gpo__now_ns() - t0;
	return mpi_err(rc, what);
}

/* ---- in flight while computing: hidden time, the progress thread -------- */

/* the time since the last change of computing or inflight; under mu */
static void hid_tick(struct gpo_comm *c)
{
	uint64_t now = gpo__now_ns();

	if (c->computing && c->inflight) {
		c->st.hidden_ns += now - c->hsince;
		c->st.comm_ns += now - c->hsince;
	}
	c->hsince = now;
}

/* watched request @w was posted */
static void watch_post(struct gpo_comm *c, int w)
{
	pthread_mutex_lock(&c->mu);
	hid_tick(c);
	if (!c->wpost[w]) {
		c->wpost[w] = 1;
		c->inflight++;
	}
	pthread_mutex_unlock(&c->mu);
}

/* ...is done (seen by either thread) */
static void watch_done(struct gpo_comm *c, int w)
{
	pthread_mutex_lock(&c->mu);
	hid_tick(c);
	if (c->wpost[w]) {
		c->wpost[w] = 0;
		c->inflight--;
	}
	pthread_mutex_unlock(&c->mu);
}

static MPI_Request *watched(struct gpo_comm *c, int w)
{
	return w == W_ROUND ? &c->rreq : &c->req[w - 1];
}

static void *progress(void *arg)
{
	struct timespec nap = { 0, 50000 };
	struct gpo_comm *c = arg;
	int w, done, rc, post[NWATCH];

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->thr_has && !c->thr_quit)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->thr_quit)
			break;
		if (c->thr_stop || !c->inflight || c->thr_rc != MPI_SUCCESS) {
			/* handed back: the training thread calls MPI now */
			c->thr_has = 0;
			c->thr_stop = 0;
			pthread_cond_broadcast(&c->cv);
			continue;
		}
		memcpy(post, c->wpost, sizeof(post));
		pthread_mutex_unlock(&c->mu);
		/* the training thread calls no MPI while thr_has */
		for (w = 0; w < NWATCH; w++) {
			if (!post[w])
				continue;
			done = 0;
			rc = MPI_Test(watched(c, w), &done, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) {
				pthread_mutex_lock(&c->mu);
				c->thr_rc = rc;
				pthread_mutex_unlock(&c->mu);
				break;
			}
			if (done)
				watch_done(c, w);
		}
		pthread_mutex_lock(&c->mu);
		if (c->thr_stop || !c->inflight || c->thr_quit)
			continue;
		pthread_mutex_unlock(&c->mu);
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void thread_stop(struct gpo_comm *c)
{
	if (!c->thr_on)
		return;
	pthread_mutex_lock(&c->mu);
	c->thr_quit = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thr, NULL);
	c->thr_on = 0;
	c->thr_has = c->thr_stop = c->thr_quit = 0;
}

/* the thread, where MPI allows it (else requests move in waits only) */
static void thread_start(struct gpo_comm *c)
{
	int level = MPI_THREAD_SINGLE;

	MPI_Query_thread(&level);
	if (level < MPI_THREAD_SERIALIZED)
		return;
	c->thr_quit = c->thr_has = c->thr_stop = 0;
	c->thr_rc = MPI_SUCCESS;
	if (!pthread_create(&c->thr, NULL, progress, c))
		c->thr_on = 1;
}

/*
 * The training thread comes into the comm layer: no longer computing,
 * and the requests back from the progress thread before it calls MPI
 */
static int comm_enter(struct gpo_comm *c)
{
	int rc;

	pthread_mutex_lock(&c->mu);
	hid_tick(c);
	c->computing = 0;
	if (c->thr_has) {
		c->thr_stop = 1;
		pthread_cond_broadcast(&c->cv);
		while (c->thr_has)
			pthread_cond_wait(&c->cv, &c->mu);
	}
	rc = c->thr_rc;
	c->thr_rc = MPI_SUCCESS;
	pthread_mutex_unlock(&c->mu);
	return mpi_err(rc, "a collective tested while computing");
}

/*
 * ...and goes back to computing: what is in flight goes to the progress
 * thread (not after a failure: the caller must abort)
 */
static void comm_leave(struct gpo_comm *c, int failed)
{
	pthread_mutex_lock(&c->mu);
	hid_tick(c);
	c->computing = 1;
	if (c->thr_on && c->inflight && !failed) {
		c->thr_has = 1;
		c->thr_stop = 0;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
}

/* ---- rounds: shards before the last, sent during the next's compute ---- */

static int round_post(struct gpo_comm *c, uint32_t j);

static int shard_done(void *arg, uint32_t shard, double loss, double acc)
{
	struct gpo_comm *c = arg;
	uint32_t k = shard - c->lo;
	uint64_t t0;
	int ret;

	c->sloss[shard] = loss;
	c->sacc[shard] = acc;
	if (shard + 1 == c->hi) {
		/* read bucket by bucket in the reduction's first stage */
		c->last_pending = 1;
		return 0;
	}
	ret = comm_enter(c);
	t0 = gpo__now_ns();
	if (!ret)
		ret = read_grad(c, c->shard + (uint64_t)k * c->total, 0,
				c->total);
	if (!ret && c->rounds)
		ret = round_post(c, k);
	c->st.comm_ns += gpo__now_ns() - t0;
	comm_leave(c, ret);
	return ret;
}

/*
 * The round in flight, done: tested by the progress thread while the
 * next shard computed (the time counts as hidden), or waited for here
 */
static int round_wait(struct gpo_comm *c)
{
	int ret;

	if (!c->rflight)
		return 0;
	c->rflight = 0;
	ret = wait_req(c, &c->rreq, "a round's MPI_Ialltoallv");
	watch_done(c, W_ROUND);
	return ret;
}

/* round @j: shard lo + j's slices to their owners, posted */
static int round_post(struct gpo_comm *c, uint32_t j)
{
	const float *g = c->shard + (uint64_t)j * c->total;
	int *cnt = c->rc4, *dsp = cnt + c->size, *rcnt = dsp + c->size;
	int *rdsp = rcnt + c->size, q, ret;
	uint64_t b0, len, lo, n, o = 0;

	ret = round_wait(c);
	if (ret)
		return ret;
	for (q = 0; q < c->size; q++) {
		cnt[q] = (int)c->qmine[q];
		dsp[q] = (int)o;
		for (b0 = 0; b0 < c->total; b0 += c->bucket) {
			len = c->total - b0 < c->bucket ? c->total - b0 :
							  c->bucket;
			lo = slice_lo(c, b0, len, q);
			n = slice_lo(c, b0, len, q + 1) - lo;
			memcpy(c->rsend + o, g + b0 + lo, n * 4);
			o += n;
		}
		rcnt[q] = (int)c->mine;
		rdsp[q] = (int)(c->mine * q);
	}
	ret = mpi_err(MPI_Ialltoallv(c->rsend, cnt, dsp, MPI_FLOAT,
				     c->rrecv + (uint64_t)j * c->size * c->mine,
				     rcnt, rdsp, MPI_FLOAT, c->comm, &c->rreq),
		      "MPI_Ialltoallv");
	if (ret)
		return ret;
	c->rflight = 1;
	watch_post(c, W_ROUND);
	return 0;
}

/* where this rank's slice of the bucket at @b0 starts in a round's part */
static uint64_t mine_off(const struct gpo_comm *c, uint64_t b0)
{
	uint64_t b, len, o = 0;

	for (b = 0; b < b0; b += c->bucket) {
		len = c->total - b < c->bucket ? c->total - b : c->bucket;
		o += slice_lo(c, b, len, c->rank + 1) -
		     slice_lo(c, b, len, c->rank);
	}
	return o;
}

/* rounds: set up at attach */
static int rounds_setup(struct gpo_comm *c)
{
	uint32_t K = c->hi - c->lo;
	uint64_t b0, len;
	int q;

	if (!c->deterministic || K < 2)
		return 0;
	c->qmine = calloc(c->size, sizeof(*c->qmine));
	c->rc4 = calloc(4 * (size_t)c->size, sizeof(int));
	if (!c->qmine || !c->rc4)
		return gpo__err(-ENOMEM, "out of memory");
	for (q = 0; q < c->size; q++)
		for (b0 = 0; b0 < c->total; b0 += c->bucket) {
			len = c->total - b0 < c->bucket ? c->total - b0 :
							  c->bucket;
			c->qmine[q] += slice_lo(c, b0, len, q + 1) -
				       slice_lo(c, b0, len, q);
		}
	c->mine = c->qmine[c->rank];
	/* MPI's counts are ints: else no rounds, the pipeline as before */
	if (c->mine * c->size > INT_MAX || c->total > INT_MAX)
		return 0;
	c->rsend = malloc(c->total * 4 + 4);
	c->rrecv = malloc((uint64_t)(K - 1) * c->size * c->mine * 4 + 4);
	if (!c->rsend || !c->rrecv)
		return gpo__err(-ENOMEM, "out of memory");
	c->rounds = 1;
	return 0;
}

/* ---- the bucket pipeline ----------------------------------------------- */

static uint64_t bucket_len(const struct gpo_comm *c, uint64_t b)
{
	uint64_t b0 = b * c->bucket;

	return c->total - b0 < c->bucket ? c->total - b0 : c->bucket;
}

/* stage A of the order's @j-th bucket: the last shard's copy, pack, post */
static int stage_a(struct gpo_comm *c, uint64_t j)
{
	uint32_t K = c->hi - c->lo, k, k0;
	uint64_t o = 0, b0 = c->ord[j] * c->bucket;
	uint64_t len = bucket_len(c, c->ord[j]);
	int i = (int)(j % NBUF), q, ret;
	MPI_Request *req = &c->req[i];
	float *send = c->send[i];

	if (c->last_pending && j >= c->nread) {
		ret = read_grad(c, c->shard + (uint64_t)(K - 1) * c->total + b0,
				b0, len);
		if (ret)
			return ret;
		c->nread = j + 1;
	}
	if (!c->deterministic) {
		/* this rank's shards, summed in order, into out */
		float *dst = c->out + b0;
		uint64_t e;

		memcpy(dst, c->shard + b0, len * 4);
		for (k = 1; k < K; k++) {
			const float *g = c->shard + (uint64_t)k * c->total + b0;

			for (e = 0; e < len; e++)
				dst[e] += g[e];
		}
		ret = mpi_err(MPI_Iallreduce(MPI_IN_PLACE, dst, (int)len,
					     MPI_FLOAT, MPI_SUM, c->comm,
					     req), "MPI_Iallreduce");
		goto out_posted;
	}
	/*
	 * to rank q: its slice of each of my K shards, shard by shard (with
	 * rounds only the last shard's: the others went in theirs)
	 */
	k0 = c->rounds ? K - 1 : 0;
	for (q = 0; q < c->size; q++) {
		uint64_t lo = slice_lo(c, b0, len, q), n = slice_lo(c, b0, len, q + 1) - lo;

		c->cnt[i][q] = (int)(n * (K - k0));
		c->dsp[i][q] = (int)o;
		for (k = k0; k < K; k++, o += n)
			memcpy(send + o, c->shard + (uint64_t)k * c->total +
			       b0 + lo, n * 4);
	}
	/* from rank p: my slice of its K shards, which are shards pK.. */
	{
		uint64_t lo = slice_lo(c, b0, len, c->rank);
		uint64_t n = slice_lo(c, b0, len, c->rank + 1) - lo;

		for (q = 0; q < c->size; q++) {
			c->rcnt[i][q] = (int)(n * (K - k0));
			c->rdsp[i][q] = (int)(n * (K - k0) * q);
		}
	}
	ret = mpi_err(MPI_Ialltoallv(send, c->cnt[i], c->dsp[i], MPI_FLOAT,
				     c->recv[i], c->rcnt[i], c->rdsp[i],
				     MPI_FLOAT,
				     c->comm, req), "MPI_Ialltoallv");
out_posted:
	if (ret)
		return ret;
	watch_post(c, 1 + i);
	if (c->bwd_open && c->seg_more)
		c->st.early_buckets++;
	return 0;
}

/* stage B: the ordered sum of my slice, then post the all-gather */
static int stage_b(struct gpo_comm *c, uint64_t j)
{
	uint64_t b0 = c->ord[j] * c->bucket, len = bucket_len(c, c->ord[j]);
	uint64_t lo = slice_lo(c, b0, len, c->rank);
	uint64_t n = slice_lo(c, b0, len, c->rank + 1) - lo, e;
	int i = (int)(j % NBUF), ret, q;
	MPI_Request *req = &c->req[i];
	float *dst = c->out + b0 + lo, *r = c->recv[i];
	float inv = (float)c->shards;
	uint32_t s, K = c->hi - c->lo;
	uint64_t ob;

	/* the rounds' slices are summed below */
	ret = round_wait(c);
	if (ret)
		return ret;
	ret = wait_req(c, req, "MPI_Ialltoallv");
	watch_done(c, 1 + i);
	if (ret)
		return ret;
	if (!c->rounds) {
		/* recv holds shards 0..S-1 in order, n elements each */
		memcpy(dst, r, n * 4);
		for (s = 1; s < c->shards; s++) {
			const float *g = r + (uint64_t)s * n;

			for (e = 0; e < n; e++)
				dst[e] += g[e];
		}
	} else {
		/*
		 * shard s = p K + k: k < K - 1 came in round k, the last in
		 * recv at p n; the same order, the same sum
		 */
		ob = mine_off(c, b0);
		for (s = 0; s < c->shards; s++) {
			uint32_t p = s / K, k = s % K;
			const float *g = k + 1 < K ?
				c->rrecv + ((uint64_t)k * c->size + p) *
				c->mine + ob : r + (uint64_t)p * n;

			if (!s)
				memcpy(dst, g, n * 4);
			else
				for (e = 0; e < n; e++)
					dst[e] += g[e];
		}
	}
	for (e = 0; e < n; e++)
		dst[e] /= inv;
	if (c->zero) {
		/* ZeRO-1: this rank steps its slice alone; nothing to share */
		*req = MPI_REQUEST_NULL;
		return 0;
	}
	for (q = 0; q < c->size; q++) {
		c->gcnt[i][q] = (int)(slice_lo(c, b0, len, q + 1) -
				      slice_lo(c, b0, len, q));
		c->gdsp[i][q] = (int)slice_lo(c, b0, len, q);
	}
	ret = mpi_err(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
				      c->out + b0, c->gcnt[i], c->gdsp[i],
				      MPI_FLOAT,
				      c->comm, req), "MPI_Iallgatherv");
	if (!ret)
		watch_post(c, 1 + i);
	return ret;
}

/* the reduced buckets of the order up to @upto, to the device's grad buffer */
static int put_upto(struct gpo_comm *c, uint64_t upto)
{
	struct gpo_device *dev = c->dev;
	uint64_t b0, len, lo;
	int ret = 0;

	for (; !ret && c->nw < upto; c->nw++) {
		b0 = c->ord[c->nw] * c->bucket;
		len = bucket_len(c, c->ord[c->nw]);
		if (c->zero) {
			/* ZeRO-1: only this rank's slice, for its shard optimizer */
			lo = slice_lo(c, b0, len, c->rank);
			len = slice_lo(c, b0, len, c->rank + 1) - lo;
			if (!len)
				continue;
			b0 += lo;
		}
		pthread_mutex_lock(&dev->lock);
		ret = dev->ops->write(dev, &c->opt->grad, b0 * 4, c->out + b0,
				      len * 4);
		pthread_mutex_unlock(&dev->lock);
	}
	return ret;
}

/*
 * stage C: wait, and the bucket to the device (while backward runs, the
 * write waits: it would wait for the segment the device computes)
 */
static int stage_c(struct gpo_comm *c, uint64_t j)
{
	uint64_t b0 = c->ord[j] * c->bucket, len = bucket_len(c, c->ord[j]), e;
	int i = (int)(j % NBUF), ret;

	ret = wait_req(c, &c->req[i], c->deterministic ? "MPI_Iallgatherv" :
							 "MPI_Iallreduce");
	watch_done(c, 1 + i);
	if (ret)
		return ret;
	if (!c->deterministic)
		for (e = 0; e < len; e++)
			c->out[b0 + e] /= (float)c->shards;
	return c->bwd_open ? 0 : put_upto(c, j + 1);
}

/*
 * The pipeline from where it is: at step j, the @j-th bucket's stage A,
 * j-1's B and j-2's C (C first: it frees the request slot A reuses,
 * bucket j - 2's; recv and send j % NBUF were last read by j - 2's B).
 * Stage A only for the first @upto buckets of the order; with @upto at
 * the end, until every bucket is through C. (deterministic=0 has no
 * stage B: its Iallreduce is one.)
 */
static int pipe_run(struct gpo_comm *c, uint64_t upto)
{
	uint64_t n = c->nbk, j, end;
	int ret = 0;

	j = c->na < c->nbd + 1 ? c->na : c->nbd + 1;
	if (c->nc + 2 < j)
		j = c->nc + 2;
	end = upto < n ? upto : n + 2;
	for (; !ret && j < end; j++) {
		if (j >= 2 && j - 2 >= c->nc && j - 2 < n) {
			ret = stage_c(c, j - 2);
			if (!ret)
				c->nc = j - 1;
		}
		if (!ret && j >= 1 && j - 1 >= c->nbd && j - 1 < n) {
			ret = c->deterministic ? stage_b(c, j - 1) : 0;
			if (!ret)
				c->nbd = j;
		}
		if (!ret && j >= c->na && j < upto && j < n) {
			ret = stage_a(c, j);
			if (!ret)
				c->na = j + 1;
		}
	}
	return ret;
}

static int reduce_loss(struct gpo_comm *c, double *loss, double *acc)
{
	uint32_t K = c->hi - c->lo, s;
	MPI_Request r;
	double l = 0, a = 0;
	int ret;

	/* sloss and sacc are one array: shard losses, then accuracies */
	ret = mpi_err(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
				     c->sloss, (int)K, MPI_DOUBLE, c->comm, &r),
		      "MPI_Iallgather");
	if (!ret)
		ret = wait_req(c, &r, "the loss all-gather");
	if (!ret)
		ret = mpi_err(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
					     c->sacc, (int)K, MPI_DOUBLE,
					     c->comm, &r), "MPI_Iallgather");
	if (!ret)
		ret = wait_req(c, &r, "the accuracy all-gather");
	if (ret)
		return ret;
	for (s = 0; s < c->shards; s++) {
		l += c->sloss[s];
		a += c->sacc[s];
	}
	*loss = l / c->shards;
	*acc = a / c->shards;
	return 0;
}

/*
 * The reduction: the pipeline from where the segments left it (from
 * the start without them) to its end, then the loss. After a failure
 * requests may be left posted: the communicator is then unusable, and
 * the caller must end the job (MPI_Abort), since the other ranks wait
 * in collectives this rank will never join.
 */
static int reduce(void *arg, double *loss, double *acc)
{
	struct gpo_comm *c = arg;
	uint64_t j, t0;
	int ret;

	ret = comm_enter(c);
	t0 = gpo__now_ns();
	if (!ret)
		ret = round_wait(c);
	/* backward has ended: what C kept for the device goes now */
	c->bwd_open = 0;
	if (!ret)
		ret = put_upto(c, c->nc);
	if (!ret)
		ret = pipe_run(c, c->nbk);
	c->last_pending = 0;
	c->na = c->nbd = c->nc = c->nw = c->nread = 0;
	if (c->seg)
		for (j = 0; j < c->nbk; j++)
			c->ord[j] = j;
	c->seg = 0;
	if (!ret)
		ret = reduce_loss(c, loss, acc);
	c->st.reduce_ns += gpo__now_ns() - t0;
	c->st.comm_ns += gpo__now_ns() - t0;
	if (!ret) {
		c->st.reductions++;
		c->st.bytes += c->total * 4;
	}
	comm_leave(c, ret);
	return ret;
}

/*
 * The last shard's backward in segments (train.c): @order, the buckets
 * as backward finishes them, before its first segment is queued
 */
static int last_begin(void *arg, const uint64_t *order, uint64_t n)
{
	struct gpo_comm *c = arg;
	uint64_t j;

	if (n != c->nbk || c->na || c->seg)
		return gpo__err(-EINVAL, "the segments' %llu buckets: %llu expected, or a reduction under way",
				(unsigned long long)n,
				(unsigned long long)c->nbk);
	for (j = 0; j < n; j++)
		if (order[j] >= n)
			return gpo__err(-EINVAL, "bucket %llu of %llu",
					(unsigned long long)order[j],
					(unsigned long long)n);
	memcpy(c->ord, order, n * sizeof(*order));
	c->seg = 1;
	c->bwd_open = 1;
	c->last_pending = 1;
	return 0;
}

/*
 * ...and after each segment, submitted: the first @ready buckets of the
 * order are final on the device. While it computes, the host's part of
 * the buckets before (their sums, their all-gathers' waits); then, the
 * segment done, its buckets read back and their collectives posted, to
 * move in the progress thread while the next segment computes.
 */
static int last_ready(void *arg, uint64_t ready)
{
	struct gpo_comm *c = arg;
	struct gpo_device *dev = c->dev;
	uint32_t K = c->hi - c->lo;
	uint64_t t0, j, e, b0, b1;
	int ret;

	if (!c->seg || ready < c->nread || ready > c->nbk)
		return gpo__err(-EINVAL, "%llu buckets ready: not after the %llu before, or more than %llu",
				(unsigned long long)ready,
				(unsigned long long)c->nread,
				(unsigned long long)c->nbk);
	ret = comm_enter(c);
	t0 = gpo__now_ns();
	while (!ret && c->nc < c->nbd) {
		ret = stage_c(c, c->nc);
		if (!ret)
			c->nc++;
	}
	while (!ret && c->nbd < c->na) {
		ret = c->deterministic ? stage_b(c, c->nbd) : 0;
		if (!ret)
			c->nbd++;
	}
	c->st.comm_ns += gpo__now_ns() - t0;
	comm_leave(c, ret);
	if (ret)
		return ret;
	/* the end of the segment: the device's time, not communication */
	pthread_mutex_lock(&dev->lock);
	ret = dev->ops->wait(dev, NULL);
	pthread_mutex_unlock(&dev->lock);
	if (!ret)
		ret = comm_enter(c);
	if (ret)
		return ret;
	t0 = gpo__now_ns();
	/* its buckets, in runs of neighbours */
	for (j = c->nread; !ret && j < ready; j = e) {
		for (e = j + 1; e < ready && c->ord[e] == c->ord[e - 1] + 1; e++)
			;
		b0 = c->ord[j] * c->bucket;
		b1 = c->ord[e - 1] * c->bucket + bucket_len(c, c->ord[e - 1]);
		ret = read_grad(c, c->shard + (uint64_t)(K - 1) * c->total + b0,
				b0, b1 - b0);
	}
	if (!ret) {
		c->nread = ready;
		c->seg_more = ready < c->nbk;
		ret = pipe_run(c, ready);
	}
	c->st.segments++;
	c->st.comm_ns += gpo__now_ns() - t0;
	comm_leave(c, ret);
	return ret;
}

/* ---- ZeRO-1 ---------------------------------------------------------------- */

/* every rank's range of @full, from each owner to all (collective) */
static int zero_gather(struct gpo_comm *c, float *full)
{
	uint64_t b0, len;
	MPI_Request r;
	int q, ret = 0;

	/* bucket by bucket: MPI's counts are ints */
	for (b0 = 0; !ret && b0 < c->total; b0 += c->bucket) {
		len = c->total - b0 < c->bucket ? c->total - b0 : c->bucket;
		for (q = 0; q < c->size; q++) {
			c->gcnt[0][q] = (int)(slice_lo(c, b0, len, q + 1) -
					      slice_lo(c, b0, len, q));
			c->gdsp[0][q] = (int)slice_lo(c, b0, len, q);
		}
		ret = mpi_err(MPI_Iallgatherv(MPI_IN_PLACE, 0,
					      MPI_DATATYPE_NULL, full + b0,
					      c->gcnt[0], c->gdsp[0], MPI_FLOAT,
					      c->comm, &r), "MPI_Iallgatherv");
		if (!ret)
			ret = wait_req(c, &r, "the ZeRO-1 all-gather");
	}
	return ret;
}

/* elements [@from, @from + @n) of @b to or from @host + @from */
static int flat_io(struct gpo_comm *c, const struct dev_buf *b, float *host,
		   uint64_t from, uint64_t n, int writing)
{
	struct gpo_device *dev = c->dev;
	int ret;

	if (!n)
		return 0;
	pthread_mutex_lock(&dev->lock);
	ret = writing ? dev->ops->write(dev, b, from * 4, host + from, n * 4) :
			dev->ops->read(dev, b, from * 4, host + from, n * 4);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/*
 * The shard optimizer: the model's kind and hyperparameters, one tensor
 * of this rank's range, its param and grad views of the model
 * optimizer's (so its steps update the model's parameters in place), its
 * state copied from the model's slots (a restore's too, when attached
 * after it), which are then freed: this rank keeps 1/N of the state.
 */
static int zero_setup(struct gpo_comm *c)
{
	struct gpo_optim *opt = c->opt, *z;
	struct gpo_device *dev = c->dev;
	uint64_t shape[1], i;
	int s, ns, ret, had[SL_COUNT];
	float *keep;
	char *hp;

	for (s = 0; s < SL_COUNT; s++)
		if (opt->slot[s].mem && opt->slot_dtype[s] != GPO_F32)
			return gpo__err(-ENOSYS, "zero=1: optimizer state in %s: f32 only yet",
					gpo_dtype_name(opt->slot_dtype[s]));
	if (opt->param_dtype != GPO_F32)
		return gpo__err(-ENOSYS, "zero=1: parameters in %s: f32 only yet",
				gpo_dtype_name(opt->param_dtype));
	if (opt->ngroups != 1 || opt->sched || opt->kind == GPO_LAMB)
		return gpo__err(-ENOSYS, "zero=1: only one parameter group, no schedule, and not lamb (its per-tensor trust ratio)");
	if (opt->ext[0])
		return gpo__err(-EINVAL, "zero=1: the optimizer's parameters are a bound buffer");
	/* a range's start must be a legal offset of a view */
	c->zalign = (dev->mem_align > 256 ? dev->mem_align : 256) / 4;
	c->zlo = zstart(c, c->rank);
	c->zn = zstart(c, c->rank + 1) - c->zlo;
	if (!c->zn)
		return gpo__err(-EINVAL, "zero=1: rank %d owns no elements (%llu elements for %d ranks)",
				c->rank, (unsigned long long)c->total, c->size);
	hp = malloc(8192);
	if (!hp)
		return gpo__err(-ENOMEM, "out of memory");
	ret = gpo_optim_describe(opt, 0, hp, 8192);
	if (ret >= 0 && (strstr(hp, "\nclip_norm=") &&
			 !strstr(hp, "\nclip_norm=0\n")))
		ret = gpo__err(-ENOSYS, "zero=1: clip_norm needs the global norm of all ranks' slices: not yet");
	if (ret >= 0 && ((strstr(hp, "\ngrad_scale=") &&
			  !strstr(hp, "\ngrad_scale=1\n")) ||
			 (strstr(hp, "\ncheck_finite=") &&
			  !strstr(hp, "\ncheck_finite=0\n"))))
		ret = gpo__err(-ENOSYS, "zero=1: grad_scale and check_finite need all ranks' verdict: not yet");
	if (ret >= 0)
		ret = gpo_host_alloc(dev, c->total * 4, (void **)&c->full);
	if (!ret)
		ret = gpo_optim_new(dev, opt->kind, &c->zopt);
	if (!ret)
		ret = gpo_optim_configure(c->zopt, 0, hp);
	free(hp);
	if (ret)
		return ret;
	z = c->zopt;
	shape[0] = c->zn;
	ret = gpo_optim_add_tensor(z, "zero1.shard", 1, shape, 0);
	if (ret < 0)
		return ret;
	/* zn is a multiple of 4 (or runs to the padded end): no padding */
	if (z->total != c->zn)
		return gpo__err(-EINVAL, "zero=1: a shard of %llu elements is laid out in %llu",
				(unsigned long long)c->zn,
				(unsigned long long)z->total);
	z->ext[0] = opt->param.mem;
	z->ext_off[0] = opt->param.off + c->zlo * 4;
	z->ext[1] = opt->grad.mem;
	z->ext_off[1] = opt->grad.off + c->zlo * 4;
	ret = gpo_optim_set_step(z, opt->step);
	if (ret)
		return ret;
	/*
	 * The model's state through the host, its slots freed before the
	 * shard's are made: the device never holds both
	 */
	for (s = 0, ns = 0; s < SL_COUNT; s++)
		ns += opt->slot[s].mem != NULL;
	keep = malloc((uint64_t)ns * c->total * 4 + 4);
	if (!keep)
		return gpo__err(-ENOMEM, "out of memory");
	for (s = 0, i = 0; !ret && s < SL_COUNT; s++) {
		had[s] = opt->slot[s].mem != NULL;
		if (had[s])
			ret = flat_io(c, &opt->slot[s], keep + (i++) * c->total,
				      0, c->total, 0);
	}
	if (!ret)
		ret = gpo__optim_state_elsewhere(opt, 1);
	if (ret) {
		free(keep);
		return ret;
	}
	for (s = 0, i = 0; !ret && s < SL_COUNT; s++)
		if (had[s])
			ret = gpo_optim_write(z, gpo__optim_slot_names[s], NULL,
					      keep + (i++) * c->total + c->zlo,
					      c->zn * 4);
	if (ret) {
		/* the model's optimizer gets its state back */
		int err = gpo__optim_state_elsewhere(opt, 0);

		opt->state_elsewhere = 0;
		for (s = 0, i = 0; !err && s < SL_COUNT; s++)
			if (had[s] && opt->slot[s].mem)
				err = flat_io(c, &opt->slot[s],
					      keep + (i++) * c->total, 0,
					      c->total, 1);
		free(keep);
		return ret;
	}
	free(keep);
	/* (writing momentum marks it started: as the model's says) */
	z->groups[0].momentum_started = opt->groups[0].momentum_started;
	return 0;
}

/* ZeRO-1's step: this rank's range in place, then every rank's */
static int zero_step(void *arg, struct gpo_step_info *si)
{
	struct gpo_comm *c = arg;
	uint64_t zhi = c->zlo + c->zn;
	int ret;

	/* (nothing is in flight after a reduction: for the calls' order) */
	ret = comm_enter(c);
	if (!ret && c->state_out) {
		/* the slots a save needed go again */
		ret = gpo__optim_state_elsewhere(c->opt, 1);
		if (!ret)
			c->state_out = 0;
	}
	if (!ret)
		ret = gpo_optim_step(c->zopt, si);
	if (!ret)
		ret = flat_io(c, &c->opt->param, c->full, c->zlo, c->zn, 0);
	if (!ret)
		ret = zero_gather(c, c->full);
	if (!ret)
		ret = flat_io(c, &c->opt->param, c->full, 0, c->zlo, 1);
	if (!ret)
		ret = flat_io(c, &c->opt->param, c->full, zhi, c->total - zhi,
			      1);
	if (!ret)
		ret = gpo_optim_set_step(c->opt, gpo_optim_steps_done(c->zopt));
	comm_leave(c, ret);
	return ret;
}

int gpo_comm_sync_state(struct gpo_comm *c)
{
	struct gpo_optim *z;
	int s, ret;

	if (!c)
		return gpo__err(-EINVAL, "gpo_comm_sync_state: NULL argument");
	if (!c->zopt)
		return 0;
	z = c->zopt;
	ret = comm_enter(c);
	/* the model's slots, back for the save until the next step */
	if (!ret)
		ret = gpo__optim_state_elsewhere(c->opt, 0);
	if (ret) {
		comm_leave(c, ret);
		return ret;
	}
	c->state_out = 1;
	for (s = 0; !ret && s < SL_COUNT; s++) {
		if (!z->slot[s].mem)
			continue;
		if (!c->opt->slot[s].mem) {
			ret = gpo__err(-EIO, "zero=1: the model's optimizer has no %s",
				       gpo__optim_slot_names[s]);
			break;
		}
		ret = gpo_optim_read(z, gpo__optim_slot_names[s], NULL,
				     c->full + c->zlo, c->zn * 4);
		if (!ret)
			ret = zero_gather(c, c->full);
		if (!ret)
			ret = flat_io(c, &c->opt->slot[s], c->full, 0, c->total,
				      1);
	}
	c->opt->groups[0].momentum_started = z->groups[0].momentum_started;
	comm_leave(c, ret);
	return ret;
}

int gpo_comm_optim_attach(struct gpo_comm *c, struct gpo_optim *opt)
{
	uint32_t K;
	uint64_t per, j;
	int ret, i;

	if (!c || !opt)
		return gpo__err(-EINVAL, "gpo_comm_optim_attach: NULL argument");
	if (c->opt)
		return gpo__err(-EINVAL, "the communicator is attached already");
	if (opt->grad_dtype != GPO_F32)
		return gpo__err(-ENOSYS, "data-parallel steps with %s gradients are not written yet (the reduction sums f32 ones)",
				gpo_dtype_name(opt->grad_dtype));
	if (opt->ext[1])
		return gpo__err(-EINVAL, "data-parallel steps need the optimizer's own f32 grad buffer");
	if (!opt->ntensors)
		return gpo__err(-EINVAL, "the optimizer has no tensors");
	K = c->hi - c->lo;
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	pthread_mutex_unlock(&opt->dev->lock);
	if (ret)
		return ret;
	per = c->bucket < opt->total ? c->bucket : opt->total;
	/* MPI's counts are ints: a bucket's K shards out, S slices in */
	if (per * K > INT_MAX ||
	    (c->zero ? per : (per + c->size - 1) / c->size) * c->shards >
	    INT_MAX)
		return gpo__err(-EINVAL, "bucket_bytes %llu with %u shards: more than 2^31 elements in one message; take smaller buckets",
				(unsigned long long)c->bucket * 4, c->shards);
	c->opt = opt;
	c->dev = opt->dev;
	c->total = opt->total;
	ret = gpo_host_alloc(c->dev, (uint64_t)K * c->total * 4,
			     (void **)&c->shard);
	if (!ret)
		ret = gpo_host_alloc(c->dev, c->total * 4, (void **)&c->out);
	if (ret)
		goto out_detach;
	c->sloss = calloc(2 * (size_t)c->shards, sizeof(double));
	for (i = 0; i < NBUF; i++) {
		/* K shards of a bucket out; S shards of a slice in */
		c->send[i] = malloc(per * K * 4 + 4);
		c->recv[i] = malloc((c->zero ? per :
				     (per + c->size - 1) / c->size) *
				    c->shards * 4 + 4);
		if (!c->send[i] || !c->recv[i])
			break;
	}
	if (!c->sloss || i < NBUF) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_detach;
	}
	c->sacc = c->sloss + c->shards;
	c->nbk = (c->total + c->bucket - 1) / c->bucket;
	c->ord = malloc(c->nbk * sizeof(*c->ord));
	if (!c->ord) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_detach;
	}
	for (j = 0; j < c->nbk; j++)
		c->ord[j] = j;
	if (c->zero) {
		ret = zero_setup(c);
		if (ret)
			goto out_detach;
	}
	ret = rounds_setup(c);
	if (ret)
		goto out_detach;
	thread_start(c);
	return 0;

out_detach:
	detach(c);
	return ret;
}

int gpo_comm_shard_done(struct gpo_comm *c, uint32_t shard)
{
	if (!c || !c->opt)
		return gpo__err(-EINVAL, "gpo_comm_shard_done: no optimizer attached");
	if (shard < c->lo || shard >= c->hi)
		return gpo__err(-EINVAL, "shard %u is not this rank's (%u..%u)",
				shard, c->lo, c->hi - 1);
	return shard_done(c, shard, 0, 0);
}

int gpo_comm_reduce(struct gpo_comm *c)
{
	double l, a;

	if (!c || !c->opt)
		return gpo__err(-EINVAL, "gpo_comm_reduce: no optimizer attached");
	return reduce(c, &l, &a);
}

int gpo_comm_shards(const struct gpo_comm *c, uint32_t *shards, uint32_t *lo,
		    uint32_t *hi)
{
	if (!c || !shards || !lo || !hi)
		return gpo__err(-EINVAL, "gpo_comm_shards: NULL argument");
	*shards = c->shards;
	*lo = c->lo;
	*hi = c->hi;
	return 0;
}

int gpo_comm_train_attach(struct gpo_comm *c, struct gpo_train *t)
{
	struct train_shards sh = { 0 };
	int ret;

	if (!c || !t)
		return gpo__err(-EINVAL, "gpo_comm_train_attach: NULL argument");
	ret = gpo_comm_optim_attach(c, gpo__train_optim(t));
	if (ret)
		return ret;
	sh.shards = c->shards;
	sh.lo = c->lo;
	sh.hi = c->hi;
	sh.shard_done = shard_done;
	sh.reduce = reduce;
	sh.step = c->zero ? zero_step : NULL;
	if (c->overlap) {
		sh.bucket_bytes = c->bucket * 4;
		sh.last_begin = last_begin;
		sh.last_ready = last_ready;
	}
	sh.arg = c;
	ret = gpo__train_set_shards(t, &sh);
	if (ret)
		detach(c);
	return ret;
}
