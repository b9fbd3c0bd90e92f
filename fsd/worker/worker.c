// SPDX-License-Identifier: MIT
/*
 * worker.c - gpuoptfs-worker: one job's device work, as the job's owner
 *
 * gpuoptfs starts one per job with the fds of proto.h, already running
 * as the job's owner with no_new_privs and its limits set. It answers one
 * command at a time until the socket closes. Whatever a driver does here
 * (abort, hang, run out of memory) ends this process only: the daemon
 * sees it and fails this job alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "worker_i.h"
#include "core/dtype_i.h"
#ifdef GPO_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <gpuopt/comm.h>
#endif

/*
 * proto.h's fds; gpuoptfs-worker-mpi's rank 0 gets them over a socket
 * once MPI holds fds of its own (mpi_connect())
 */
static int fd_sock = WP_FD_SOCK, fd_shm = WP_FD_SHM, fd_ckpt = WP_FD_CKPT;

int wk_err(struct wk *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
	va_end(ap);
	return err;
}

int wk_lib_err(struct wk *w, int err)
{
	const char *m = gpo_errmsg();

	return wk_err(w, err, "%s", m && *m ? m : strerror(-err));
}

void wk_step_info(struct wk *w, const struct gpo_step_info *si,
		  struct wp_stat *st)
{
	st->step = si->step;
	st->skipped_total = si->skipped_total;
	st->skipped = si->skipped;
	st->lr = si->lr;
	st->grad_norm = si->grad_norm;
	st->loss_scale = si->loss_scale;
}

/*
 * GPUOPTFS_WORKER_FAULT=KIND[:JOB] (the daemon passes its own environment
 * on): the first step of job JOB (of every job without one) aborts as a
 * driver would, hangs, exits 3, or allocates until its memory limit stops
 * it. For the fault-injection tests; documented in gpuoptfs(8).
 */
static unsigned int fault_parse(const char *job)
{
	static const struct { const char *name; unsigned int bit; } kinds[] = {
		{ "abort-on-launch", FAULT_ABORT }, { "hang", FAULT_HANG },
		{ "exit", FAULT_EXIT }, { "oom", FAULT_OOM },
	};
	const char *v = getenv("GPUOPTFS_WORKER_FAULT"), *colon;
	size_t i, n;

	if (!v || !*v)
		return 0;
	colon = strchr(v, ':');
	n = colon ? (size_t)(colon - v) : strlen(v);
	if (colon && strcmp(colon + 1, job))
		return 0;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i].name) == n && !strncmp(v, kinds[i].name, n))
			return kinds[i].bit;
	return 0;
}

void wk_fault(struct wk *w)
{
	size_t total = 0;
	char *p;

	if (w->fault & FAULT_ABORT) {
		fprintf(stderr, "gpuoptfs-worker: injected fault: abort in a kernel launch\n");
		abort();
	}
	if (w->fault & FAULT_EXIT) {
		fprintf(stderr, "gpuoptfs-worker: injected fault: exit 3\n");
		exit(3);
	}
	if (w->fault & FAULT_HANG) {
		fprintf(stderr, "gpuoptfs-worker: injected fault: hang\n");
		for (;;)
			pause();
	}
	if (w->fault & FAULT_OOM) {
		/* touched, so it counts as an out-of-control driver's would */
		while ((p = malloc(1u << 20))) {
			memset(p, 1, 1u << 20);
			total += 1u << 20;
		}
		fprintf(stderr, "gpuoptfs-worker: out of memory after %zu MiB\n",
			total >> 20);
		abort();
	}
}

/* The daemon's uid is root only for root's own jobs: keep no capability. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
}

/* ---- shared memory ------------------------------------------------------- */

static int shm_map(struct wk *w, uint64_t size)
{
	void *p;

	if (size == w->map_size)
		return 0;
	if (w->rank) {
		/* the other ranks' copy of rank 0's shm (mpi_share()) */
		p = realloc(w->map, size ? size : 1);
		if (!p)
			return wk_err(w, -ENOMEM, "cannot hold %llu bytes of rank 0's shared memory",
				      (unsigned long long)size);
		w->map = p;
		w->map_size = size;
		return 0;
	}
	if (w->map)
		munmap(w->map, w->map_size);
	w->map = NULL;
	w->map_size = 0;
	if (!size)
		return 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_shm, 0);
	if (p == MAP_FAILED)
		return wk_err(w, -errno, "cannot map %llu bytes of shared memory: %s",
			      (unsigned long long)size, strerror(errno));
	w->map = p;
	w->map_size = size;
	return 0;
}

/* the command's view of shm: from @off on (proto.h: wp_req.off) */
static int shm_view(struct wk *w, uint64_t off)
{
	if (off > w->map_size)
		return wk_err(w, -EPROTO,
			      "the command's offset %llu is past the shared %llu bytes",
			      (unsigned long long)off,
			      (unsigned long long)w->map_size);
	w->shm = w->map ? (char *)w->map + off : NULL;
	w->shm_size = w->map_size - off;
	return 0;
}

/* does [0, @bytes) fit the mapping? */
static int shm_fits(struct wk *w, uint64_t bytes)
{
	if (bytes > w->shm_size)
		return wk_err(w, -EPROTO,
			      "the command's %llu bytes exceed the shared %llu",
			      (unsigned long long)bytes,
			      (unsigned long long)w->shm_size);
	return 0;
}

/* ---- commands ------------------------------------------------------------ */

static void opt_free(struct wk *w)
{
	if (w->mstate && w->model && w->model->release)
		w->model->release(w->mstate);
	w->mstate = NULL;
	if (w->opt)
		gpo_optim_attach_sched(w->opt, NULL);
	gpo_optim_free(w->opt);
	gpo_sched_free(w->sched);
	w->opt = NULL;
	w->sched = NULL;
}

