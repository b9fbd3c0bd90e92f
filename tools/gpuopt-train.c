// SPDX-License-Identifier: MIT
/*
 * gpuopt-train - train an mlp or gpt model without the daemon
 *
 * The job's settings are gpuoptfs's config keys, from a file (-c) and
 * then the command line's key=value words. Built with MPI=1 it runs under
 * mpirun: every rank trains its shards of the global batch on its own
 * device (libgpuopt-mpi), all ranks step identically, and rank 0 prints,
 * writes history.csv and the checkpoints. Without MPI the MPI keys are
 * refused. Exit status: 0, 1 failure, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gpuopt.h>
#ifdef GPO_HAVE_MPI
#include <mpi.h>
#include <gpuopt/comm.h>
#endif
#include "common/common.h"

#define EXIT_USAGE 2
#define VAL_MAX 4096

static const char *prog = "gpuopt-train";
static int rank;

/* the settings: gpuoptfs's job keys, and a few of this tool */
struct cfg {
	char model[256], data[VAL_MAX], device[256], optimizer[32];
	char activation[16], loss[8], dropout[32];
	char param_dtype[8], state_dtype[8];	/* the precision mode */
	char ckpt_dir[VAL_MAX], resume[VAL_MAX], history[VAL_MAX + 16];
	char dump[VAL_MAX];
	char hparams[2048];		/* for gpo_optim_configure() */
	char comm[256];			/* for gpo_comm_new() */
	int have_comm_key;		/* the first MPI key, for the message */
	char comm_key[64];
	uint64_t batch, max_steps, seed, eval_every, ckpt_every, log_every;
	int shuffle;
};

static void usage(void)
{
	printf(
		"usage: %s [-c FILE] [-q] KEY=VALUE...\n"
		"Train an mlp or gpt model on a dataset, without the daemon;\n"
		"under mpirun (built with make MPI=1) data-parallel over the ranks.\n"
		"\n"
		"  -c FILE   settings, one key=value a line (# comments); the\n"
		"            command line's come after them\n"
		"  -q        no progress lines\n"
		"  -h        this text\n"
		"\n"
		"keys: model= data= device= optimizer= batch_size= max_steps= seed=\n"
		"  shuffle= activation= loss= dropout= param_dtype= state_dtype=\n"
		"  eval_every= checkpoint_dir=\n"
		"  checkpoint_every= resume= history= dump= log_every=, the\n"
		"  optimizer's hyperparameters (lr= ...), and with MPI shards=\n"
		"  deterministic= bucket_bytes= max_ranks= timeout= zero= overlap=.\n"
		"  See gpuopt-train(1).\n",
		prog);
}

static int fail(const char *what, int ret)
{
	fprintf(stderr, "%s: rank %d: %s: %s\n", prog, rank, what,
		gpo_errmsg()[0] ? gpo_errmsg() : strerror(-ret));
	return 1;
}

static int copy(char *dst, size_t n, const char *key, const char *val)
{
	if (strlen(val) >= n) {
		fprintf(stderr, "%s: %s: too long\n", prog, key);
		return -1;
	}
	strcpy(dst, val);
	return 0;
}

static int num(uint64_t *dst, const char *key, const char *val)
{
	if (gpo__parse_u64(val, dst)) {
		fprintf(stderr, "%s: %s '%s': a whole number\n", prog, key, val);
		return -1;
	}
	return 0;
}

static int append(char *dst, size_t n, const char *key, const char *val)
{
	size_t l = strlen(dst);

	if (l + strlen(key) + strlen(val) + 3 > n) {
		fprintf(stderr, "%s: too many settings\n", prog);
		return -1;
	}
	snprintf(dst + l, n - l, "%s%s=%s", l ? " " : "", key, val);
	return 0;
}

