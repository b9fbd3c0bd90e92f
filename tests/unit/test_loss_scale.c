// SPDX-License-Identifier: MIT
/*
 * test_loss_scale.c - loss scaling, on every device
 *
 * The optimizer: a run whose gradients come multiplied by the loss scale
 * (loss_scale=dynamic or a fixed number) gives the same bytes as the run
 * without, since scales are powers of two; a non-finite gradient skips
 * the step and halves the scale; growth_interval good steps double it,
 * never to inf; the scale after each step follows a host model of
 * torch.cuda.amp.GradScaler's _amp_update_scale_. Training: backward
 * seeded with the scale on the device gives the same parameters as
 * training without it; a batch that overflows is skipped and halves the
 * scale. Checkpoints keep the scale and its counter; old ones without
 * them restore. Bad settings are refused and change nothing.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "ckpt/ckpt_i.h"
#include "testutil.h"
#include "ckpt_util.h"

#define NDEV TU_MAX_DEVICES

/* three tensors of odd sizes */
static const uint64_t sizes[3] = { 61, 35, 4099 };
#define TOTAL (61 + 35 + 4099)

/* GradScaler's bookkeeping on the host: the model the device must match */
struct gs_model {
	double scale;
	uint64_t good;
	uint64_t interval;
};

static void gs_update(struct gs_model *m, int found_inf)
{
	if (found_inf) {
		m->scale *= 0.5;
		m->good = 0;
	} else if (m->good + 1 == m->interval) {
		if (isfinite((float)(m->scale * 2)))
			m->scale *= 2;
		m->good = 0;
	} else {
		m->good++;
	}
}

static struct gpo_optim *new_opt(struct gpo_device *dev, const char *config,
				 const float *p0)
{
	struct gpo_optim *opt;
	char name[8];
	int i;

	ck_assert(!gpo_optim_new(dev, GPO_ADAMW, &opt));
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert(gpo_optim_add_tensor(opt, name, 1, &sizes[i], 0) >= 0);
	}
	ck_assert_msg(!gpo_optim_configure(opt, -1, config), "%s: %s", config,
		      gpo_errmsg());
	ck_assert(!gpo_optim_write(opt, "param", NULL, p0, TOTAL * 4));
	return opt;
}

static void read_n(struct gpo_optim *opt, const char *slot, float *out,
		   size_t n)
{
	tu_poison(out, n);
	ck_assert_msg(!gpo_optim_read(opt, slot, NULL, out, n * 4), "%s",
		      gpo_errmsg());
}

static void read_all(struct gpo_optim *opt, const char *slot, float *out)
{
	read_n(opt, slot, out, TOTAL);
}

static void same_bytes(struct gpo_optim *a, struct gpo_optim *b,
		       const char *what)
{
	static const char *const slots[] = { "param", "exp_avg",
					     "exp_avg_sq" };
	float *x = malloc(TOTAL * 4), *y = malloc(TOTAL * 4);
	int i;

	ck_assert(x && y);
	for (i = 0; i < 3; i++) {
		read_all(a, slots[i], x);
		read_all(b, slots[i], y);
		ck_assert_msg(!memcmp(x, y, TOTAL * 4), "%s: %s differs", what,
			      slots[i]);
	}
	ck_assert_uint_eq(gpo_optim_steps_done(a), gpo_optim_steps_done(b));
	free(x);
	free(y);
}

/*
 * @steps steps of AdamW, once plain and once with @config's loss scale
 * (gradients multiplied by the model's scale); a non-finite gradient at
 * the steps in @bad (a 0-terminated list of step numbers) in the scaled
 * run only, whose skipped steps the plain run leaves out. Each step's
 * scale and skip checked against the model; then the bytes.
 */
