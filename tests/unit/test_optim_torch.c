// SPDX-License-Identifier: MIT
/*
 * test_optim_torch.c - trajectories recorded from PyTorch 1.13 itself
 * (tests/data/gen_optim_refs.py -> tests/data/torch/), replayed through
 * gpuopt on every device: the same initial parameters, the same gradients,
 * the same GradScaler unscaling and clip_grad_norm_, and after every step
 * gpuopt's parameters must match torch's, at the end its state too, to a
 * relative error below 1e-5 (with the float64 reference run alongside for
 * the floor near cancellation, see ref.c; the reference must match torch
 * as well).
 *
 * The data directory is tests/data (the tests run from the repository
 * root) or GPUOPT_TEST_DATA; missing data is a failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"
#include "testutil.h"

#define MAX_STEPS	64
#define MAX_T		4
#define MAX_STATE	16

struct torch_case {
	char name[64];
	enum gpo_optim_kind kind;
	char config[1024];
	int steps;
	int ntensors;
	char tname[MAX_T][16];
	int ndim[MAX_T];
	uint64_t shape[MAX_T][8];
	size_t n[MAX_T];
	float *init[MAX_T];
	float *grad[MAX_STEPS + 1][MAX_T];
	float *param[MAX_STEPS + 1][MAX_T];
	double norm[MAX_STEPS + 1];	/* NaN: none recorded */
	int skip[MAX_STEPS + 1];
	int nstate;
	char sslot[MAX_STATE][32];
	int stensor[MAX_STATE];
	float *state[MAX_STATE];
};

static int tensor_index(const struct torch_case *c, const char *name)
{
	int t;

	for (t = 0; t < c->ntensors; t++)
		if (!strcmp(c->tname[t], name))
			return t;
	ck_abort_msg("%s: no tensor '%s'", c->name, name);
	return -1;
}

/* the rest of the line: exactly n float32 values */
static float *read_values(const struct torch_case *c, char **save, size_t n,
			  int line)
{
	float *v = malloc(n * sizeof(float));
	char *tok, *end;
	size_t i;

	ck_assert_ptr_nonnull(v);
	for (i = 0; i < n; i++) {
		tok = strtok_r(NULL, " \n", save);
		ck_assert_msg(tok, "%s:%d: %zu values, want %zu", c->name, line,
			      i, n);
		v[i] = strtof(tok, &end);
		ck_assert_msg(!*end, "%s:%d: bad value '%s'", c->name, line,
			      tok);
	}
	ck_assert_msg(!strtok_r(NULL, " \n", save), "%s:%d: too many values",
		      c->name, line);
	return v;
}

static int read_step(const struct torch_case *c, char **save, int line)
{
	char *tok = strtok_r(NULL, " \n", save);
	int step = tok ? atoi(tok) : 0;

	ck_assert_msg(step >= 1 && step <= c->steps, "%s:%d: bad step",
		      c->name, line);
	return step;
}