/* one key=value word; -1: a message was printed */
static int set_key(struct cfg *c, const char *word)
{
	static const char *const mpi_keys[] = {
		"shards", "deterministic", "bucket_bytes", "max_ranks",
		"timeout", "zero", "overlap",
	};
	char key[64];
	const char *eq = strchr(word, '='), *val;
	uint64_t b;
	size_t i;

	if (!eq || eq == word || (size_t)(eq - word) >= sizeof(key)) {
		fprintf(stderr, "%s: '%s': not key=value\n", prog, word);
		return -1;
	}
	memcpy(key, word, eq - word);
	key[eq - word] = 0;
	val = eq + 1;
	for (i = 0; i < sizeof(mpi_keys) / sizeof(mpi_keys[0]); i++) {
		if (strcmp(key, mpi_keys[i]))
			continue;
		if (!c->have_comm_key)
			snprintf(c->comm_key, sizeof(c->comm_key), "%s", key);
		c->have_comm_key = 1;
		return append(c->comm, sizeof(c->comm), key, val);
	}
	if (!strcmp(key, "model"))
		return copy(c->model, sizeof(c->model), key, val);
	if (!strcmp(key, "data"))
		return copy(c->data, sizeof(c->data), key, val);
	if (!strcmp(key, "device"))
		return copy(c->device, sizeof(c->device), key, val);
	if (!strcmp(key, "optimizer"))
		return copy(c->optimizer, sizeof(c->optimizer), key, val);
	if (!strcmp(key, "activation"))
		return copy(c->activation, sizeof(c->activation), key, val);
	if (!strcmp(key, "loss"))
		return copy(c->loss, sizeof(c->loss), key, val);
	if (!strcmp(key, "dropout"))
		return copy(c->dropout, sizeof(c->dropout), key, val);
	if (!strcmp(key, "param_dtype"))
		return copy(c->param_dtype, sizeof(c->param_dtype), key, val);
	if (!strcmp(key, "state_dtype"))
		return copy(c->state_dtype, sizeof(c->state_dtype), key, val);
	if (!strcmp(key, "checkpoint_dir"))
		return copy(c->ckpt_dir, sizeof(c->ckpt_dir), key, val);
	if (!strcmp(key, "resume"))
		return copy(c->resume, sizeof(c->resume), key, val);
	if (!strcmp(key, "history"))
		return copy(c->history, sizeof(c->history), key, val);
	if (!strcmp(key, "dump"))
		return copy(c->dump, sizeof(c->dump), key, val);
	if (!strcmp(key, "batch_size"))
		return num(&c->batch, key, val);
	if (!strcmp(key, "max_steps"))
		return num(&c->max_steps, key, val);
	if (!strcmp(key, "seed"))
		return num(&c->seed, key, val);
	if (!strcmp(key, "eval_every"))
		return num(&c->eval_every, key, val);
	if (!strcmp(key, "checkpoint_every"))
		return num(&c->ckpt_every, key, val);
	if (!strcmp(key, "log_every"))
		return num(&c->log_every, key, val);
	if (!strcmp(key, "shuffle")) {
		if (num(&b, key, val))
			return -1;
		if (b > 1) {
			fprintf(stderr, "%s: shuffle '%s': 0 or 1\n", prog, val);
			return -1;
		}
		c->shuffle = (int)b;
		return 0;
	}
	/* the rest is the optimizer's: gpo_optim_configure() judges it */
	return append(c->hparams, sizeof(c->hparams), key, val);
}

static int read_file(struct cfg *c, const char *path)
{
	char line[VAL_MAX + 64];
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == '\n' || e[-1] == ' ' ||
				 e[-1] == '\t' || e[-1] == '\r'))
			*--e = 0;
		if (!*p || *p == '#')
			continue;
		ret = set_key(c, p);
	}
	fclose(f);
	return ret;
}

static void defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->optimizer, "adamw");
	strcpy(c->activation, "relu");
	strcpy(c->loss, "xent");
	strcpy(c->dropout, "0");
	strcpy(c->param_dtype, "f32");
	strcpy(c->state_dtype, "f32");
	c->batch = 64;
	c->max_steps = 1000;
	c->shuffle = 1;
	c->log_every = 10;
}

/* params of @opt as raw little-endian values (of their dtype) to @path */
static int dump_params(struct gpo_optim *opt, const char *path, float *p,
		       size_t bytes)
{
	FILE *f;

	f = fopen(path, "w");
	if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	return 0;
}

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

struct run {
	struct cfg *c;
	struct gpo_ctx *ctx;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_train *t;
	int nranks;
	int quiet;
	FILE *hist;
#ifdef GPO_HAVE_MPI
	struct gpo_comm *comm;
#endif
};

/* collective under MPI: ZeRO-1's state is gathered first */
static int save_ckpt(struct run *r, uint64_t step)
{
	char path[VAL_MAX + 64];
	int ret;

#ifdef GPO_HAVE_MPI
	ret = gpo_comm_sync_state(r->comm);
	if (ret)
		return fail("gathering the optimizer state", ret);
#endif
	if (rank)
		return 0;

	snprintf(path, sizeof(path), "%s/step-%08" PRIu64 ".safetensors",
		 r->c->ckpt_dir, step);
	ret = gpo_optim_save(r->opt, path, 0);
	if (ret)
		return fail(path, ret);
	if (!r->quiet)
		printf("checkpoint %s\n", path);
	return 0;
}

