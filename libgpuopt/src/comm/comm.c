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
 *
 * The sum of element i is ((g_0[i] + g_1[i]) + ...) + g_{S-1}[i], then
 * / S, in f32, whatever the rank count: shard k is always the same rows of
 * the batch and its gradient does not depend on who computed it, so the
 * bits do not either. deterministic=0 instead sums a rank's own shards and
 * lets MPI_Iallreduce(MPI_SUM) add the ranks' sums.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <gpuopt/comm.h>
#include "core/gpuopt_i.h"
#include "optim/optim_i.h"
#include "train/train_i.h"

#define NBUF	2

struct gpo_comm {
	MPI_Comm comm;
	int rank, size, local_rank;
	uint32_t shards, lo, hi;	/* this rank's shards [lo, hi) */
	int deterministic;
	uint64_t bucket;		/* elements */
	uint32_t max_ranks;

	/* attached: */
	struct gpo_optim *opt;
	struct gpo_device *dev;
	uint64_t total;			/* elements of the flat gradient */
	float *shard;			/* pinned: (hi - lo) x total */
	float *out;			/* pinned: the reduced gradient */
	float *send[NBUF], *recv[NBUF];
	double *sloss, *sacc;		/* per shard, all S */
	uint32_t last_pending;		/* the last shard awaits its copy */
	int *cnt, *dsp, *rcnt, *rdsp;	/* size each */
	struct gpo_comm_stats st;
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
		if (!strcmp(key, "deterministic")) {
			if (gpo__parse_bool(val, &b))
				return gpo__err(-EINVAL, "deterministic '%s': 0 or 1",
						val);
			c->deterministic = b;
			continue;
		}
		if (strcmp(key, "shards") && strcmp(key, "bucket_bytes") &&
		    strcmp(key, "max_ranks"))
			return gpo__err(-EINVAL, "unknown comm setting '%s' (shards, deterministic, bucket_bytes, max_ranks)",
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
	int init = 0, ret;

	if (!out)
		return gpo__err(-EINVAL, "gpo_comm_new: NULL argument");
	MPI_Initialized(&init);
	if (!init)
		return gpo__err(-EINVAL, "gpo_comm_new: MPI is not initialised (MPI_Init)");
	c = calloc(1, sizeof(*c));
	if (!c)
		return gpo__err(-ENOMEM, "out of memory");
	c->deterministic = 1;
	c->bucket = (4u << 20) / 4;
	c->max_ranks = 1024;
	c->comm = MPI_COMM_NULL;
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
	c->cnt = calloc(4 * (size_t)c->size, sizeof(int));
	if (!c->cnt) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	c->dsp = c->cnt + c->size;
	c->rcnt = c->dsp + c->size;
	c->rdsp = c->rcnt + c->size;
	*out = c;
	return 0;

out_free:
	gpo_comm_free(c);
	return ret;
}

static void detach(struct gpo_comm *c)
{
	int i;

	if (c->dev) {
		gpo_host_free(c->dev, c->shard);
		gpo_host_free(c->dev, c->out);
	}
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
	free(c->cnt);
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

/* the bucket [b0, b0 + len)'s slice of rank q */
static uint64_t slice_lo(const struct gpo_comm *c, uint64_t len, int q)
{
	return len * (uint64_t)q / (uint64_t)c->size;
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

static int shard_done(void *arg, uint32_t shard, double loss, double acc)
{
	struct gpo_comm *c = arg;
	uint32_t k = shard - c->lo;

	c->sloss[shard] = loss;
	c->sacc[shard] = acc;
	if (shard + 1 == c->hi) {
		/* read bucket by bucket in the reduction's first stage */
		c->last_pending = 1;
		return 0;
	}
	return read_grad(c, c->shard + (uint64_t)k * c->total, 0, c->total);
}

static int wait_req(struct gpo_comm *c, MPI_Request *r, const char *what)
{
	uint64_t t0 = gpo__now_ns();
	int rc = MPI_Wait(r, MPI_STATUS_IGNORE);

	c->st.wait_ns += gpo__now_ns() - t0;
	return mpi_err(rc, what);
}

/* stage A of bucket @b (buffer @i): the last shard's copy, pack, post */
static int stage_a(struct gpo_comm *c, uint64_t b0, uint64_t len, int i,
		   MPI_Request *req)
{
	uint32_t K = c->hi - c->lo, k;
	uint64_t o = 0;
	float *send = c->send[i];
	int q, ret;

	if (c->last_pending) {
		ret = read_grad(c, c->shard + (uint64_t)(K - 1) * c->total + b0,
				b0, len);
		if (ret)
			return ret;
	}
	if (!c->deterministic) {
		/* this rank's shards, summed in order, into out */
		float *dst = c->out + b0;
		uint64_t j;

		memcpy(dst, c->shard + b0, len * 4);
		for (k = 1; k < K; k++) {
			const float *g = c->shard + (uint64_t)k * c->total + b0;

			for (j = 0; j < len; j++)
				dst[j] += g[j];
		}
		return mpi_err(MPI_Iallreduce(MPI_IN_PLACE, dst, (int)len,
					      MPI_FLOAT, MPI_SUM, c->comm,
					      req), "MPI_Iallreduce");
	}
	/* to rank q: its slice of each of my K shards, shard by shard */
	for (q = 0; q < c->size; q++) {
		uint64_t lo = slice_lo(c, len, q), n = slice_lo(c, len, q + 1) - lo;

		c->cnt[q] = (int)(n * K);
		c->dsp[q] = (int)o;
		for (k = 0; k < K; k++, o += n)
			memcpy(send + o, c->shard + (uint64_t)k * c->total +
			       b0 + lo, n * 4);
	}
	/* from rank p: my slice of its K shards, which are shards pK.. */
	{
		uint64_t lo = slice_lo(c, len, c->rank);
		uint64_t n = slice_lo(c, len, c->rank + 1) - lo;

		for (q = 0; q < c->size; q++) {
			c->rcnt[q] = (int)(n * K);
			c->rdsp[q] = (int)(n * K * q);
		}
	}
	return mpi_err(MPI_Ialltoallv(send, c->cnt, c->dsp, MPI_FLOAT,
				      c->recv[i], c->rcnt, c->rdsp, MPI_FLOAT,
				      c->comm, req), "MPI_Ialltoallv");
}

/* stage B: the ordered sum of my slice, then post the all-gather */
static int stage_b(struct gpo_comm *c, uint64_t b0, uint64_t len, int i,
		   MPI_Request *req)
{
	uint64_t lo = slice_lo(c, len, c->rank);
	uint64_t n = slice_lo(c, len, c->rank + 1) - lo, j;
	float *dst = c->out + b0 + lo, *r = c->recv[i];
	float inv = (float)c->shards;
	uint32_t s;
	int ret, q;

	ret = wait_req(c, req, "MPI_Ialltoallv");
	if (ret || !c->deterministic)
		return ret;
	/* recv holds shards 0..S-1 in order, n elements each */
	memcpy(dst, r, n * 4);
	for (s = 1; s < c->shards; s++) {
		const float *g = r + (uint64_t)s * n;

		for (j = 0; j < n; j++)
			dst[j] += g[j];
	}
	for (j = 0; j < n; j++)
		dst[j] /= inv;
	for (q = 0; q < c->size; q++) {
		c->rcnt[q] = (int)(slice_lo(c, len, q + 1) - slice_lo(c, len, q));
		c->rdsp[q] = (int)slice_lo(c, len, q);
	}
	return mpi_err(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
				       c->out + b0, c->rcnt, c->rdsp, MPI_FLOAT,
				       c->comm, req), "MPI_Iallgatherv");
}

/* stage C: wait, and the bucket to the device */
static int stage_c(struct gpo_comm *c, uint64_t b0, uint64_t len,
		   MPI_Request *req)
{
	struct gpo_device *dev = c->dev;
	uint64_t j;
	int ret;

	ret = wait_req(c, req, c->deterministic ? "MPI_Iallgatherv" :
						  "MPI_Iallreduce");
	if (ret)
		return ret;
	if (!c->deterministic)
		for (j = 0; j < len; j++)
			c->out[b0 + j] /= (float)c->shards;
	pthread_mutex_lock(&dev->lock);
	ret = dev->ops->write(dev, &c->opt->grad, b0 * 4, c->out + b0, len * 4);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static int reduce_loss(struct gpo_comm *c, double *loss, double *acc)
{
	uint32_t K = c->hi - c->lo, s;
	double l = 0, a = 0;
	int ret;

	ret = mpi_err(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
				    c->sloss, (int)K, MPI_DOUBLE, c->comm),
		      "MPI_Allgather");
	if (!ret)
		ret = mpi_err(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
					    c->sacc, (int)K, MPI_DOUBLE,
					    c->comm), "MPI_Allgather");
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

static int reduce(void *arg, double *loss, double *acc)
{
	struct gpo_comm *c = arg;
	MPI_Request ra[NBUF], rg[NBUF];
	uint64_t nb = (c->total + c->bucket - 1) / c->bucket, j, t0;
	int ret = 0, posted_a = 0, posted_g = 0;

	t0 = gpo__now_ns();
	/* step j: A(j), B(j - 1), C(j - 2) */
	for (j = 0; !ret && j < nb + 2; j++) {
		if (j < nb) {
			uint64_t b0 = j * c->bucket;
			uint64_t len = c->total - b0 < c->bucket ?
				       c->total - b0 : c->bucket;

			ret = stage_a(c, b0, len, j % NBUF, &ra[j % NBUF]);
			if (ret)
				break;
			posted_a++;
		}
		if (j >= 1 && j - 1 < nb) {
			uint64_t b0 = (j - 1) * c->bucket;
			uint64_t len = c->total - b0 < c->bucket ?
				       c->total - b0 : c->bucket;
			int i = (j - 1) % NBUF;

			if (c->deterministic) {
				posted_a--;
				ret = stage_b(c, b0, len, i, &ra[i]);
				if (ret)
					break;
				rg[i] = MPI_REQUEST_NULL;
				rg[i] = ra[i];
				ra[i] = MPI_REQUEST_NULL;
			} else {
				posted_a--;
				rg[i] = ra[i];
			}
			posted_g++;
		}
		if (j >= 2) {
			uint64_t b0 = (j - 2) * c->bucket;
			uint64_t len = c->total - b0 < c->bucket ?
				       c->total - b0 : c->bucket;

			posted_g--;
			ret = stage_c(c, b0, len, &rg[(j - 2) % NBUF]);
		}
	}
	c->last_pending = 0;
	if (ret) {
		/* a failed rank's peers would wait forever: end the job */
		fprintf(stderr, "gpuopt rank %d: the gradient reduction failed: %s\n",
			c->rank, gpo_errmsg());
		MPI_Abort(c->comm, 1);
	}
	(void)posted_a;
	(void)posted_g;
	ret = reduce_loss(c, loss, acc);
	c->st.reduce_ns += gpo__now_ns() - t0;
	c->st.reductions++;
	c->st.bytes += c->total * 4;
	return ret;
}

int gpo_comm_optim_attach(struct gpo_comm *c, struct gpo_optim *opt)
{
	uint32_t K;
	uint64_t per;
	int ret, i;

	if (!c || !opt)
		return gpo__err(-EINVAL, "gpo_comm_optim_attach: NULL argument");
	if (c->opt)
		return gpo__err(-EINVAL, "the communicator is attached already");
	if (opt->grad_dtype != GPO_F32 || opt->ext[1])
		return gpo__err(-EINVAL, "data-parallel steps need the optimizer's own f32 grad buffer");
	if (!opt->ntensors)
		return gpo__err(-EINVAL, "the optimizer has no tensors");
	K = c->hi - c->lo;
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	pthread_mutex_unlock(&opt->dev->lock);
	if (ret)
		return ret;
	c->opt = opt;
	c->dev = opt->dev;
	c->total = opt->total;
	per = c->bucket < c->total ? c->bucket : c->total;
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
		c->recv[i] = malloc(((per + c->size - 1) / c->size) * c->shards *
				    4 + 4);
		if (!c->send[i] || !c->recv[i])
			break;
	}
	if (!c->sloss || i < NBUF) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_detach;
	}
	c->sacc = c->sloss + c->shards;
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
	sh.arg = c;
	ret = gpo__train_set_shards(t, &sh);
	if (ret)
		detach(c);
	return ret;
}