static void load_case(const char *name, struct torch_case *c)
{
	char rel[128], path[512], *line = NULL, *save, *key, *tok;
	size_t cap = 0;
	int lineno = 0, t, step, i;
	FILE *f;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	for (i = 0; i <= MAX_STEPS; i++)
		c->norm[i] = NAN;
	snprintf(rel, sizeof(rel), "torch/%s.txt", name);
	tu_data_path(path, sizeof(path), rel);
	f = fopen(path, "r");
	ck_assert_msg(f, "cannot open %s: run from the repository root, set GPUOPT_TEST_DATA, or regenerate with /usr/bin/python3 tests/data/gen_optim_refs.py",
		      path);
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		key = strtok_r(line, " \n", &save);
		if (!key || key[0] == '#')
			continue;
		if (!strcmp(key, "optimizer")) {
			tok = strtok_r(NULL, " \n", &save);
			c->kind = gpo_optim_kind_parse(tok ? tok : "");
			ck_assert_int_ge(c->kind, 0);
		} else if (!strcmp(key, "config")) {
			tok = strtok_r(NULL, "\n", &save);
			snprintf(c->config, sizeof(c->config), "%s",
				 tok ? tok : "");
		} else if (!strcmp(key, "steps")) {
			c->steps = atoi(strtok_r(NULL, " \n", &save));
			ck_assert_int_le(c->steps, MAX_STEPS);
		} else if (!strcmp(key, "tensor")) {
			t = c->ntensors++;
			ck_assert_int_le(c->ntensors, MAX_T);
			snprintf(c->tname[t], sizeof(c->tname[t]), "%s",
				 strtok_r(NULL, " \n", &save));
			c->ndim[t] = atoi(strtok_r(NULL, " \n", &save));
			c->n[t] = 1;
			for (i = 0; i < c->ndim[t]; i++) {
				c->shape[t][i] = strtoull(strtok_r(NULL, " \n",
								   &save),
							  NULL, 10);
				c->n[t] *= c->shape[t][i];
			}
		} else if (!strcmp(key, "init")) {
			t = tensor_index(c, strtok_r(NULL, " \n", &save));
			c->init[t] = read_values(c, &save, c->n[t], lineno);
		} else if (!strcmp(key, "grad") || !strcmp(key, "param")) {
			int grad = key[0] == 'g';
			float *v;

			step = read_step(c, &save, lineno);
			t = tensor_index(c, strtok_r(NULL, " \n", &save));
			v = read_values(c, &save, c->n[t], lineno);
			if (grad)
				c->grad[step][t] = v;
			else
				c->param[step][t] = v;
		} else if (!strcmp(key, "norm")) {
			step = read_step(c, &save, lineno);
			c->norm[step] = strtod(strtok_r(NULL, " \n", &save),
					       NULL);
		} else if (!strcmp(key, "skip")) {
			c->skip[read_step(c, &save, lineno)] = 1;
		} else if (!strcmp(key, "state")) {
			i = c->nstate++;
			ck_assert_int_le(c->nstate, MAX_STATE);
			snprintf(c->sslot[i], sizeof(c->sslot[i]), "%s",
				 strtok_r(NULL, " \n", &save));
			t = tensor_index(c, strtok_r(NULL, " \n", &save));
			c->stensor[i] = t;
			c->state[i] = read_values(c, &save, c->n[t], lineno);
		} else {
			ck_abort_msg("%s:%d: unknown record '%s'", path, lineno,
				     key);
		}
	}
	free(line);
	fclose(f);
	ck_assert_msg(c->steps >= 20 && c->ntensors >= 1 && c->config[0],
		      "%s: incomplete", path);
	for (t = 0; t < c->ntensors; t++) {
		ck_assert_msg(c->init[t], "%s: no init for %s", path,
			      c->tname[t]);
		for (step = 1; step <= c->steps; step++)
			ck_assert_msg(c->grad[step][t] && c->param[step][t],
				      "%s: step %d of %s missing", path, step,
				      c->tname[t]);
	}
}

static void free_case(struct torch_case *c)
{
	int t, s;

	for (t = 0; t < MAX_T; t++) {
		free(c->init[t]);
		for (s = 0; s <= MAX_STEPS; s++) {
			free(c->grad[s][t]);
			free(c->param[s][t]);
		}
	}
	for (s = 0; s < MAX_STATE; s++)
		free(c->state[s]);
}

/* torch's @want (float32) against gpuopt's @got, floor from the reference */
static double versus_torch(struct ref_run *rr, const struct torch_case *c,
			   int t, const char *slot, const float *want,
			   int step)
{
	const double *mag = ref_mag(&rr->ref, t, slot);
	const double *exact = ref_data(&rr->ref, t, slot);
	size_t i, n = c->n[t];
	float *got = malloc(n * 4);
	double *w = malloc(n * 8), err, ref_err;
	int ret;

	ck_assert_msg(mag && exact, "%s: the reference has no %s", c->name,
		      slot);
	tu_poison(got, n);
	ret = gpo_optim_read(rr->opt, slot, rr->names[t], got, n * 4);
	ck_assert_msg(ret == 0, "%s: read %s: %s", rr->dev_id, slot,
		      gpo_errmsg());
	for (i = 0; i < n; i++)
		w[i] = want[i];
	err = ref_compare(got, w, mag, n, NULL);
	ck_assert_msg(err < REF_TOL,
		      "%s: torch case %s, %s of %s after step %d: max rel err %g against torch",
		      rr->dev_id, c->name, slot, c->tname[t], step, err);
	/* and the reference agrees with torch: it is torch's math */
	ref_err = ref_compare(want, exact, mag, n, NULL);
	ck_assert_msg(ref_err < REF_TOL,
		      "torch case %s, %s of %s after step %d: torch is %g from the float64 reference",
		      c->name, slot, c->tname[t], step, ref_err);
	free(got);
	free(w);
	return err;
}