static int train(struct run *r)
{
	struct cfg *c = r->c;
	struct gpo_train_result res, ev;
	uint64_t spe, every, step, t0 = gpo__now_ns(), s0;
	double eval_loss = NAN, acc = NAN, el, rate;
	int ret;

	spe = gpo_train_steps_per_epoch(r->t);
	every = c->eval_every ? c->eval_every : spe;
	s0 = gpo_optim_steps_done(r->opt);
	for (step = s0; step < c->max_steps;) {
		ret = gpo_train_step(r->t, &res);
		if (ret)
			return fail("step", ret);
		step = res.step;
		if (!isfinite(res.loss)) {
			fprintf(stderr, "%s: the loss is %g at step %" PRIu64 ": the run diverged\n",
				prog, res.loss, step);
			return 1;
		}
		/* evaluation is rank 0's alone: no collective in it */
		if (rank == 0 && every && step % every == 0) {
			ret = gpo_train_eval(r->t, &ev);
			if (!ret) {
				eval_loss = ev.loss;
				acc = ev.accuracy;
			} else if (ret != -ENODATA) {
				return fail("eval", ret);
			}
		}
		el = (gpo__now_ns() - t0) / 1e9;
		rate = el > 0 ? (double)(step - s0) * c->batch / el : 0;
		if (rank == 0 && (step % c->log_every == 0 ||
				  step == c->max_steps)) {
			if (!r->quiet)
				printf("step %" PRIu64 " loss %.6f acc %.4f lr %.6g eval_loss %.6f eval_acc %.4f %.0f samples/s\n",
				       step, res.loss, res.accuracy, res.lr,
				       eval_loss, acc, rate);
			/* progress as it happens, also into a pipe or file */
			fflush(stdout);
			if (r->hist)
				fprintf(r->hist, "%" PRIu64 ",%.9g,%.9g,%.9g,%.3f,%" PRIu64 ",%.9g,%.9g,%.9g\n",
					step, res.loss, res.lr, res.grad_norm,
					el, res.epoch, rate, eval_loss, acc);
		}
		if (c->ckpt_dir[0] && c->ckpt_every &&
		    step % c->ckpt_every == 0 && save_ckpt(r, step))
			return 1;
	}
	if (c->ckpt_dir[0] && (!c->ckpt_every || step % c->ckpt_every))
		return save_ckpt(r, step);
	return 0;
}

/* every rank's parameters must be the same bits; rank 0 dumps them */
static int finish(struct run *r)
{
	uint64_t n = 0, h;
	size_t bytes;
	float *p;
	int ret, i, bad = 0;

	for (i = 0; i < gpo_optim_tensor_count(r->opt); i++) {
		struct gpo_tensor_info ti;

		if (gpo_optim_tensor_info(r->opt, i, &ti) == 0)
			n += ti.numel;
	}
	/* in their dtype: half parameters hash as their 2-byte values */
	bytes = n * (gpo_optim_dtype(r->opt, "param") == GPO_F32 ? 4 : 2);
	p = malloc(bytes ? bytes : 1);
	if (!p)
		return fail("params", -ENOMEM);
	ret = gpo_optim_read(r->opt, "param", NULL, p, bytes);
	if (ret) {
		free(p);
		return fail("params", ret);
	}
	h = fnv1a(p, bytes);
#ifdef GPO_HAVE_MPI
	if (r->nranks > 1) {
		uint64_t *all = calloc(r->nranks, sizeof(*all));

		if (!all) {
			free(p);
			return fail("params", -ENOMEM);
		}
		MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T,
			      MPI_COMM_WORLD);
		for (i = 1; i < r->nranks; i++)
			if (all[i] != all[0]) {
				if (rank == 0)
					fprintf(stderr, "%s: rank %d's parameters differ from rank 0's\n",
						prog, i);
				bad = 1;
			}
		free(all);
	}
#endif
	if (rank == 0 && !r->quiet)
		printf("params %" PRIu64 " fnv1a %016" PRIx64 " skipped %" PRIu64 "\n",
		       n, h, gpo_optim_steps_skipped(r->opt));
#ifdef GPO_HAVE_MPI
	{
		struct gpo_comm_stats cs;

		if (rank == 0 && !r->quiet && !gpo_comm_stats(r->comm, &cs) &&
		    cs.reductions)
			printf("comm %" PRIu64 " reductions of %.3f MB: %.3f ms each (waiting on MPI %.3f ms, shard gradients to the host %.3f ms); a step's communication %.3f ms, hidden behind compute %.3f ms; backward in %.2f segments, %.2f buckets reduced before it ended\n",
			       cs.reductions, cs.bytes / 1e6 / cs.reductions,
			       cs.reduce_ns / 1e6 / cs.reductions,
			       cs.wait_ns / 1e6 / cs.reductions,
			       cs.d2h_ns / 1e6 / cs.reductions,
			       cs.comm_ns / 1e6 / cs.reductions,
			       cs.hidden_ns / 1e6 / cs.reductions,
			       (double)cs.segments / cs.reductions,
			       (double)cs.early_buckets / cs.reductions);
	}