static int sched_make(struct wk *w, struct gpo_optim *opt, const char *name,
		      const char *text, struct gpo_sched **out)
{
	struct gpo_sched *s;
	int ret;

	*out = NULL;
	if (!*name)
		return 0;
	ret = gpo_sched_new(name, &s);
	if (ret)
		return wk_lib_err(w, ret);
	ret = gpo_sched_configure(s, text);
	if (!ret)
		ret = gpo_optim_attach_sched(opt, s);
	if (ret) {
		wk_lib_err(w, ret);
		gpo_sched_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

/* text of @len bytes at @p, as a string; NULL when out of memory */
static char *text_of(const char *p, uint32_t len)
{
	char *s = malloc(len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

/*
 * The index in our context of the device @d describes (proto.h's struct
 * wp_dev), or -1: the same backend, and the same uuid, or where the
 * daemon saw none, the same name and ordinal among the present ones.
 */
static int dev_find(struct wk *w, const struct wp_dev *d)
{
	struct gpo_device_info info;
	uint32_t ordinal = 0;
	int i, n = gpo_device_count(w->ctx);

	for (i = 0; i < n; i++) {
		if (gpo_device_info(w->ctx, i, &info) || !info.present ||
		    strncmp(info.backend, d->backend, sizeof(d->backend)))
			continue;
		if (d->uuid[0]) {
			if (!strncmp(info.uuid, d->uuid, sizeof(d->uuid)))
				return i;
			continue;
		}
		if (strncmp(info.name, d->name, sizeof(d->name)))
			continue;
		if (ordinal++ == d->ordinal)
			return i;
	}
	return -1;
}

/* a line naming @d for messages */
static const char *dev_words(const struct wp_dev *d, char *buf, size_t len)
{
	if (d->uuid[0])
		snprintf(buf, len, "%.16s device with uuid %.40s", d->backend,
			 d->uuid);
	else
		snprintf(buf, len, "%.16s device '%.128s' #%u", d->backend,
			 d->name, d->ordinal);
	return buf;
}

/*
 * Open the device the daemon chose, leaving the ones it disabled or lost
 * disabled here too (the daemon's devices/<i>/enabled holds in workers).
 */
static int dev_open(struct wk *w, const struct wp_build *b,
		    const struct wp_dev *off, const struct wp_dev *d,
		    struct gpo_device **out)
{
	char words[256];
	uint32_t k;
	int i;

	for (k = 0; k < b->ndisabled; k++) {
		i = dev_find(w, &off[k]);
		if (i >= 0)
			gpo_device_enable(w->ctx, i, 0);
	}
	i = dev_find(w, d);
	if (i < 0)
		return wk_err(w, -ENODEV, "rank %d: the worker finds no %s",
			      w->rank, dev_words(d, words, sizeof(words)));
	i = gpo_device_get(w->ctx, i, out);
	return i ? wk_lib_err(w, i) : 0;
}

/* the tensors a model made are the ones the daemon lists */
static int same_tensors(struct wk *w, struct gpo_optim *opt,
			const struct wp_tensor *t, uint32_t n)
{
	struct gpo_tensor_info ti;
	uint32_t i;
	int d;

	if (gpo_optim_tensor_count(opt) != (int)n)
		return wk_err(w, -EPROTO, "the model made %d tensors, the daemon expects %u",
			      gpo_optim_tensor_count(opt), n);
	for (i = 0; i < n; i++) {
		if (gpo_optim_tensor_info(opt, i, &ti) ||
		    strcmp(ti.name, t[i].name) || ti.ndim != t[i].ndim)
			return wk_err(w, -EPROTO, "the model's tensor %u is not the daemon's %s",
				      i, t[i].name);
		for (d = 0; d < ti.ndim; d++)
			if (ti.shape[d] != t[i].shape[d])
				return wk_err(w, -EPROTO, "tensor %s: shapes differ",
					      t[i].name);
	}
	return 0;
}

/*
 * The precision mode, before anything allocates the buffers: param and
 * grad in param_dtype, every state slot the kind can keep in state_dtype.
 * The library refuses a mode it has no kernels for (-ENOSYS) when it
 * first allocates or steps.
 */
static int set_dtypes(struct wk *w, struct gpo_optim *opt,
		      const struct wp_build *b)
{
	static const char *const slots[] = {
		"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
		"square_avg", "grad_avg", "sum",
	};
	size_t i;
	int ret;

	if (b->param_dtype < 0 || b->param_dtype >= GPO_DTYPES ||
	    b->state_dtype < 0 || b->state_dtype >= GPO_DTYPES)
		return wk_err(w, -EPROTO, "bad dtypes %d, %d", b->param_dtype,
			      b->state_dtype);
	ret = gpo_optim_set_dtype(opt, "param", b->param_dtype);
	if (!ret)
		ret = gpo_optim_set_dtype(opt, "grad", b->param_dtype);
	/* -ENOENT: a slot this kind never keeps */
	for (i = 0; !ret && i < sizeof(slots) / sizeof(slots[0]); i++) {
		ret = gpo_optim_set_dtype(opt, slots[i], b->state_dtype);
		if (ret == -ENOENT)
			ret = 0;
	}
	return ret ? wk_lib_err(w, ret) : 0;
}

/*
 * The start params, made in f32, as @dt: rounded in place (to nearest,
 * ties to even) for f16 and bf16; the bytes to write
 */
static uint64_t half_params(float *x, uint64_t n, int dt)
{
	uint16_t *h = (uint16_t *)x;
	uint64_t i;

	if (dt != GPO_F16 && dt != GPO_BF16)
		return n * sizeof(float);
	/* h[i] lies at or before x[i]: each is read before it is written */
	for (i = 0; i < n; i++)
		h[i] = dt == GPO_F16 ? gpo__f32_to_f16(x[i]) :
		       gpo__f32_to_bf16(x[i]);
	return n * sizeof(uint16_t);
}

/*
 * The parameters of @opt (@tensor's, or all with NULL: @n) as f32 in @x:
 * f32 ones, the master copy of half ones, or half ones widened (read
 * into the upper half of @x, each widened in place before a later one
 * is overwritten)
 */
static int params_f32(struct gpo_optim *opt, const char *tensor, float *x,
		      uint64_t n)
{
	uint16_t *h = (uint16_t *)x + n;
	int dt = gpo_optim_dtype(opt, "param");
	uint64_t i;
	int ret;

	if (dt == GPO_F32)
		return gpo_optim_read(opt, "param", tensor, x, n * 4);
	if (!gpo_optim_read(opt, "master", tensor, x, n * 4))
		return 0;
	ret = gpo_optim_read(opt, "param", tensor, h, n * 2);
	for (i = 0; !ret && i < n; i++)
		x[i] = dt == GPO_F16 ? gpo__f16_to_f32(h[i]) :
				       gpo__bf16_to_f32(h[i]);
	return ret;
}

/*
 * @n f32 values into @opt's parameters (@tensor's, or all): half ones
 * through their master copy (which rounds them), or rounded in @x
 */
static int params_f32_write(struct gpo_optim *opt, const char *tensor,
			    float *x, uint64_t n)
{
	int dt = gpo_optim_dtype(opt, "param");

	if (dt != GPO_F32 && !gpo_optim_write(opt, "master", tensor, x, n * 4))
		return 0;
	return gpo_optim_write(opt, "param", tensor, x,
			       half_params(x, n, dt));
}

static int cmd_build(struct wk *w, const struct wp_req *rq,
		     struct wp_rep *rp)
{
	const struct wp_build *b = w->shm;
	const struct wp_dev *off, *mine;
	const struct wp_rank_dev *rd;
	const struct model_ops *ops;
	struct gpo_device_info info;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL;
	struct gpo_sched *sched = NULL;
	struct wp_tensor *t = NULL;
	char *hp = NULL, *st = NULL, *mt = NULL;
	void *mstate = NULL;
	uint64_t need, numel = 0, spe = 0, pool_limit;
	const char *tp;
	float *x = NULL;
	uint32_t i;
	int ret, kept;

	/* a communicator serves one model for good (the daemon knows) */
	if (w->attached)
		return wk_err(w, -EBUSY, "the ranks' communicator belongs to the model built first: a new model needs a new worker");
	ret = shm_fits(w, sizeof(*b));
	if (ret)
		return ret;
	need = sizeof(*b) + (uint64_t)b->ndisabled * sizeof(*off) +
	       (uint64_t)b->nrank_devs * sizeof(*rd) +
	       (uint64_t)b->ntensors * sizeof(*t) + b->hp_len +
	       b->sched_len + b->model_len;
	ret = shm_fits(w, need);
	if (ret)
		return ret;
	off = (const struct wp_dev *)(b + 1);
	rd = (const struct wp_rank_dev *)(off + b->ndisabled);
	tp = (const char *)(rd + b->nrank_devs);
	/* each rank on its own device, or all on the job's */
	if (b->nrank_devs && b->nrank_devs != (uint32_t)w->nranks)
		return wk_err(w, -EPROTO, "%u rank devices for %d ranks",
			      b->nrank_devs, w->nranks);
	mine = b->nrank_devs ? &rd[w->rank].device : &b->device;
	pool_limit = b->nrank_devs ? rd[w->rank].pool_limit : b->pool_limit;
	ops = model_ops_find(b->model);
	if (!ops)
		return wk_err(w, -EINVAL, "no model kind '%.32s' in this worker",
			      b->model);
	t = malloc((b->ntensors ? b->ntensors : 1) * sizeof(*t));
	hp = text_of(tp + b->ntensors * sizeof(*t), b->hp_len);
	st = text_of(tp + b->ntensors * sizeof(*t) + b->hp_len, b->sched_len);
	mt = text_of(tp + b->ntensors * sizeof(*t) + b->hp_len + b->sched_len,
		     b->model_len);
	if (!t || !hp || !st || !mt) {
		ret = wk_err(w, -ENOMEM, "out of memory");
		goto out_free;
	}
	memcpy(t, tp, b->ntensors * sizeof(*t));
	for (i = 0; i < b->ntensors; i++) {
		t[i].name[WP_TENSOR_NAME - 1] = '\0';
		if (t[i].ndim < 0 || t[i].ndim > WP_NDIM_MAX) {
			ret = wk_err(w, -EPROTO, "bad tensor description");
			goto out_free;
		}
	}
	ret = dev_open(w, b, off, mine, &dev);
	if (ret)
		goto out_free;
	/* the daemon's pools/<i>/max caps each job's pool on the device */
	ret = gpo_pool_set_limit(dev, pool_limit);
	if (ret) {
		wk_lib_err(w, ret);
		goto out_free;
	}
	ret = gpo_optim_new(dev, b->optimizer, &opt);
	if (ret) {
		wk_lib_err(w, ret);
		goto out_free;
	}
	ret = set_dtypes(w, opt, b);
	if (ret)
		goto out_free;
	/*
	 * a model allocates its buffers as it makes its parameters: the
	 * settings that fix them (master_weights) come first
	 */
	if (ops->setup) {
		ret = gpo_optim_configure(opt, -1, hp);
		if (ret) {
			wk_lib_err(w, ret);
			goto out_free;
		}
	}
	if (ops->setup) {
		ret = ops->setup(w, b, opt, mt, &mstate, &spe);
		if (!ret)
			ret = same_tensors(w, opt, t, b->ntensors);
		if (ret)
			goto out_free;
	}
	for (i = 0; !ops->setup && i < b->ntensors; i++) {
		ret = gpo_optim_add_tensor(opt, t[i].name, t[i].ndim,
					   t[i].shape, 0);
		if (ret < 0) {
			wk_lib_err(w, ret);
			goto out_free;
		}
	}
	ret = gpo_optim_configure(opt, -1, hp);
	if (ret) {
		wk_lib_err(w, ret);
		goto out_free;
	}
	ret = sched_make(w, opt, b->schedule, st, &sched);
	if (ret)
		goto out_free;
	numel = b->numel;
	/* a model that made its own start params keeps them, unless kept */
	if (ops->setup && !((rq->flags & WP_F_KEEP_PARAMS) && w->opt &&
			    w->numel == numel))
		goto built;
	x = malloc(numel ? numel * sizeof(float) : 1);
	if (!x) {
		ret = wk_err(w, -ENOMEM, "out of memory for %llu bytes of params",
			     (unsigned long long)numel * 4);
		goto out_free;
	}
	kept = (rq->flags & WP_F_KEEP_PARAMS) && w->opt && w->numel == numel;
	if (kept) {
		/* half ones through their master copy, where they have one */
		ret = params_f32(w->opt, NULL, x, numel);
		if (!ret)
			ret = params_f32_write(opt, NULL, x, numel);
		if (ret)
			wk_lib_err(w, ret);
	} else {
		ret = ops->init(w, b, x);
		if (!ret)
			ret = gpo_optim_write(opt, "param", NULL, x,
					      half_params(x, numel,
							  b->param_dtype));
		if (ret)
			wk_lib_err(w, ret);
	}
	if (ret)
		goto out_free;
built:
	if (!gpo_device_info(w->ctx, gpo_device_index(dev), &info))
		snprintf(rp->dev_id, sizeof(rp->dev_id), "%s", info.id);
	opt_free(w);
	free(w->t);
	w->dev = dev;
	w->opt = opt;
	w->sched = sched;
	w->model = ops;
	w->mstate = mstate;
	mstate = NULL;
	rp->steps_per_epoch = spe;
	w->t = t;
	w->ntensors = b->ntensors;
	w->numel = numel;
	snprintf(w->schedule, sizeof(w->schedule), "%s", b->schedule);
	opt = NULL;
	sched = NULL;
	t = NULL;
	rp->st.step = gpo_optim_steps_done(w->opt);
	rp->st.loss = NAN;
	rp->st.grad_norm = NAN;
	gpo_optim_get(w->opt, -1, "lr", &rp->st.lr);
out_free:
	if (mstate)
		ops->release(mstate);
	if (opt)
		gpo_optim_attach_sched(opt, NULL);
	gpo_optim_free(opt);
	gpo_sched_free(sched);
	free(x);
	free(t);
	free(hp);
	free(st);
	free(mt);
	return ret;
}

static int cmd_hparams(struct wk *w, const struct wp_req *rq,
		       struct wp_rep *rp)
{
	struct gpo_sched *s;
	char *hp, *st;
	int ret;

	ret = shm_fits(w, rq->bytes);
	if (!ret && rq->arg > rq->bytes)
		ret = wk_err(w, -EPROTO, "bad settings lengths");
	if (ret)
		return ret;
	hp = text_of(w->shm, rq->arg);
	st = text_of((char *)w->shm + rq->arg, rq->bytes - rq->arg);
	if (!hp || !st) {
		ret = wk_err(w, -ENOMEM, "out of memory");
		goto out_free;
	}
	ret = gpo_optim_configure(w->opt, -1, hp);
	if (ret) {
		wk_lib_err(w, ret);
		goto out_free;
	}
	if ((rq->flags & WP_F_RESTART_SCHED) && w->sched) {
		gpo_optim_attach_sched(w->opt, NULL);
		gpo_sched_free(w->sched);
		w->sched = NULL;
		ret = sched_make(w, w->opt, w->schedule, st, &s);
		if (ret)
			goto out_free;
		w->sched = s;
	} else if (w->sched) {
		/* the schedule scales the lr just configured */
		ret = gpo_optim_attach_sched(w->opt, w->sched);
		if (ret)
			wk_lib_err(w, ret);
	}
	gpo_optim_get(w->opt, -1, "lr", &rp->st.lr);
	rp->st.step = gpo_optim_steps_done(w->opt);
out_free:
	free(hp);
	free(st);
	return ret;
}

static int cmd_grad_step(struct wk *w, const struct wp_req *rq,
			 struct wp_rep *rp)
{
	struct gpo_step_info si;
	double loss = NAN;
	int ret;

	ret = shm_fits(w, rq->bytes);
	if (ret)
		return ret;
	wk_fault(w);
	if (rq->flags & WP_F_LOSS) {
		memcpy(&loss, &rq->arg, sizeof(loss));
		gpo_optim_set_metric(w->opt, loss);
	}
	ret = gpo_optim_write(w->opt, "grad", NULL, w->shm, rq->bytes);
	if (!ret)
		ret = gpo_optim_step(w->opt, &si);
	if (ret)
		return wk_lib_err(w, ret);
	wk_step_info(w, &si, &rp->st);
	rp->st.loss = loss;
	return 0;
}

static int cmd_io(struct wk *w, const struct wp_req *rq, int write)
{
	const char *slot = rq->cmd == WP_GRAD_READ ? "grad" : "param";
	const char *tensor = NULL;
	int ret;

	ret = shm_fits(w, rq->bytes);
	if (ret)
		return ret;
	if (rq->cmd != WP_GRAD_READ) {
		if (rq->arg >= w->ntensors)
			return wk_err(w, -ENOENT, "no such tensor");
		tensor = w->t[rq->arg].name;
	}
	/* params/ shows f32 values whatever the parameters' dtype */
	if (tensor && write)
		ret = params_f32_write(w->opt, tensor, w->shm, rq->bytes / 4);
	else if (tensor)
		ret = params_f32(w->opt, tensor, w->shm, rq->bytes / 4);
	else if (write)
		ret = gpo_optim_write(w->opt, slot, tensor, w->shm, rq->bytes);
	else
		ret = gpo_optim_read(w->opt, slot, tensor, w->shm, rq->bytes);
	return ret ? wk_lib_err(w, ret) : 0;
}

/* checkpoints live in the directory the daemon handed over as an fd */
static int ckpt_path(struct wk *w, const char *name, char *buf, size_t len)
{
	struct stat st;

	if (fstat(fd_ckpt, &st) || !S_ISDIR(st.st_mode))
		return wk_err(w, -ENOENT, "the job has no checkpoints directory");
	if (!*name || strchr(name, '/') || name[0] == '.')
		return wk_err(w, -EINVAL, "bad checkpoint name");
	snprintf(buf, len, "/proc/self/fd/%d/%s", fd_ckpt, name);
	return 0;
}

static int cmd_save(struct wk *w, const struct wp_req *rq, struct wp_rep *rp)
{
	char path[160];
	int ret;

#ifdef GPO_HAVE_MPI
	/* ZeRO-1: every rank's state slice, gathered (collective) */
	if (w->zero && w->attached) {
		ret = gpo_comm_sync_state(w->comm);
		if (ret)
			return wk_lib_err(w, ret);
	}
	if (w->rank)
		return 0;
#endif
	ret = ckpt_path(w, rq->name, path, sizeof(path));
	if (ret)
		return ret;
	ret = gpo_optim_save(w->opt, path, 0);
	if (ret)
		return wk_lib_err(w, ret);
	rp->st.step = gpo_optim_steps_done(w->opt);
	return 0;
}

/*
 * The schedule line a checkpoint saved into @buf ("" for none), and
 * *@ours: whether gpuopt wrote the file (a foreign one brings back
 * nothing but tensors). The header is read again by the restore; next to
 * the data that costs little.
 */
static int ckpt_saved_sched(struct wk *w, const char *path, unsigned int flags,
			    char *buf, size_t len, int *ours)
{
	struct gpo_ckpt_info info;
	struct gpo_ckpt *ck;
	const char *key, *value;
	int i, ret;

	*buf = '\0';
	ret = gpo_ckpt_open(path, flags, &ck);
	if (ret)
		return wk_lib_err(w, ret);
	ret = gpo_ckpt_info(ck, &info);
	if (ret) {
		wk_lib_err(w, ret);
		goto out_close;
	}
	*ours = info.gpuopt;
	for (i = 0; *ours && !gpo_ckpt_metadata(ck, i, &key, &value); i++) {
		if (strcmp(key, "gpuopt.schedule"))
			continue;
		if (strlen(value) >= len)
			ret = wk_err(w, -EPROTO,
				     "the checkpoint's schedule is over %zu bytes",
				     len - 1);
		else
			snprintf(buf, len, "%s", value);
		break;
	}
out_close:
	gpo_ckpt_close(ck);
	return ret;
}

/* A schedule made from a saved line: its kind is the line's own. */
static int sched_from_line(struct wk *w, const char *line,
			   struct gpo_sched **out)
{
	struct gpo_sched *s;
	int ret;

	ret = gpo_sched_new("constant", &s);
	if (!ret) {
		ret = gpo_sched_load(s, line);
		if (ret)
			gpo_sched_free(s);
	}
	if (ret)
		return wk_lib_err(w, ret);
	*out = s;
	return 0;
}

/*
 * After a restore the optimizer's settings and schedule are the file's,
 * as torch's load_state_dict: hyperparameters of the groups (base lr
 * included) and the schedule's settings and state. A file saved with a
 * schedule gives a job without one that schedule; a file saved without
 * one leaves the job without. Shm gets what the daemon shows in config.
 */
/* cmd_restore's work on the checkpoint at @path, opened and checked */
static int restore_path(struct wk *w, const struct wp_req *rq,
			struct wp_rep *rp, const char *path, unsigned int flags)
{
	struct gpo_sched *made = NULL;
	char line[4096];
	const char *kind;
	double base;
	int ours = 0, n, ret;

	ret = ckpt_saved_sched(w, path, flags, line, sizeof(line), &ours);
	if (ret)
		return ret;
	/* the library loads a saved schedule into the one attached */
	if (ours && line[0] && !w->sched) {
		ret = sched_from_line(w, line, &made);
		if (!ret)
			ret = gpo_optim_attach_sched(w->opt, made);
		if (ret) {
			gpo_sched_free(made);
			return wk_lib_err(w, ret);
		}
	}
	ret = gpo_optim_restore(w->opt, path, flags);
	if (ret) {
		if (made) {
			gpo_optim_attach_sched(w->opt, NULL);
			gpo_sched_free(made);
		}
		return wk_lib_err(w, ret);
	}
	if (made)
		w->sched = made;
	if (ours && !line[0] && w->sched) {
		gpo_optim_attach_sched(w->opt, NULL);
		gpo_sched_free(w->sched);
		w->sched = NULL;
	}
	if (ours) {
		/* the kind= word comes first (gpo_sched_load() checked) */
		kind = line[0] ? line + strlen("kind=") : "";
		snprintf(w->schedule, sizeof(w->schedule), "%.*s",
			 (int)strcspn(kind, " "), kind);
		n = gpo_optim_describe(w->opt, -1, w->shm, rq->bytes);
		if (n < 0 || (uint64_t)n + strlen(line) + 2 > rq->bytes)
			return wk_err(w, -EPROTO,
				      "the restored settings do not fit %llu bytes",
				      (unsigned long long)rq->bytes);
		memcpy((char *)w->shm + n + 1, line, strlen(line) + 1);
		rp->flags = WP_R_SAVED;
	}
	rp->st.step = gpo_optim_steps_done(w->opt);
	/* stat's lr: the one the next step takes, the schedule's on the base */
	gpo_optim_get(w->opt, -1, "lr", &base);
	rp->st.lr = w->sched ? gpo_sched_lr(w->sched, base) : base;
	return 0;
}
#ifdef GPO_HAVE_MPI
/*
 * ranks=: rank 0 alone has the checkpoints directory. It sends the file
 * (@ret0: its error in finding it) to the others, who restore from a
 * memfd of its bytes (in *@fd): every rank ends with the same state.
 */
#define CKPT_CHUNK (64u << 20)
static int mpi_ckpt_share(struct wk *w, int ret0, int *fd)
{
	int64_t hdr = ret0;
	uint64_t off, n, size;
	struct stat sb;
	int err = 0, werr = 0, mfd = -1;
	char *buf;

	if (!w->rank && !ret0) {
		if (fstat(*fd, &sb))
			hdr = ret0 = wk_err(w, -errno, "restore: %s", strerror(errno));
		else
			hdr = sb.st_size;
	}
	MPI_Bcast(&hdr, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
	if (hdr < 0)
		return w->rank ? wk_err(w, (int)hdr, "rank 0 cannot read the checkpoint") :
		       ret0;
	size = hdr;
	buf = malloc(size < CKPT_CHUNK ? (size ? size : 1) : CKPT_CHUNK);
	if (!buf) {
		/* the others wait in the broadcasts: the job ends here */
		fprintf(stderr, "gpuoptfs-worker-mpi: rank %d: no memory to pass the checkpoint on\n",
			w->rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (w->rank) {
		mfd = memfd_create("gpuoptfs-ckpt", MFD_CLOEXEC);
		if (mfd < 0)
			werr = -errno;
	}
	/* every rank takes every chunk, whatever failed, then they agree */
	for (off = 0; off < size; off += n) {
		n = size - off < CKPT_CHUNK ? size - off : CKPT_CHUNK;
		if (!w->rank && !err && pread(*fd, buf, n, off) != (ssize_t)n)
			err = -EIO;
		MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
		if (w->rank && !werr && pwrite(mfd, buf, n, off) != (ssize_t)n)
			werr = -EIO;
	}
	free(buf);
	MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (err || werr) {
		if (mfd >= 0)
			close(mfd);
		return wk_err(w, err ? err : werr,
			      "restore: the checkpoint did not reach rank %d: %s",
			      err ? 0 : w->rank, strerror(-(err ? err : werr)));
	}
	if (w->rank)
		*fd = mfd;
	return 0;
}
#endif

static int cmd_restore(struct wk *w, const struct wp_req *rq,
		       struct wp_rep *rp)
{
	unsigned int flags = rq->flags & WP_F_FOREIGN ? GPO_CKPT_FOREIGN : 0;
	char path[160];
	struct stat sb;
	int ret, fd = -1;

	ret = shm_fits(w, rq->bytes);
	if (!ret && rq->bytes < WP_RESTORED_MAX)
		ret = wk_err(w, -EPROTO, "restore needs %d bytes of shm",
			     WP_RESTORED_MAX);
	if (ret)
		return ret;
	if (!w->rank)
		ret = ckpt_path(w, rq->name, path, sizeof(path));
	/*
	 * Only a regular file, never through a link; O_NONBLOCK so that a
	 * FIFO planted there cannot hold the worker. The library then reads
	 * that very file through /proc.
	 */
	if (!ret && !w->rank) {
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			ret = wk_err(w, -ENOENT, "restore: no checkpoint '%s'",
				     rq->name);
	}
#ifdef GPO_HAVE_MPI
	if (w->nranks > 1) {
		ret = mpi_ckpt_share(w, ret, &fd);
		if (ret && fd >= 0)
			close(fd);
	}
#endif
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ret = restore_path(w, rq, rp, path, flags);
	close(fd);
	return ret;
}

/* a gpt model's bytes after a prompt: proto.h's struct wp_sample */
static int cmd_sample(struct wk *w, const struct wp_req *rq)
{
	struct wp_sample sa;
	char *p;
	int ret;

	ret = shm_fits(w, sizeof(sa));
	if (ret)
		return ret;
	memcpy(&sa, w->shm, sizeof(sa));
	if (sa.n > rq->bytes || sa.prompt_len > rq->bytes ||
	    sizeof(sa) + sa.prompt_len + sa.n != rq->bytes)
		return wk_err(w, -EPROTO, "a sample's sizes do not add up");
	ret = shm_fits(w, rq->bytes);
	if (ret)
		return ret;
	if (!w->model->sample)
		return wk_err(w, -EINVAL, "model %s generates no text (gpt models do)",
			      w->model->name);
	p = (char *)w->shm + sizeof(sa);
	return w->model->sample(w, p, sa.prompt_len, sa.temperature, sa.seed,
				p + sa.prompt_len, sa.n);
}

/* what the daemon's pools/<i>/stat adds up */
static void pool_report(struct wk *w, struct wp_rep *rp)
{
	struct gpo_pool_stats ps;

	if (!w->dev || gpo_pool_stats(w->dev, &ps))
		return;
	rp->pool.capacity_bytes = ps.capacity_bytes;
	rp->pool.used_bytes = ps.used_bytes;
	rp->pool.cached_bytes = ps.cached_bytes;
	rp->pool.peak_bytes = ps.peak_bytes;
	rp->pool.limit_bytes = ps.limit_bytes;
	rp->pool.allocs = ps.allocs;
	rp->pool.frees = ps.frees;
	rp->pool.failures = ps.failures;
	rp->flags |= WP_R_POOL;
}

/*
 * ranks=: the commands every rank runs (they build or change the model,
 * or step it collectively); the others are rank 0's alone, whose model
 * holds the same bits as every rank's.
 */
static int __attribute__((unused)) mirrored(const struct wk *w, uint32_t cmd)
{
	return cmd == WP_BUILD || cmd == WP_HPARAMS || cmd == WP_STEP ||
	       cmd == WP_PARAM_WRITE || cmd == WP_RESET || cmd == WP_RESTORE ||
	       /* ZeRO-1: every rank's slice of the state goes into it */
	       (cmd == WP_SAVE && w->zero);
}

#ifdef GPO_HAVE_MPI
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Wait for @r asleep (MPI's own waits poll: each would spin a CPU),
 * sleeping twice as long each time it is not done, from 20 us up to
 * 10 ms; at most the job's timeout unless @forever (a rank waiting for
 * rank 0's next command: a paused job sends none). A rank that died or
 * hangs would keep us forever: -ETIMEDOUT, and the job must end.
 */
static int mpi_wait(struct wk *w, MPI_Request *r, int forever)
{
	struct timespec ts = { 0, 0 };
	uint64_t t0 = mono_ns();
	int done = 0;

	for (;;) {
		MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (done)
			return 0;
		if (!forever && w->timeout_s &&
		    mono_ns() - t0 > (uint64_t)w->timeout_s * 1000000000ull) {
			w->mpi_broken = 1;
			return wk_err(w, -ETIMEDOUT,
				      "rank %d: no answer from the other ranks in %d s (one died or hangs)",
				      w->rank, w->timeout_s);
		}
		nanosleep(&ts, NULL);
		ts.tv_nsec = ts.tv_nsec ? ts.tv_nsec * 2 : 20000;
		if (ts.tv_nsec > 10000000)
			ts.tv_nsec = 10000000;
	}
}

/* rank 0's bytes of a mirrored command, to every rank's view of shm */
static int mpi_share(struct wk *w, const struct wp_req *rq)
{
	uint64_t n = rq->bytes < w->shm_size ? rq->bytes : w->shm_size;
	MPI_Request r;

	if (w->nranks < 2 || !mirrored(w, rq->cmd) || !n)
		return 0;
	if (n > INT_MAX)
		return wk_err(w, -EFBIG, "%llu bytes to the ranks in one message (at most %d)",
			      (unsigned long long)n, INT_MAX);
	if (MPI_Ibcast(w->shm, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r))
		return wk_err(w, -EIO, "rank %d: MPI_Ibcast of a command failed",
			      w->rank);
	return mpi_wait(w, &r, 0);
}
#endif

static int serve(struct wk *w, const struct wp_req *rq, struct wp_rep *rp)
{
	int ret;

	if (rq->cmd == WP_HELLO) {
		rp->pid = getpid();
		rp->version = WP_VERSION;
		return 0;
	}
	ret = shm_map(w, rq->shm_size);
	if (!ret)
		ret = shm_view(w, rq->off);
#ifdef GPO_HAVE_MPI
	/*
	 * every rank, failed or not, takes part in the broadcast of a
	 * command's bytes (a step has none)
	 */
	if (w->nranks > 1 && mirrored(w, rq->cmd) && rq->bytes) {
		int any = ret != 0, all = 0, r2;
		MPI_Request r;

		MPI_Iallreduce(&any, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
			       &r);
		r2 = mpi_wait(w, &r, 0);
		if (r2)
			return r2;
		if (all && !ret)
			ret = wk_err(w, -EIO, "another rank cannot map the shared memory");
		if (!ret)
			ret = mpi_share(w, rq);
	}
	if (!ret && w->nranks > 1 && rq->cmd == WP_GRAD_STEP)
		return wk_err(w, -EINVAL,
			      "a job of %d ranks steps only its own model (mlp, gpt)",
			      w->nranks);
#endif
	if (ret)
		return ret;
	if (rq->cmd == WP_BUILD)
		return cmd_build(w, rq, rp);
	if (!w->opt)
		return wk_err(w, -EPROTO, "the worker has no optimizer yet");
	/*
	 * ZeRO-1 after the first step: each rank's shard optimizer holds
	 * the settings and state; nothing puts new ones into it
	 */
	if (w->zero && w->attached &&
	    (rq->cmd == WP_HPARAMS || rq->cmd == WP_PARAM_WRITE ||
	     rq->cmd == WP_RESET || rq->cmd == WP_RESTORE))
		return wk_err(w, -EBUSY, "zero=1: %s only before the first step (each rank's shard optimizer holds the state; a new worker, after a daemon restart, takes them)",
			      rq->cmd == WP_HPARAMS ? "optimizer settings change" :
			      rq->cmd == WP_PARAM_WRITE ? "params are written" :
			      rq->cmd == WP_RESET ? "a reset works" :
			      "a restore works");
	switch (rq->cmd) {
	case WP_HPARAMS:
		return cmd_hparams(w, rq, rp);
	case WP_STEP:
		return w->model->step(w, &rp->st);
	case WP_GRAD_STEP:
		return cmd_grad_step(w, rq, rp);
	case WP_GRAD_READ:
	case WP_PARAM_READ:
		return cmd_io(w, rq, 0);
	case WP_PARAM_WRITE:
		return cmd_io(w, rq, 1);
	case WP_SAVE:
		return cmd_save(w, rq, rp);
	case WP_RESTORE:
		return cmd_restore(w, rq, rp);
	case WP_RESET:
		ret = gpo_optim_reset(w->opt);
		return ret ? wk_lib_err(w, ret) : 0;
	case WP_SAMPLE:
		return cmd_sample(w, rq);
	default:
		return wk_err(w, -EPROTO, "unknown command %u", rq->cmd);
	}
}

#ifdef GPO_HAVE_MPI
/*
 * Rank 0 of gpuoptfs-worker-mpi: mpirun passes no inherited fds to its
 * ranks, so the daemon listens on the abstract unix socket @name ("@..."),
 * checks that we run as the job's owner (SO_PEERCRED) and sends the
 * memfd and, when the job has one, the checkpoints directory
 * (SCM_RIGHTS) with its first message.
 */
static int mpi_connect(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cb;
	char byte[8];
	struct iovec iov = { byte, sizeof(byte) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cb.buf, .msg_controllen = sizeof(cb.buf),
	};
	struct cmsghdr *cm;
	size_t len = strlen(name);
	int fd, fds[2] = { -1, -1 }, nfd = 0;

	errno = 0;
	if (name[0] != '@' || len < 2 || len > sizeof(a.sun_path))
		return -EINVAL;
	memcpy(a.sun_path + 1, name + 1, len - 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a,
		    offsetof(struct sockaddr_un, sun_path) + len) ||
	    recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) <= 0) {
		int err = errno ? errno : EPROTO;

		close(fd);
		return -err;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	cm = CMSG_FIRSTHDR(&mh);
	if (nfd < 1 || nfd > 2 || (mh.msg_flags & MSG_CTRUNC)) {
		close(fd);
		return -EPROTO;
	}
	memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
	fd_sock = fd;
	fd_shm = fds[0];
	fd_ckpt = fds[1];
	return 0;
}

/*
 * After a mirrored command: did any rank fail? Rank 0 then answers with
 * the lowest failed rank's words; when only some failed, their models
 * differ and the job must end (*@diverged).
 */
static int mpi_agree(struct wk *w, int ret, int *diverged)
{
	struct { int v; int r; } in = { ret != 0, w->rank }, out;
	int any_ok, ok = ret == 0, r2, code;
	MPI_Request r;

	MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD, &r);
	r2 = mpi_wait(w, &r, 0);
	if (!r2) {
		MPI_Iallreduce(&ok, &any_ok, 1, MPI_INT, MPI_MAX,
			       MPI_COMM_WORLD, &r);
		r2 = mpi_wait(w, &r, 0);
	}
	if (r2)
		return r2;
	if (!out.v)
		return 0;
	*diverged = any_ok;
	/* the message, if it is not ours (it is in place at out.r) */
	MPI_Ibcast(w->msg, sizeof(w->msg), MPI_CHAR, out.r, MPI_COMM_WORLD, &r);
	r2 = mpi_wait(w, &r, 0);
	/* and its errno: a rank over its own device's pool is ENOMEM */
	code = ret;
	if (!r2) {
		MPI_Ibcast(&code, 1, MPI_INT, out.r, MPI_COMM_WORLD, &r);
		r2 = mpi_wait(w, &r, 0);
	}
	if (r2)
		return r2;
	w->msg[sizeof(w->msg) - 1] = '\0';
	if (out.r != w->rank || !ret) {
		char m[WP_MSG_MAX];

		snprintf(m, sizeof(m), "%s", w->msg);
		return wk_err(w, ret ? ret : code < 0 ? code : -EIO,
			      "rank %d: %.400s", out.r, m);
	}
	return ret;
}

/*
 * Rank 0's next command to every rank: they wait for it as long as it
 * takes (a paused job sends none), asleep (mpi_wait()).
 */
static int mpi_bcast_req(struct wk *w, struct wp_req *rq)
{
	MPI_Request r;

	MPI_Ibcast(rq, sizeof(*rq), MPI_BYTE, 0, MPI_COMM_WORLD, &r);
	return mpi_wait(w, &r, w->rank != 0);
}
/* MPI's start; rank 0 connects to the daemon; the communicator */
static int mpi_start(struct wk *w, int *argc, char ***argv)
{
	char opts[256], **a;
	const char *t;
	int provided, ret;

	/*
	 * SERIALIZED: the communicator's progress thread tests a round in
	 * flight while this thread computes the next shard; this thread
	 * makes its own MPI calls only between steps, when no round is
	 */
	MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &w->nranks);
	a = *argv;
	if (*argc != 4) {
		fprintf(stderr, "usage: gpuoptfs-worker-mpi JOB @SOCKET COMM-SETTINGS (started by gpuoptfs through mpiexec)\n");
		return -EINVAL;
	}
	if (!w->rank) {
		ret = mpi_connect(a[2]);
		if (ret) {
			fprintf(stderr, "gpuoptfs-worker-mpi: rank 0 cannot reach the daemon at %s: %s\n",
				a[2], strerror(-ret));
			return ret;
		}
	}
	snprintf(opts, sizeof(opts), "%s", a[3]);
	/* the worker's own waits on the others take the comm's timeout */
	t = strstr(opts, "timeout=");
	w->timeout_s = t ? atoi(t + 8) : 300;
	w->zero = strstr(opts, "zero=1") != NULL;
	ret = gpo_comm_new(NULL, opts, (struct gpo_comm **)&w->comm);
	if (ret)
		fprintf(stderr, "gpuoptfs-worker-mpi: rank %d: %s\n", w->rank,
			gpo_errmsg());
	return ret;
}
#endif

int main(int argc, char **argv)
{
	struct wk w;
	struct wp_req rq;
	struct wp_rep rp;
	ssize_t n = 0;
	int ret, diverged = 0;

	(void)diverged;
	memset(&w, 0, sizeof(w));
	w.nranks = 1;
#ifdef GPO_HAVE_MPI
	ret = drop_caps();
	if (!ret)
		ret = mpi_start(&w, &argc, &argv);
	if (ret) {
		fprintf(stderr, "gpuoptfs-worker-mpi: rank %d cannot start: %s\n",
			w.rank, strerror(-ret));
		MPI_Abort(MPI_COMM_WORLD, 1);
		return 1;
	}
#else
	if (argc != 2) {
		fprintf(stderr, "usage: gpuoptfs-worker JOB (started by gpuoptfs)\n");
		return 2;
	}
	ret = drop_caps();
	if (ret) {
		fprintf(stderr, "gpuoptfs-worker: cannot drop privileges: %s\n",
			strerror(-ret));
		return 1;
	}
#endif
	signal(SIGPIPE, SIG_IGN);
	w.job = argv[1];
	w.fault = fault_parse(w.job);
	prctl(PR_SET_NAME, "gpuoptfs-work", 0, 0, 0);
	ret = gpo_ctx_new(&w.ctx, 0);
	if (ret) {
		fprintf(stderr, "gpuoptfs-worker: no library context: %s\n",
			strerror(-ret));
#ifdef GPO_HAVE_MPI
		MPI_Abort(MPI_COMM_WORLD, 1);
#endif
		return 1;
	}
	for (;;) {
		if (!w.rank) {
			n = recv(fd_sock, &rq, sizeof(rq), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				/* the daemon closed its end */
				memset(&rq, 0, sizeof(rq));
				rq.cmd = WP_QUIT;
				n = sizeof(rq);
			}
		}
#ifdef GPO_HAVE_MPI
		/* the other ranks wait for rank 0's next mirrored command */
		if (w.nranks > 1 && (w.rank || (n == sizeof(rq) &&
			(mirrored(&w, rq.cmd) || rq.cmd == WP_QUIT)))) {
			if (mpi_bcast_req(&w, &rq)) {
				/* no rank hears rank 0 now: answer, end */
				memset(&rp, 0, sizeof(rp));
				rp.ret = -ETIMEDOUT;
				snprintf(rp.msg, sizeof(rp.msg), "%s", w.msg);
				send(fd_sock, &rp, sizeof(rp), MSG_NOSIGNAL);
				fprintf(stderr, "gpuoptfs-worker-mpi: %s\n",
					w.msg);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			n = sizeof(rq);
		}
#endif
		memset(&rp, 0, sizeof(rp));
		rp.st.loss = NAN;
		rp.st.grad_norm = NAN;
		rp.st.lr = NAN;
		rp.st.loss_scale = NAN;
		w.msg[0] = '\0';
		rq.name[sizeof(rq.name) - 1] = '\0';
		if (n != sizeof(rq))
			ret = wk_err(&w, -EPROTO, "a request of %zd bytes", n);
		else if (rq.cmd == WP_QUIT)
			break;
		else
			ret = serve(&w, &rq, &rp);
#ifdef GPO_HAVE_MPI
		/*
		 * A failed collective step leaves the communicator unusable
		 * (a rank died or hangs): answer, then end every rank.
		 */
		/* a step fails alike on every rank, or ends the job */
		if (w.nranks > 1 && mirrored(&w, rq.cmd) && !w.mpi_broken &&
		    rq.cmd != WP_STEP)
			ret = mpi_agree(&w, ret, &diverged);
		if (w.nranks > 1 && (w.mpi_broken || (rq.cmd == WP_STEP && ret))) {
			diverged = 1;
			if (w.rank)
				fprintf(stderr, "gpuoptfs-worker-mpi: rank %d: %s\n",
					w.rank, w.msg);
		}
		if (w.rank) {
			if (diverged)
				MPI_Abort(MPI_COMM_WORLD, 1);
			continue;
		}
#endif
		/* where the loss scale stands after a build, restore, reset */
		if (!ret && w.opt && (rq.cmd == WP_BUILD ||
				      rq.cmd == WP_RESTORE ||
				      rq.cmd == WP_RESET))
			gpo_optim_loss_scale(w.opt, &rp.st.loss_scale, NULL);
		pool_report(&w, &rp);
		rp.ret = ret;
		if (ret)
			snprintf(rp.msg, sizeof(rp.msg), "%s",
				 w.msg[0] ? w.msg : strerror(-ret));
		if (send(fd_sock, &rp, sizeof(rp), MSG_NOSIGNAL) < 0)
			break;
#ifdef GPO_HAVE_MPI
		if (diverged) {
			fprintf(stderr, "gpuoptfs-worker-mpi: rank 0: %s: ending every rank\n",
				rp.msg);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
#endif
	}
	opt_free(&w);
	free(w.t);
	gpo_ctx_free(w.ctx);
#ifdef GPO_HAVE_MPI
	gpo_comm_free(w.comm);
	if (w.rank)
		free(w.map);
	MPI_Finalize();
#endif
	return 0;
}