/* @c on @dev beside the reference; returns the worst error against torch */
static double replay_on(struct gpo_device *dev, const struct torch_case *c)
{
	struct gpo_step_info info;
	struct ref_run rr;
	uint64_t rng = 1;
	double worst = 0, err, norm;
	int t, step, i;

	rr_init(&rr, dev, c->kind, &rng);
	for (t = 0; t < c->ntensors; t++)
		rr_add_tensor(&rr, c->ndim[t], c->shape[t], 0);
	rr_configure(&rr, -1, c->config);
	for (t = 0; t < c->ntensors; t++)
		rr_write_params(&rr, t, c->init[t]);
	for (step = 1; step <= c->steps; step++) {
		for (t = 0; t < c->ntensors; t++)
			memcpy(rr.grads[t], c->grad[step][t], c->n[t] * 4);
		rr_step(&rr, &info);
		ck_assert_msg(info.skipped == c->skip[step],
			      "%s: torch case %s step %d: skipped %d, torch %d",
			      rr.dev_id, c->name, step, info.skipped,
			      c->skip[step]);
		norm = c->norm[step];
		ck_assert_msg(isnan(norm) ||
			      fabs(info.grad_norm - norm) < REF_TOL * norm,
			      "%s: torch case %s step %d: grad_norm %.9g, torch's %.9g",
			      rr.dev_id, c->name, step, info.grad_norm, norm);
		for (t = 0; t < c->ntensors; t++) {
			err = versus_torch(&rr, c, t, "param",
					   c->param[step][t], step);
			worst = err > worst ? err : worst;
		}
	}
	/* the state: torch's entries, and no others */
	rr_check(&rr);
	for (i = 0; i < c->nstate; i++) {
		err = versus_torch(&rr, c, c->stensor[i], c->sslot[i],
				   c->state[i], c->steps);
		worst = err > worst ? err : worst;
	}
	ck_assert_int_eq(gpo_optim_slot_count(rr.opt) * c->ntensors,
			 c->nstate);
	rr_free(&rr);
	return worst;
}

static void replay(const char *name)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	struct torch_case *c = calloc(1, sizeof(*c));
	double worst = 0, err;

	ck_assert_int_ge(ndev, 1);
	ck_assert_ptr_nonnull(c);
	load_case(name, c);
	for (d = 0; d < ndev; d++) {
		err = replay_on(devs[d], c);
		worst = err > worst ? err : worst;
	}
	fprintf(stderr, "torch case %s: worst rel err against torch %.3g\n",
		name, worst);
	free_case(c);
	free(c);
}

/* the cases, as MANIFEST lists them */
#define CASES(X)				\
	X(sgd)					\
	X(sgd_momentum_dampening)		\
	X(sgd_nesterov_maximize)		\
	X(adam)					\
	X(adam_amsgrad_l2)			\
	X(adam_maximize)			\
	X(adamw)				\
	X(adamw_amsgrad_maximize)		\
	X(rmsprop)				\
	X(rmsprop_centered_momentum)		\
	X(rmsprop_momentum_maximize)		\
	X(adagrad)				\
	X(adagrad_options)			\
	X(adam_clip)				\
	X(sgd_momentum_clip_below)		\
	X(adamw_grad_scale)			\
	X(sgd_grad_scale_clip)

#define DEFINE_TEST(name)				\
	START_TEST(test_torch_##name##_matches_torch)	\
	{						\
		replay(#name);				\
	}						\
	END_TEST

CASES(DEFINE_TEST)

#define NAME(name) #name,
static const char *const case_names[] = { CASES(NAME) };

/* every recorded case is replayed here, and only recorded ones */
START_TEST(test_torch_manifest_lists_every_case)
{
	char path[512], *line = NULL;
	size_t cap = 0, i, n = 0;
	FILE *f;

	tu_data_path(path, sizeof(path), "torch/MANIFEST");
	f = fopen(path, "r");
	ck_assert_msg(f, "cannot open %s", path);
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		for (i = 0; i < sizeof(case_names) / sizeof(case_names[0]); i++)
			if (!strcmp(line, case_names[i]))
				break;
		ck_assert_msg(i < sizeof(case_names) / sizeof(case_names[0]),
			      "MANIFEST case %s has no test", line);
		n++;
	}
	ck_assert_uint_eq(n, sizeof(case_names) / sizeof(case_names[0]));
	free(line);
	fclose(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_torch");
	TCase *tc = tcase_create("torch");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_torch_manifest_lists_every_case);
#define ADD(name) tcase_add_test(tc, test_torch_##name##_matches_torch);
	CASES(ADD)
	suite_add_tcase(s, tc);
	return tu_run(s);
}