#endif
	{
		/* the device memory a rank holds (ZeRO-1 keeps 1/N state) */
		struct gpo_pool_stats ps;
		uint64_t mine[2] = { 0, 0 }, most[2];

		if (!gpo_pool_stats(r->dev, &ps)) {
			mine[0] = ps.used_bytes;
			mine[1] = ps.peak_bytes;
		}
		most[0] = mine[0];
		most[1] = mine[1];
#ifdef GPO_HAVE_MPI
		if (r->nranks > 1)
			MPI_Allreduce(mine, most, 2, MPI_UINT64_T, MPI_MAX,
				      MPI_COMM_WORLD);
#endif
		if (rank == 0 && !r->quiet)
			printf("pool used %" PRIu64 " peak %" PRIu64 " (bytes, the most of one rank)\n",
			       most[0], most[1]);
	}
	if (!bad && rank == 0 && r->c->dump[0] &&
	    dump_params(r->opt, r->c->dump, p, bytes))
		bad = 1;
	free(p);
	return bad;
}

/*
 * The precision mode, as gpuoptfs's worker sets it before anything is
 * allocated: param and grad in param_dtype, every state slot the kind
 * keeps in state_dtype
 */
static int set_dtypes(struct gpo_optim *opt, const struct cfg *c)
{
	static const char *const slots[] = {
		"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
		"square_avg", "grad_avg", "sum",
	};
	int pd = gpo_dtype_parse(c->param_dtype);
	int sd = gpo_dtype_parse(c->state_dtype);
	size_t i;
	int ret;

	if (pd < 0 || sd < 0)
		return gpo__err(-EINVAL, "param_dtype '%s', state_dtype '%s': f32, f16, bf16 (u8: state)",
				c->param_dtype, c->state_dtype);
	ret = gpo_optim_set_dtype(opt, "param", pd);
	if (!ret)
		ret = gpo_optim_set_dtype(opt, "grad", pd);
	for (i = 0; !ret && i < sizeof(slots) / sizeof(slots[0]); i++) {
		ret = gpo_optim_set_dtype(opt, slots[i], sd);
		if (ret == -ENOENT)
			ret = 0;
	}
	return ret;
}

static int setup(struct run *r)
{
	struct cfg *c = r->c;
	char mopts[160], topts[160];
	int kind, ret, gpt;

	if (!c->model[0] || !c->data[0]) {
		fprintf(stderr, "%s: model= and data= are needed\n", prog);
		return EXIT_USAGE;
	}
	gpt = !strncmp(c->model, "gpt:", 4);
	kind = gpo_optim_kind_parse(c->optimizer);
	if (kind < 0)
		return fail("optimizer", kind);
	ret = gpo_ctx_new(&r->ctx, 0);
	if (ret)
		return fail("context", ret);
#ifdef GPO_HAVE_MPI
	ret = gpo_comm_new(NULL, c->comm, &r->comm);
	if (ret)
		return fail("comm", ret);
	ret = gpo_comm_device(r->comm, r->ctx, c->device, &r->dev);
#else
	ret = gpo_device_select(r->ctx, c->device, &r->dev);
#endif
	if (ret)
		return fail("device", ret);
	ret = gpo_optim_new(r->dev, kind, &r->opt);
	if (!ret && c->hparams[0])
		ret = gpo_optim_configure(r->opt, 0, c->hparams);
	if (ret)
		return fail("optimizer", ret);
	ret = set_dtypes(r->opt, c);
	if (ret)
		return fail("precision", ret);
	if (gpt)
		snprintf(mopts, sizeof(mopts), "dropout=%s seed=%" PRIu64,
			 c->dropout, c->seed);
	else
		snprintf(mopts, sizeof(mopts), "activation=%s loss=%s seed=%" PRIu64,
			 c->activation, c->loss, c->seed);
	snprintf(topts, sizeof(topts), "batch_size=%" PRIu64 " shuffle=%d seed=%" PRIu64,
		 c->batch, c->shuffle, c->seed);
	ret = gpo_model_new(r->opt, c->model, mopts, &r->m);
	if (ret)
		return fail("model", ret);
	ret = gpo_dataset_open(c->data, gpt ? GPO_DATASET_BYTES : 0, &r->ds);
	if (ret)
		return fail(c->data, ret);
	ret = gpo_train_new(r->m, r->ds, topts, &r->t);
	if (ret)
		return fail("training", ret);
	if (c->resume[0]) {
		/* any rank count: every rank reads the same file (before
		 * attaching: ZeRO-1 takes its slice of the state from it) */
		ret = gpo_optim_restore(r->opt, c->resume, 0);
		if (ret)
			return fail(c->resume, ret);
	}
#ifdef GPO_HAVE_MPI
	ret = gpo_comm_train_attach(r->comm, r->t);
	if (ret)
		return fail("data parallel", ret);
#endif
	if (rank == 0 && c->ckpt_dir[0] && mkdir(c->ckpt_dir, 0777) &&
	    errno != EEXIST) {
		fprintf(stderr, "%s: %s: %s\n", prog, c->ckpt_dir,
			strerror(errno));
		return 1;
	}
	if (rank == 0 && !c->history[0] && c->ckpt_dir[0])
		snprintf(c->history, sizeof(c->history), "%s/history.csv",
			 c->ckpt_dir);
	if (rank == 0 && c->history[0]) {
		struct stat st;
		int fresh = stat(c->history, &st) || !st.st_size;

		r->hist = fopen(c->history, "a");
		if (!r->hist) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->history,
				strerror(errno));
			return 1;
		}
		if (fresh)
			fprintf(r->hist, "step,loss,lr,grad_norm,elapsed_s,epoch,%s,eval_loss,accuracy\n",
				gpt ? "tokens_per_sec" : "samples_per_sec");
	}
	if (rank == 0 && !r->quiet)
		printf("%s on %s, %s, %d rank%s, global batch %" PRIu64 "\n",
		       c->model, c->device[0] ? c->device : "best",
		       c->optimizer, r->nranks, r->nranks > 1 ? "s" : "",
		       c->batch);
	return 0;
}