static void scaled_run(struct gpo_device *dev, const char *config,
		       struct gs_model m, int dynamic, int steps,
		       const int *bad, int async, uint64_t *rng)
{
	struct gpo_optim *plain, *scaled;
	float *p0 = malloc(TOTAL * 4), *g = malloc(TOTAL * 4),
	      *gs = malloc(TOTAL * 4);
	struct gpo_step_info info;
	uint64_t good, skipped = 0;
	double s;
	int i, k, is_bad;

	ck_assert(p0 && g && gs);
	tu_fill(p0, TOTAL, rng, -1, 1);
	plain = new_opt(dev, "lr=0.01 weight_decay=0.1", p0);
	scaled = new_opt(dev, "lr=0.01 weight_decay=0.1", p0);
	ck_assert_msg(!gpo_optim_configure(scaled, -1, config), "%s",
		      gpo_errmsg());
	ck_assert(!gpo_optim_loss_scale(scaled, &s, &good));
	ck_assert_msg(s == m.scale && good == 0, "%s: starts at %g, not %g",
		      config, s, m.scale);
	for (i = 1; i <= steps; i++) {
		tu_fill(g, TOTAL, rng, -2, 2);
		for (k = 0; k < TOTAL; k++)
			gs[k] = (float)(g[k] * m.scale);
		for (is_bad = 0, k = 0; bad && bad[k]; k++)
			is_bad |= bad[k] == i;
		if (is_bad)
			gs[(i * 977) % TOTAL] = i % 2 ? INFINITY : NAN;
		ck_assert(!gpo_optim_write(scaled, "grad", NULL, gs,
					   TOTAL * 4));
		if (async) {
			ck_assert(!gpo_optim_step_async(scaled));
		} else {
			info.loss_scale = -1;
			ck_assert_msg(!gpo_optim_step(scaled, &info), "%s",
				      gpo_errmsg());
			ck_assert_int_eq(info.skipped, is_bad);
		}
		if (!is_bad) {
			ck_assert(!gpo_optim_write(plain, "grad", NULL, g,
						   TOTAL * 4));
			ck_assert(!gpo_optim_step(plain, NULL));
		}
		skipped += is_bad;
		if (dynamic)
			gs_update(&m, is_bad);
		if (!async)
			ck_assert_msg(info.loss_scale == m.scale,
				      "%s %s step %d: scale %g, not %g",
				      tu_device_id(dev), config, i,
				      info.loss_scale, m.scale);
		if (async && i % 3)
			continue;
		ck_assert(!gpo_optim_loss_scale(scaled, &s, &good));
		ck_assert_msg(s == m.scale && good == m.good,
			      "%s %s step %d: scale %g good %llu, not %g %llu",
			      tu_device_id(dev), config, i, s,
			      (unsigned long long)good, m.scale,
			      (unsigned long long)m.good);
	}
	ck_assert(!gpo_optim_wait(scaled, NULL));
	ck_assert_uint_eq(gpo_optim_steps_skipped(scaled), skipped);
	same_bytes(plain, scaled, config);
	gpo_optim_free(plain);
	gpo_optim_free(scaled);
	free(p0);
	free(g);
	free(gs);
}

static int devices(struct gpo_device **devs)
{
	int n = tu_devices(devs, NDEV);

	ck_assert_int_ge(n, 1);
	return n;
}

/* no overflow: the same bytes, the scale growing every 3 good steps */
START_TEST(test_dynamic_same_bytes_and_growth)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("ls-growth");
	struct gs_model m = { 256, 0, 3 };

	for (d = 0; d < ndev; d++)
		scaled_run(devs[d], "loss_scale=dynamic init_scale=256 growth_interval=3",
			   m, 1, 11, NULL, 0, &rng);
}
END_TEST

/* planted inf and NaN: skipped, halved, the counter restarted */
START_TEST(test_dynamic_overflow_skips_and_halves)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("ls-overflow");
	static const int bad[] = { 2, 3, 7, 0 };
	struct gs_model m = { 65536, 0, 4 };

	for (d = 0; d < ndev; d++)
		scaled_run(devs[d], "loss_scale=dynamic growth_interval=4", m,
			   1, 12, bad, 0, &rng);
}
END_TEST

/* asynchronous steps move the scale alike, read when asked */
START_TEST(test_dynamic_async_steps)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("ls-async");
	static const int bad[] = { 4, 0 };
	struct gs_model m = { 8, 0, 2 };

	for (d = 0; d < ndev; d++)
		scaled_run(devs[d], "loss_scale=dynamic init_scale=8 growth_interval=2",
			   m, 1, 9, bad, 1, &rng);
}
END_TEST

/* the default GradScaler numbers: 65536, 2000 */
START_TEST(test_dynamic_defaults)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs);
	struct gpo_optim *opt;
	double v;
	char buf[1024];

	ck_assert(!gpo_optim_new(devs[ndev - 1], GPO_SGD, &opt));
	ck_assert(!gpo_optim_get(opt, -1, "loss_scale", &v));
	ck_assert(v == 1);
	ck_assert(!gpo_optim_get(opt, -1, "init_scale", &v));
	ck_assert(v == 65536);
	ck_assert(!gpo_optim_get(opt, -1, "growth_interval", &v));
	ck_assert(v == 2000);
	ck_assert(!gpo_optim_configure(opt, -1, "loss_scale=dynamic"));
	ck_assert(!gpo_optim_get(opt, -1, "loss_scale", &v));
	ck_assert(v == 0);
	ck_assert(gpo_optim_describe(opt, -1, buf, sizeof(buf)) > 0);
	ck_assert_msg(strstr(buf, "loss_scale=dynamic\n"), "%s", buf);
	/* gpo_optim_set's number for dynamic is 0 */
	ck_assert(!gpo_optim_set(opt, -1, "loss_scale", 32));
	ck_assert(!gpo_optim_get(opt, -1, "loss_scale", &v));
	ck_assert(v == 32);
	ck_assert(!gpo_optim_set(opt, -1, "loss_scale", 0));
	ck_assert(gpo_optim_describe(opt, -1, buf, sizeof(buf)) > 0);
	ck_assert_msg(strstr(buf, "loss_scale=dynamic\n"), "%s", buf);
	gpo_optim_free(opt);
}
END_TEST

/* a fixed scale unscales and never moves; skips on overflow */
START_TEST(test_fixed_scale)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("ls-fixed");
	static const int bad[] = { 3, 0 };
	struct gs_model m = { 1024, 0, 0 };

	for (d = 0; d < ndev; d++)
		scaled_run(devs[d], "loss_scale=1024 growth_interval=1", m, 0,
			   6, bad, 0, &rng);
}
END_TEST

/* growth stops short of inf: 2^127 stays */
START_TEST(test_growth_never_to_inf)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("ls-max");
	struct gs_model m = { ldexp(1, 125), 0, 1 };

	/* gradients of +-2 times 2^127 would overflow: +-1e-30 fits */
	for (d = 0; d < ndev; d++) {
		struct gpo_optim *opt;
		float g[TOTAL], p[TOTAL];
		struct gpo_step_info info;
		int i, k;

		m.scale = ldexp(1, 125);
		m.good = 0;
		tu_fill(p, TOTAL, &rng, -1, 1);
		opt = new_opt(devs[d], "loss_scale=dynamic growth_interval=1 init_scale=4.2535295865117308e+37",
			      p);
		for (i = 0; i < 4; i++) {
			tu_fill(g, TOTAL, &rng, -1e-30, 1e-30);
			for (k = 0; k < TOTAL; k++)
				g[k] = (float)(g[k] * m.scale);
			ck_assert(!gpo_optim_write(opt, "grad", NULL, g,
						   sizeof(g)));
			ck_assert(!gpo_optim_step(opt, &info));
			ck_assert(!info.skipped);
			gs_update(&m, 0);
			ck_assert_msg(info.loss_scale == m.scale,
				      "%s step %d: %g, not %g",
				      tu_device_id(devs[d]), i,
				      info.loss_scale, m.scale);
		}
		ck_assert(m.scale == ldexp(1, 127));
		gpo_optim_free(opt);
	}
}
END_TEST