static void teardown(struct run *r)
{
	if (r->hist && fclose(r->hist))
		fprintf(stderr, "%s: %s: %s\n", prog, r->c->history,
			strerror(errno));
	gpo_train_free(r->t);
	gpo_dataset_free(r->ds);
	gpo_model_free(r->m);
	gpo_optim_free(r->opt);
#ifdef GPO_HAVE_MPI
	gpo_comm_free(r->comm);
#endif
	gpo_ctx_free(r->ctx);
}

int main(int argc, char **argv)
{
	struct cfg c;
	struct run r = { .c = &c, .nranks = 1 };
	int i, opt, ret;

	defaults(&c);
	while ((opt = getopt(argc, argv, "c:qh")) != -1) {
		switch (opt) {
		case 'c':
			if (read_file(&c, optarg))
				return EXIT_USAGE;
			break;
		case 'q':
			r.quiet = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			fprintf(stderr, "Try '%s -h'.\n", prog);
			return EXIT_USAGE;
		}
	}
	for (i = optind; i < argc; i++)
		if (set_key(&c, argv[i]))
			return EXIT_USAGE;
#ifndef GPO_HAVE_MPI
	if (c.have_comm_key) {
		fprintf(stderr, "%s: %s= needs MPI: this gpuopt-train was built without it (make MPI=1)\n",
			prog, c.comm_key);
		return EXIT_USAGE;
	}
	{
		const char *n = getenv("OMPI_COMM_WORLD_SIZE");

		if (!n)
			n = getenv("PMI_SIZE");
		if (n && strcmp(n, "1")) {
			fprintf(stderr, "%s: started as one of %s ranks, but built without MPI (make MPI=1)\n",
				prog, n);
			return EXIT_USAGE;
		}
	}
	ret = setup(&r);
#else
	{
		/* the comm's progress thread tests requests (SERIALIZED) */
		int provided;

		MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &r.nranks);
	ret = setup(&r);
	/* a rank that failed alone would leave the others in a collective */
	if (r.nranks > 1) {
		int any = 0;

		MPI_Allreduce(&ret, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (any && !ret)
			ret = 1;
	}
	if (ret) {
		/* every rank knows: end together, no abort */
		teardown(&r);
		MPI_Finalize();
		return ret;
	}
#endif
	if (!ret)
		ret = train(&r);
#ifdef GPO_HAVE_MPI
	if (ret && r.nranks > 1) {
		fprintf(stderr, "%s: rank %d failed: ending the job\n", prog,
			rank);
		MPI_Abort(MPI_COMM_WORLD, ret);
	}
#endif
	if (!ret)
		ret = finish(&r);
	teardown(&r);
#ifdef GPO_HAVE_MPI
	MPI_Finalize();
#endif
	return ret;
}