/* bad settings: -EINVAL, a message, nothing changed */
START_TEST(test_bad_settings_refused)
{
	static const char *const bad[] = {
		"loss_scale=dyn", "loss_scale=-1", "loss_scale=1e39",
		"init_scale=0", "init_scale=-2", "init_scale=1e40",
		"growth_interval=0", "growth_interval=2.5",
		"growth_interval=16777217", "loss_scale=dynamic init_scale=0",
	};
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs);
	struct gpo_optim *opt;
	char before[1024], after[1024];
	size_t i;

	ck_assert(!gpo_optim_new(devs[ndev - 1], GPO_ADAM, &opt));
	ck_assert(!gpo_optim_configure(opt, -1, "loss_scale=64"));
	ck_assert(gpo_optim_describe(opt, -1, before, sizeof(before)) > 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(gpo_optim_configure(opt, -1, bad[i]) == -EINVAL,
			      "%s accepted", bad[i]);
		ck_assert_msg(strlen(gpo_errmsg()) > 0, "%s: no message",
			      bad[i]);
		ck_assert(gpo_optim_describe(opt, -1, after, sizeof(after)) > 0);
		ck_assert_str_eq(before, after);
	}
	/* the built-in objectives' gradients are unscaled: refused */
	{
		static const uint64_t three = 3;
		struct gpo_optim *o;
		double loss;

		ck_assert(!gpo_optim_new(devs[ndev - 1], GPO_SGD, &o));
		ck_assert(gpo_optim_add_tensor(o, "x", 1, &three, 0) >= 0);
		ck_assert(!gpo_optim_configure(o, -1, "loss_scale=dynamic"));
		ck_assert_int_eq(gpo_optim_objective(o, "quadratic", &loss),
				 -EINVAL);
		ck_assert(!gpo_optim_configure(o, -1, "loss_scale=1"));
		ck_assert(!gpo_optim_objective(o, "quadratic", &loss));
		gpo_optim_free(o);
	}
	ck_assert_int_eq(gpo_optim_loss_scale(NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(gpo_optim_loss_scale(opt, NULL, NULL), -EINVAL);
	gpo_optim_free(opt);
}
END_TEST

/* ---- training ------------------------------------------------------------ */

#define NS	96		/* samples */
#define NX	5		/* features */

/* a safetensors dataset: x [NS, NX] F32, y [NS] I32; @huge: samples */
static void write_dataset(const char *path, uint64_t *rng, int huge_lo,
			  int huge_hi)
{
	float x[NS * NX];
	int32_t y[NS];
	char hdr[256];
	uint64_t hlen;
	FILE *f;
	int i, n;

	tu_fill(x, NS * NX, rng, -1, 1);
	for (i = 0; i < NS; i++)
		y[i] = (int32_t)(tu_rand(rng, 0, 3));
	/*
	 * both signs: a ReLU unit whose first weight is negative passes the
	 * negative ones, so the batch overflows whatever the weights' signs
	 * (with +3e38 alone, a draw where all 7 were negative did not)
	 */
	for (i = huge_lo; i < huge_hi; i++)
		x[i * NX] = i & 1 ? 3e38f : -3e38f;
	n = snprintf(hdr, sizeof(hdr),
		     "{\"x\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%d]},"
		     "\"y\":{\"dtype\":\"I32\",\"shape\":[%d],\"data_offsets\":[%d,%d]}}",
		     NS, NX, NS * NX * 4, NS, NS * NX * 4, NS * NX * 4 + NS * 4);
	while (n % 8)
		hdr[n++] = ' ';
	hlen = n;
	f = fopen(path, "wb");
	ck_assert(f);
	ck_assert(fwrite(&hlen, 8, 1, f) == 1);
	ck_assert(fwrite(hdr, 1, n, f) == (size_t)n);
	ck_assert(fwrite(x, 4, NS * NX, f) == NS * NX);
	ck_assert(fwrite(y, 4, NS, f) == NS);
	ck_assert(!fclose(f));
}

struct run {
	struct gpo_optim *opt;
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_train *t;
};

static void run_open(struct run *r, struct gpo_device *dev, const char *hp,
		     const char *data, const float *p0, size_t n)
{
	ck_assert(!gpo_optim_new(dev, GPO_ADAMW, &r->opt));
	ck_assert_msg(!gpo_optim_configure(r->opt, -1, hp), "%s",
		      gpo_errmsg());
	ck_assert_msg(!gpo_model_new(r->opt, "mlp:5x7x3", NULL, &r->m), "%s",
		      gpo_errmsg());
	ck_assert_uint_eq(gpo_optim_numel(r->opt), n);
	ck_assert(!gpo_optim_write(r->opt, "param", NULL, p0, n * 4));
	ck_assert_msg(!gpo_dataset_open(data, 0, &r->ds), "%s", gpo_errmsg());
	ck_assert_msg(!gpo_train_new(r->m, r->ds, "batch_size=16 shuffle=0",
				     &r->t), "%s", gpo_errmsg());
}

static void run_close(struct run *r)
{
	gpo_train_free(r->t);
	gpo_dataset_free(r->ds);
	gpo_model_free(r->m);
	gpo_optim_free(r->opt);
}

#define NP (5 * 7 + 7 + 7 * 3 + 3)

/*
 * Training with loss_scale=dynamic: the same parameters as without while
 * no step overflows (the scale doubling on the way); with a batch of
 * huge inputs (samples 32..47: the third batch) that step is skipped,
 * the scale halves and the parameters stay.
 */
START_TEST(test_training_scaled_same_bytes)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, i;
	uint64_t rng = tu_rng("ls-train");
	char path[] = "/tmp/gpuopt-ls-XXXXXX", huge[] = "/tmp/gpuopt-ls-XXXXXX";
	float p0[NP], pa[NP], pb[NP];
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = mkstemp(huge);
	ck_assert_int_ge(fd, 0);
	close(fd);
	write_dataset(path, &rng, 0, 0);
	rng = tu_rng("ls-train");
	write_dataset(huge, &rng, 32, 48);
	tu_fill(p0, NP, &rng, -0.5, 0.5);
	for (d = 0; d < ndev; d++) {
		struct gpo_train_result res;
		struct run a, b, c;
		double scale = 1024;

		run_open(&a, devs[d], "lr=0.01", path, p0, NP);
		run_open(&b, devs[d], "lr=0.01 loss_scale=dynamic init_scale=1024 growth_interval=2",
			 path, p0, NP);
		for (i = 1; i <= 8; i++) {
			ck_assert(!gpo_train_step(a.t, &res));
			ck_assert(!res.skipped);
			ck_assert(res.loss_scale == 1);
			ck_assert_msg(!gpo_train_step(b.t, &res), "%s",
				      gpo_errmsg());
			ck_assert(!res.skipped);
			if (i % 2 == 0)
				scale *= 2;
			ck_assert_msg(res.loss_scale == scale,
				      "%s step %d: scale %g, not %g",
				      tu_device_id(devs[d]), i,
				      res.loss_scale, scale);
		}
		read_n(a.opt, "param", pa, NP);
		read_n(b.opt, "param", pb, NP);
		ck_assert_msg(!memcmp(pa, pb, sizeof(pa)),
			      "%s: the scaled run differs",
			      tu_device_id(devs[d]));
		/* the scale really reached the gradients: step 8 used 2^13 */
		read_n(a.opt, "grad", pa, NP);
		read_n(b.opt, "grad", pb, NP);
		for (i = 0; i < NP; i++)
			ck_assert_msg(pb[i] == pa[i] * 8192.0f,
				      "%s grad %d: %g, not %g * 8192",
				      tu_device_id(devs[d]), i, pb[i], pa[i]);
		run_close(&a);
		run_close(&b);

		/* the third batch overflows */
		run_open(&c, devs[d], "lr=0.01 loss_scale=dynamic growth_interval=100",
			 huge, p0, NP);
		for (i = 1; i <= 4; i++) {
			ck_assert(!gpo_train_step(c.t, &res));
			if (i == 2)
				read_n(c.opt, "param", pa, NP);
			ck_assert_int_eq(res.skipped, i == 3);
			ck_assert(res.loss_scale == (i < 3 ? 65536 : 32768));
			if (i == 3) {
				read_n(c.opt, "param", pb, NP);
				ck_assert(!memcmp(pa, pb, sizeof(pa)));
			}
		}
		ck_assert_uint_eq(gpo_optim_steps_skipped(c.opt), 1);
		ck_assert_uint_eq(gpo_optim_steps_done(c.opt), 3);
		run_close(&c);
	}
	unlink(path);
	unlink(huge);
}
END_TEST

/* ---- checkpoints ---------------------------------------------------------- */

/* @path's header as JSON, and its data after it */
static json_t *file_header(const char *path, char **data, size_t *dlen)
{
	size_t len;
	char *buf = cu_slurp(path, &len);
	uint64_t hlen;
	json_error_t e;
	json_t *root;

	ck_assert_ptr_nonnull(buf);
	memcpy(&hlen, buf, 8);
	root = json_loadb(buf + 8, hlen, 0, &e);
	ck_assert_msg(root, "%s", e.text);
	*dlen = len - 8 - hlen;
	*data = malloc(*dlen);
	ck_assert(*data);
	memcpy(*data, buf + 8 + hlen, *dlen);
	free(buf);
	return root;
}

/* write @root (its header checksum made anew) and @data to @path */
static void file_write(const char *path, json_t *root, const char *data,
		       size_t dlen)
{
	json_t *meta = json_object_get(root, "__metadata__");
	char hex[17], *text;
	uint64_t sum, hl;
	size_t tl;
	FILE *f;

	ck_assert_int_eq(gpo__ckpt_header_sum(root, &sum), 0);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)sum);
	json_object_set_new(meta, CKPT_META_HDR_XXH64, json_string(hex));
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	tl = strlen(text);
	hl = (tl + 7) / 8 * 8;
	f = fopen(path, "wb");
	ck_assert(f);
	ck_assert(fwrite(&hl, 8, 1, f) == 1);
	ck_assert(fwrite(text, 1, tl, f) == tl);
	for (; tl < hl; tl++)
		ck_assert(fputc(' ', f) == ' ');
	ck_assert(fwrite(data, 1, dlen, f) == dlen);
	ck_assert(!fclose(f));
	free(text);
}

static const char *meta_str(json_t *root, const char *key)
{
	return json_string_value(json_object_get(
		json_object_get(root, "__metadata__"), key));
}

/* one step of @opt with gradients @g times its scale now */
static void scaled_step(struct gpo_optim *opt, const float *g, int bad)
{
	float gs[TOTAL];
	double s;
	int k;

	ck_assert(!gpo_optim_loss_scale(opt, &s, NULL));
	for (k = 0; k < TOTAL; k++)
		gs[k] = (float)(g[k] * s);
	if (bad)
		gs[5] = INFINITY;
	ck_assert(!gpo_optim_write(opt, "grad", NULL, gs, sizeof(gs)));
	ck_assert(!gpo_optim_step(opt, NULL));
}

/*
 * A checkpoint keeps the loss scale, its counter and the setting: a fresh
 * optimizer restored from it goes on to the same bytes and scales. The
 * metadata says the precision mode. A file without them (an older one)
 * still restores, with loss scaling as its hyperparameters say (off); bad
 * values and another precision are refused, nothing changed.
 */
START_TEST(test_checkpoint_keeps_the_scale)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, i;
	uint64_t rng = tu_rng("ls-ckpt"), good;
	char path[] = "/tmp/gpuopt-lsck-XXXXXX", old[] = "/tmp/gpuopt-lsck-XXXXXX";
	const char *cfg = "lr=0.01 loss_scale=dynamic init_scale=4096 growth_interval=3";
	float p0[TOTAL], g[6][TOTAL];
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = mkstemp(old);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (d = 0; d < ndev; d++) {
		struct gpo_optim *a, *b;
		json_t *root, *groups, *hp;
		char *data, *text, before[2048], after[2048];
		size_t dlen;
		double s, v;

		tu_fill(p0, TOTAL, &rng, -1, 1);
		for (i = 0; i < 6; i++)
			tu_fill(g[i], TOTAL, &rng, -1, 1);
		a = new_opt(devs[d], cfg, p0);
		/* 1 good, 1 overflow (2048), 1 good: counter 1 */
		scaled_step(a, g[0], 0);
		scaled_step(a, g[1], 1);
		scaled_step(a, g[2], 0);
		ck_assert(!gpo_optim_loss_scale(a, &s, &good));
		ck_assert(s == 2048 && good == 1);
		ck_assert_msg(!gpo_optim_save(a, path, 0), "%s", gpo_errmsg());

		b = new_opt(devs[d], "lr=0.01", p0);
		ck_assert_msg(!gpo_optim_restore(b, path, 0), "%s",
			      gpo_errmsg());
		ck_assert(!gpo_optim_get(b, -1, "loss_scale", &v));
		ck_assert(v == 0);
		ck_assert(!gpo_optim_get(b, -1, "growth_interval", &v));
		ck_assert(v == 3);
		ck_assert(!gpo_optim_loss_scale(b, &s, &good));
		ck_assert_msg(s == 2048 && good == 1, "%s: restored %g %llu",
			      tu_device_id(devs[d]), s,
			      (unsigned long long)good);
		/* two more good steps: 4096 at the second, in both */
		for (i = 3; i < 5; i++) {
			scaled_step(a, g[i], 0);
			scaled_step(b, g[i], 0);
		}
		ck_assert(!gpo_optim_loss_scale(b, &s, &good));
		ck_assert(s == 4096 && good == 0);
		same_bytes(a, b, "restored");

		/* the metadata */
		root = file_header(path, &data, &dlen);
		ck_assert_str_eq(meta_str(root, CKPT_META_LOSS_SCALE), "2048");
		ck_assert_str_eq(meta_str(root, CKPT_META_LOSS_GOOD), "1");
		ck_assert_str_eq(meta_str(root, CKPT_META_PRECISION),
				 "{\"exp_avg\":\"f32\",\"exp_avg_sq\":\"f32\",\"grad\":\"f32\",\"param\":\"f32\"}");

		/* another precision: refused, nothing changed */
		ck_assert(gpo_optim_describe(b, -1, before, sizeof(before)) > 0);
		json_object_set_new(json_object_get(root, "__metadata__"),
				    CKPT_META_PRECISION,
				    json_string("{\"param\":\"f16\",\"grad\":\"f32\"}"));
		file_write(old, root, data, dlen);
		ck_assert_int_eq(gpo_optim_restore(b, old, 0), -EINVAL);
		ck_assert_msg(strstr(gpo_errmsg(), "param is f16"), "%s",
			      gpo_errmsg());
		ck_assert(gpo_optim_describe(b, -1, after, sizeof(after)) > 0);
		ck_assert_str_eq(before, after);
		ck_assert(!gpo_optim_loss_scale(b, &s, &good));
		ck_assert(s == 4096 && good == 0);

		/* a bad scale: refused */
		json_object_del(json_object_get(root, "__metadata__"),
				CKPT_META_PRECISION);
		json_object_set_new(json_object_get(root, "__metadata__"),
				    CKPT_META_LOSS_SCALE, json_string("-3"));
		file_write(old, root, data, dlen);
		ck_assert_int_eq(gpo_optim_restore(b, old, 0), -EPROTO);
		ck_assert(!gpo_optim_loss_scale(b, &s, &good));
		ck_assert(s == 4096 && good == 0);
		/* one key without the other: refused */
		json_object_del(json_object_get(root, "__metadata__"),
				CKPT_META_LOSS_SCALE);
		file_write(old, root, data, dlen);
		ck_assert_int_eq(gpo_optim_restore(b, old, 0), -EPROTO);

		/* an older file: no loss scale, no precision, no such hparams */
		json_object_del(json_object_get(root, "__metadata__"),
				CKPT_META_LOSS_GOOD);
		groups = json_loads(meta_str(root, CKPT_META_GROUPS), 0, NULL);
		ck_assert_ptr_nonnull(groups);
		hp = json_object_get(json_array_get(groups, 0), "hparams");
		ck_assert(!json_object_del(hp, "loss_scale"));
		ck_assert(!json_object_del(hp, "init_scale"));
		ck_assert(!json_object_del(hp, "growth_interval"));
		ck_assert(!json_object_del(hp, "master_weights"));
		text = json_dumps(groups, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_object_set_new(json_object_get(root, "__metadata__"),
				    CKPT_META_GROUPS, json_string(text));
		free(text);
		json_decref(groups);
		file_write(old, root, data, dlen);
		ck_assert_msg(!gpo_optim_restore(b, old, 0), "%s",
			      gpo_errmsg());
		ck_assert(!gpo_optim_get(b, -1, "loss_scale", &v));
		ck_assert(v == 1);
		ck_assert(!gpo_optim_loss_scale(b, &s, &good));
		ck_assert(s == 1 && good == 0);
		json_decref(root);
		free(data);
		gpo_optim_free(a);
		gpo_optim_free(b);
	}
	unlink(path);
	unlink(old);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loss_scale");
	TCase *tc = tcase_create("loss_scale");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_dynamic_defaults);
	tcase_add_test(tc, test_dynamic_same_bytes_and_growth);
	tcase_add_test(tc, test_dynamic_overflow_skips_and_halves);
	tcase_add_test(tc, test_dynamic_async_steps);
	tcase_add_test(tc, test_fixed_scale);
	tcase_add_test(tc, test_growth_never_to_inf);
	tcase_add_test(tc, test_bad_settings_refused);
	tcase_add_test(tc, test_training_scaled_same_bytes);
	tcase_add_test(tc, test_checkpoint_keeps_the_scale);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
