// SPDX-License-Identifier: MIT
/*
 * test_sched.c - learning-rate schedules against torch 1.13's
 * lr_scheduler, and driving an optimizer
 *
 * The references are tests/data/sched/<case>.csv, written by
 * tests/data/gen_sched_refs.py; the directory is $GPUOPT_TEST_DATA/sched
 * or tests/data/sched from the repository root. Missing data fails.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define MAX_ROWS	1024
#define MAX_CASES	64
#define LINE_MAX_LEN	2048

/* torch's lr within 1e-9 relative, or 1e-12 absolute where it is ~0 */
#define REL_TOL		1e-9
#define ABS_TOL		1e-12

static const char *const kinds[] = {
	"constant", "step", "multistep", "exponential", "cosine",
	"cosine_restarts", "linear", "polynomial", "onecycle", "plateau",
};

struct ref_case {
	char name[128];
	char kind[32];
	char settings[512];
	double base[2];
	int rows;
	double lr[MAX_ROWS][2];
	double metric[MAX_ROWS];
};

struct errs {
	double rel;			/* max |got - want| / |want| */
	double abs;			/* max |got - want| */
};

/* ---- reading the references ---------------------------------------------- */

static void data_dir(char *buf, size_t len)
{
	const char *root = getenv("GPUOPT_TEST_DATA");

	snprintf(buf, len, "%s/sched", root && *root ? root : "tests/data");
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the sorted *.csv names of the data directory; fails when there are none */
static int list_cases(char **names, int max)
{
	char dir[512];
	struct dirent *de;
	DIR *d;
	int n = 0;

	data_dir(dir, sizeof(dir));
	d = opendir(dir);
	ck_assert_msg(d,
		      "no reference data in %s: %s (run from the repository root or set GPUOPT_TEST_DATA)",
		      dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 5 || strcmp(de->d_name + len - 4, ".csv"))
			continue;
		ck_assert_int_lt(n, max);
		names[n] = strdup(de->d_name);
		ck_assert_ptr_nonnull(names[n]);
		n++;
	}
	closedir(d);
	ck_assert_msg(n > 0, "no *.csv in %s", dir);
	qsort(names, n, sizeof(*names), cmp_names);
	return n;
}

static void free_names(char **names, int n)
{
	while (n--)
		free(names[n]);
}

/* "# kind=K settings..." */
static void parse_config(struct ref_case *rc, const char *line)
{
	const char *p = line + 7, *end;

	ck_assert_msg(!strncmp(line, "# kind=", 7), "%s: bad first line",
		      rc->name);
	end = p + strcspn(p, " \n");
	ck_assert_int_lt(end - p, (long)sizeof(rc->kind));
	memcpy(rc->kind, p, end - p);
	rc->kind[end - p] = '\0';
	snprintf(rc->settings, sizeof(rc->settings), "%s", end);
	rc->settings[strcspn(rc->settings, "\n")] = '\0';
}

/* "# torch=V base_lr0=X base_lr1=Y" */
static void parse_bases(struct ref_case *rc, const char *line)
{
	const char *b0 = strstr(line, "base_lr0=");
	const char *b1 = strstr(line, "base_lr1=");

	ck_assert_msg(b0 && b1, "%s: no base lrs", rc->name);
	rc->base[0] = strtod(b0 + 9, NULL);
	rc->base[1] = strtod(b1 + 9, NULL);
}

static struct ref_case *case_load(const char *name)
{
	char dir[512], path[1024], line[LINE_MAX_LEN];
	struct ref_case *rc = calloc(1, sizeof(*rc));
	FILE *f;
	int e;

	ck_assert_ptr_nonnull(rc);
	snprintf(rc->name, sizeof(rc->name), "%s", name);
	data_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	parse_config(rc, line);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	parse_bases(rc, line);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		ck_assert_int_lt(rc->rows, MAX_ROWS);
		ck_assert_msg(sscanf(line, "%d,%lf,%lf,%lf", &e,
				     &rc->lr[rc->rows][0], &rc->lr[rc->rows][1],
				     &rc->metric[rc->rows]) == 4 &&
			      e == rc->rows, "%s: bad row %d", name, rc->rows);
		rc->rows++;
	}
	fclose(f);
	ck_assert_msg(rc->rows >= 201, "%s: %d rows, want >= 201", name,
		      rc->rows);
	return rc;
}

/* ---- helpers ------------------------------------------------------------- */

static struct gpo_sched *sched_make(const char *kind, const char *settings)
{
	struct gpo_sched *s;

	ck_assert_msg(!gpo_sched_new(kind, &s), "new %s: %s", kind,
		      gpo_errmsg());
	ck_assert_msg(!gpo_sched_configure(s, settings), "%s %s: %s", kind,
		      settings, gpo_errmsg());
	return s;
}

static struct gpo_sched *case_sched(const struct ref_case *rc)
{
	return sched_make(rc->kind, rc->settings);
}

static void check_lr(const struct ref_case *rc, int e, int g, double got,
		     struct errs *err)
{
	double want = rc->lr[e][g], d = fabs(got - want);

	ck_assert_msg(d <= REL_TOL * fabs(want) || d <= ABS_TOL,
		      "%s epoch %d group %d: lr %.17g, torch %.17g", rc->name,
		      e, g, got, want);
	if (d > err->abs)
		err->abs = d;
	if (want != 0 && d / fabs(want) > err->rel)
		err->rel = d / fabs(want);
}

/* compare epochs @from..rows-1, stepping @s in between */
static void run_rows(const struct ref_case *rc, struct gpo_sched *s,
		     int from, struct errs *err)
{
	int e, g;

	for (e = from; e < rc->rows; e++) {
		ck_assert_uint_eq(gpo_sched_last_epoch(s), e);
		for (g = 0; g < 2; g++)
			check_lr(rc, e, g, gpo_sched_lr(s, rc->base[g]), err);
		if (e + 1 < rc->rows)
			ck_assert_msg(!gpo_sched_step(s, rc->metric[e]),
				      "%s epoch %d: step: %s", rc->name, e,
				      gpo_errmsg());
	}
}

static void step_n(struct gpo_sched *s, int n, double metric)
{
	while (n--)
		ck_assert_msg(!gpo_sched_step(s, metric), "step: %s",
			      gpo_errmsg());
}

static void save(struct gpo_sched *s, char *buf, size_t len)
{
	int n = gpo_sched_save(s, buf, len);

	ck_assert_msg(n > 0 && (size_t)n < len, "save: %d %s", n,
		      gpo_errmsg());
}

#define ERR_MARK "no-such-kind-marker"

/* leave a known message, so that check_new_errmsg() sees a fresh one */
static void errmsg_mark(void)
{
	struct gpo_sched *s;

	ck_assert_int_eq(gpo_sched_new(ERR_MARK, &s), -EINVAL);
	ck_assert(strstr(gpo_errmsg(), ERR_MARK));
}

static void check_new_errmsg(const char *what)
{
	const char *msg = gpo_errmsg();

	ck_assert_msg(*msg && !strstr(msg, ERR_MARK),
		      "'%s' failed without a message", what);
}

/* ---- against torch ------------------------------------------------------- */

START_TEST(test_sched_matches_torch)
{
	const char *kind = kinds[_i];
	int i, n, cases = 0, warmed = 0;
	struct errs err = { 0, 0 };
	char *names[MAX_CASES];

	n = list_cases(names, MAX_CASES);
	for (i = 0; i < n; i++) {
		struct ref_case *rc = case_load(names[i]);
		struct gpo_sched *s;

		if (!strcmp(rc->kind, kind)) {
			s = case_sched(rc);
			run_rows(rc, s, 0, &err);
			gpo_sched_free(s);
			cases++;
			warmed += !!strstr(rc->settings, "warmup_steps=");
		}
		free(rc);
	}
	free_names(names, n);
	ck_assert_msg(cases && warmed && warmed < cases,
		      "%s: want cases with and without warmup, have %d of %d",
		      kind, warmed, cases);
	fprintf(stderr,
		"%-16s %d cases vs torch: max rel err %.3g, max abs err %.3g\n",
		kind, cases, err.rel, err.abs);
}
END_TEST

START_TEST(test_sched_save_load_round_trip_mid_schedule)
{
	char *names[MAX_CASES], line[4096], again[4096];
	uint64_t rng = tu_seed() ^ 0x5ced;
	int i, n, e, g, cut;

	n = list_cases(names, MAX_CASES);
	for (i = 0; i < n; i++) {
		struct ref_case *rc = case_load(names[i]);
		struct gpo_sched *a = case_sched(rc), *b;
		struct errs err = { 0, 0 };

		cut = 1 + (int)tu_rand(&rng, 0, rc->rows - 1);
		for (e = 0; e < cut; e++)
			step_n(a, 1, rc->metric[e]);
		save(a, line, sizeof(line));
		/* load replaces the kind too */
		b = sched_make("constant", "");
		ck_assert_msg(!gpo_sched_load(b, line), "%s: load '%s': %s",
			      rc->name, line, gpo_errmsg());
		save(b, again, sizeof(again));
		ck_assert_str_eq(line, again);
		for (e = cut; e < rc->rows; e++) {
			for (g = 0; g < 2; g++) {
				double la = gpo_sched_lr(a, rc->base[g]);
				double lb = gpo_sched_lr(b, rc->base[g]);

				ck_assert_msg(la == lb,
					      "%s epoch %d: '%s' loads as %.17g, not %.17g",
					      rc->name, e, line, lb, la);
				check_lr(rc, e, g, lb, &err);
			}
			if (e + 1 < rc->rows) {
				step_n(a, 1, rc->metric[e]);
				step_n(b, 1, rc->metric[e]);
			}
		}
		gpo_sched_free(a);
		gpo_sched_free(b);
		free(rc);
	}
	free_names(names, n);
}
END_TEST

/* ---- bad input ----------------------------------------------------------- */

static const struct bad_config {
	const char *kind;
	const char *good;		/* a valid configuration first */
	const char *bad;
} bad_configs[] = {
	{ "step", "step_size=10", "step_size=0" },
	{ "step", "step_size=10", "step_size=-3" },
	{ "step", "step_size=10", "step_size=1.5" },
	{ "step", "step_size=10", "step_size=abc" },
	{ "step", "step_size=10", "step_size=99999999999999999999" },
	{ "step", "step_size=10", "gamma=0" },
	{ "step", "step_size=10", "gamma=-0.5" },
	{ "step", "step_size=10", "gamma=" },
	{ "step", "step_size=10", "gamma" },
	{ "step", "step_size=10", "gamma=0.5x" },
	{ "step", "step_size=10", "gamma=nan" },
	{ "step", "step_size=10", "gamma=inf" },
	{ "step", "step_size=10", "gamma=1e999" },
	{ "step", "step_size=10", "t_max=5" },
	{ "step", "step_size=10", "bogus=1" },
	{ "step", "step_size=10", "last_epoch=3" },
	{ "step", "step_size=10", "kind=cosine" },
	{ "step", "step_size=10", "gamma=0.5 step_size=0" },
	{ "step", "step_size=10", "warmup_steps=-1" },
	{ "step", "step_size=10", "warmup_start_factor=0" },
	{ "step", "step_size=10", "warmup_start_factor=1.01" },
	{ "multistep", "milestones=30,80", "milestones=80,30" },
	{ "multistep", "milestones=30,80", "milestones=30,30" },
	{ "multistep", "milestones=30,80", "milestones=" },
	{ "multistep", "milestones=30,80", "milestones=30,,80" },
	{ "multistep", "milestones=30,80", "milestones=30,80," },
	{ "multistep", "milestones=30,80", "milestones=30,x" },
	{ "multistep", "milestones=30,80", "milestones=-1,5" },
	{ "multistep", "milestones=30,80",
	  /* 65 milestones: one too many */
	  "milestones=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
	  "21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,"
	  "41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,"
	  "61,62,63,64,65" },
	{ "exponential", "gamma=0.9", "gamma=0" },
	{ "exponential", "gamma=0.9", "step_size=3" },
	{ "cosine", "t_max=10", "t_max=0" },
	{ "cosine", "t_max=10", "eta_min=-0.1" },
	{ "cosine_restarts", "t_0=10", "t_0=0" },
	{ "cosine_restarts", "t_0=10", "t_mult=0" },
	{ "cosine_restarts", "t_0=10", "t_mult=1.5" },
	{ "cosine_restarts", "t_0=10", "eta_min=-1" },
	{ "linear", "", "start_factor=0" },
	{ "linear", "", "start_factor=1.5" },
	{ "linear", "", "end_factor=-0.1" },
	{ "linear", "", "end_factor=2" },
	{ "linear", "", "total_iters=0" },
	{ "polynomial", "", "total_iters=0" },
	{ "polynomial", "", "power=-1" },
	{ "onecycle", "max_lr=1 total_steps=100", "pct_start=0" },
	{ "onecycle", "max_lr=1 total_steps=100", "pct_start=1" },
	{ "onecycle", "max_lr=1 total_steps=100", "pct_start=1.2" },
	{ "onecycle", "max_lr=1 total_steps=100", "anneal_strategy=cosine" },
	{ "onecycle", "max_lr=1 total_steps=100", "anneal_strategy=2" },
	{ "onecycle", "max_lr=1 total_steps=100", "div_factor=0" },
	{ "onecycle", "max_lr=1 total_steps=100", "final_div_factor=-1" },
	{ "onecycle", "max_lr=1 total_steps=100", "max_lr=0" },
	{ "onecycle", "max_lr=1 total_steps=100", "total_steps=0" },
	{ "onecycle", "max_lr=1 total_steps=100", "three_phase=2" },
	/* pct_start * total_steps = 1: phase 1 ends where it starts */
	{ "onecycle", "max_lr=1 total_steps=100",
	  "total_steps=10 pct_start=0.1" },
	{ "plateau", "", "factor=1" },
	{ "plateau", "", "factor=1.5" },
	{ "plateau", "", "factor=-0.1" },
	{ "plateau", "", "mode=avg" },
	{ "plateau", "", "mode=2" },
	{ "plateau", "", "threshold_mode=x" },
	{ "plateau", "", "patience=-1" },
	{ "plateau", "", "cooldown=1.5" },
	{ "plateau", "", "min_lr=-1" },
	{ "plateau", "", "eps=-1" },
	{ "plateau", "", "threshold=-1" },
	{ "plateau", "", "best=3" },
	{ "constant", "", "gamma=0.1" },
};

START_TEST(test_sched_configure_rejects_bad_input)
{
	const struct bad_config *c = &bad_configs[_i];
	char before[4096], after[4096];
	struct gpo_sched *s = sched_make(c->kind, c->good);

	save(s, before, sizeof(before));
	errmsg_mark();
	ck_assert_msg(gpo_sched_configure(s, c->bad) == -EINVAL,
		      "%s '%s' was accepted", c->kind, c->bad);
	check_new_errmsg(c->bad);
	save(s, after, sizeof(after));
	ck_assert_str_eq(before, after);
	gpo_sched_free(s);
}
END_TEST

static const struct {
	const char *kind;
	const char *partial;		/* leaves a required key out */
} partial_configs[] = {
	{ "step", "gamma=0.5" },
	{ "multistep", "gamma=0.5" },
	{ "exponential", "warmup_steps=3" },
	{ "cosine", "eta_min=0.01" },
	{ "cosine_restarts", "t_mult=2" },
	{ "onecycle", "max_lr=0.5" },
	{ "onecycle", "total_steps=100" },
};

START_TEST(test_sched_missing_required_key_refuses)
{
	struct gpo_sched *s;
	char buf[64];

	ck_assert_int_eq(gpo_sched_new(partial_configs[_i].kind, &s), 0);
	ck_assert_int_eq(gpo_sched_step(s, 1.0), -EINVAL);
	ck_assert(isnan(gpo_sched_lr(s, 0.1)));
	ck_assert_int_eq(gpo_sched_save(s, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(gpo_sched_configure(s, partial_configs[_i].partial),
			 -EINVAL);
	ck_assert_int_eq(gpo_sched_step(s, 1.0), -EINVAL);
	ck_assert_uint_eq(gpo_sched_last_epoch(s), 0);
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_defaults_need_no_configure)
{
	static const char *const ready[] = {
		"constant", "linear", "polynomial", "plateau",
	};
	struct gpo_sched *s;
	size_t i;

	for (i = 0; i < sizeof(ready) / sizeof(ready[0]); i++) {
		ck_assert_int_eq(gpo_sched_new(ready[i], &s), 0);
		ck_assert(gpo_sched_lr(s, 0.1) > 0);
		ck_assert_int_eq(gpo_sched_step(s, 1.0), 0);
		gpo_sched_free(s);
	}
}
END_TEST

START_TEST(test_sched_configure_after_step_is_ebusy)
{
	struct gpo_sched *s = sched_make("cosine", "t_max=10");

	ck_assert_int_eq(gpo_sched_configure(s, "eta_min=0.1"), 0);
	step_n(s, 1, 0);
	ck_assert_int_eq(gpo_sched_configure(s, "eta_min=0.2"), -EBUSY);
	ck_assert_int_eq(gpo_sched_configure(s, ""), -EBUSY);
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_unknown_kind_is_einval)
{
	static const char *const names[] = {
		"cosine_annealing", "", "Step", "onecycle ",
	};
	struct gpo_sched *s = (struct gpo_sched *)&s;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_int_eq(gpo_sched_new(names[i], &s), -EINVAL);
		ck_assert_ptr_eq(s, (struct gpo_sched *)&s);
	}
}
END_TEST

START_TEST(test_sched_null_pointers_are_einval)
{
	struct gpo_sched *s;
	char buf[256];

	ck_assert_int_eq(gpo_sched_new(NULL, &s), -EINVAL);
	ck_assert_int_eq(gpo_sched_new("step", NULL), -EINVAL);
	ck_assert_int_eq(gpo_sched_configure(NULL, "gamma=1"), -EINVAL);
	ck_assert_int_eq(gpo_sched_step(NULL, 0), -EINVAL);
	ck_assert(isnan(gpo_sched_lr(NULL, 0.1)));
	ck_assert_uint_eq(gpo_sched_last_epoch(NULL), 0);
	ck_assert_int_eq(gpo_sched_save(NULL, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(gpo_sched_load(NULL, "kind=constant last_epoch=0"),
			 -EINVAL);
	gpo_sched_free(NULL);

	s = sched_make("constant", "");
	ck_assert_int_eq(gpo_sched_configure(s, NULL), -EINVAL);
	ck_assert_int_eq(gpo_sched_save(s, NULL, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(gpo_sched_load(s, NULL), -EINVAL);
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_onecycle_past_total_steps_is_erange)
{
	struct gpo_sched *s;
	double lr;

	s = sched_make("onecycle", "max_lr=1 total_steps=10 warmup_steps=3");
	step_n(s, 13, 0);
	lr = gpo_sched_lr(s, 0.1);
	ck_assert_int_eq(gpo_sched_step(s, 0), -ERANGE);
	ck_assert_uint_eq(gpo_sched_last_epoch(s), 13);
	ck_assert(gpo_sched_lr(s, 0.1) == lr);
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_plateau_nonfinite_metric_is_einval)
{
	struct gpo_sched *s = sched_make("plateau", "warmup_steps=2");
	char before[1024], after[1024];

	/* the warmup ignores the metric */
	step_n(s, 2, NAN);
	save(s, before, sizeof(before));
	ck_assert_int_eq(gpo_sched_step(s, NAN), -EINVAL);
	ck_assert_int_eq(gpo_sched_step(s, INFINITY), -EINVAL);
	ck_assert_int_eq(gpo_sched_step(s, -INFINITY), -EINVAL);
	save(s, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(gpo_sched_step(s, 1.0), 0);
	gpo_sched_free(s);
}
END_TEST

static const char *const bad_lines[] = {
	"",
	"last_epoch=0",
	"t_max=5 kind=cosine last_epoch=0",
	"kind=nope last_epoch=0",
	"kind=cosine t_max=10",
	"kind=cosine last_epoch=3",
	"kind=cosine t_max=10 t_max=10 last_epoch=0",
	"kind=cosine t_max=10 last_epoch=1 last_epoch=1",
	"kind=cosine t_max=10 gamma=0.1 last_epoch=0",
	"kind=cosine t_max=10 bogus=1 last_epoch=0",
	"kind=cosine t_max=10 last_epoch=-1",
	"kind=cosine t_max=0 last_epoch=0",
	"kind=cosine t_max=10 last_epoch=0 kind=step",
	"kind=cosine t_max=10 last_epoch=0 junk",
	"kind=step step_size=3 warmup_start_factor=0 last_epoch=2",
	"kind=multistep milestones=5,3 last_epoch=0",
	"kind=cosine_restarts t_0=10 t_mult=2 last_epoch=15",
	"kind=cosine_restarts t_0=10 t_mult=2 last_epoch=15 t_cur=5 t_i=10",
	"kind=cosine_restarts t_0=10 t_mult=2 last_epoch=15 t_cur=6 t_i=20",
	"kind=cosine_restarts t_0=10 warmup_steps=20 last_epoch=15 "
		"t_cur=5 t_i=10",
	"kind=plateau last_epoch=0 best=0.5 num_bad_epochs=0 "
		"cooldown_counter=0 reductions=0",
	"kind=plateau last_epoch=5 best=nan num_bad_epochs=0 "
		"cooldown_counter=0 reductions=0",
	"kind=plateau last_epoch=5 best=-inf num_bad_epochs=0 "
		"cooldown_counter=0 reductions=0",
	"kind=plateau patience=3 last_epoch=5 best=0.5 num_bad_epochs=4 "
		"cooldown_counter=0 reductions=0",
	"kind=plateau last_epoch=5 best=0.5 num_bad_epochs=0 "
		"cooldown_counter=0 reductions=6",
	"kind=plateau cooldown=2 last_epoch=5 best=0.5 num_bad_epochs=0 "
		"cooldown_counter=3 reductions=1",
	"kind=plateau last_epoch=5 best=0.5 num_bad_epochs=0 "
		"cooldown_counter=0",
	"kind=onecycle max_lr=1 total_steps=10 last_epoch=11",
	"kind=onecycle max_lr=1 total_steps=10 warmup_steps=2 last_epoch=13",
};

START_TEST(test_sched_load_rejects_bad_lines)
{
	struct gpo_sched *s = sched_make("cosine", "t_max=10");
	char before[1024], after[1024];

	step_n(s, 4, 0);
	save(s, before, sizeof(before));
	errmsg_mark();
	ck_assert_msg(gpo_sched_load(s, bad_lines[_i]) == -EINVAL,
		      "'%s' was loaded", bad_lines[_i]);
	check_new_errmsg(bad_lines[_i]);
	save(s, after, sizeof(after));
	ck_assert_str_eq(before, after);
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_load_accepts_consistent_state)
{
	static const char restarts_at_15[] = "kind=cosine_restarts t_0=10 "
		"t_mult=2 last_epoch=15 t_cur=5 t_i=20";
	static const char onecycle_at_end[] = "kind=onecycle max_lr=1 "
		"total_steps=10 last_epoch=10";
	struct gpo_sched *a = sched_make("cosine_restarts", "t_0=10 t_mult=2");
	struct gpo_sched *b = sched_make("constant", "");

	step_n(a, 15, 0);
	ck_assert_int_eq(gpo_sched_load(b, restarts_at_15), 0);
	ck_assert(gpo_sched_lr(a, 0.1) == gpo_sched_lr(b, 0.1));
	ck_assert_int_eq(gpo_sched_load(b, onecycle_at_end), 0);
	ck_assert_int_eq(gpo_sched_step(b, 0), -ERANGE);
	gpo_sched_free(a);
	gpo_sched_free(b);
}
END_TEST

START_TEST(test_sched_save_reports_needed_length)
{
	struct gpo_sched *s = sched_make("multistep",
					 "milestones=3,50,700 gamma=0.25");
	char full[1024], small[10];
	int n;

	n = gpo_sched_save(s, NULL, 0);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(gpo_sched_save(s, full, sizeof(full)), n);
	ck_assert_uint_eq(strlen(full), n);
	ck_assert(strstr(full, " milestones=3,50,700 "));
	ck_assert(!strncmp(full, "kind=multistep ", 15));
	memset(small, 'x', sizeof(small));
	ck_assert_int_eq(gpo_sched_save(s, small, sizeof(small)), n);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert(!strncmp(small, full, sizeof(small) - 1));
	gpo_sched_free(s);
}
END_TEST

START_TEST(test_sched_numbers_and_words_are_one_setting)
{
	static const char *const pairs[][3] = {
		{ "onecycle",
		  "max_lr=1 total_steps=9 anneal_strategy=1 three_phase=true",
		  "max_lr=1 total_steps=9 anneal_strategy=linear "
		  "three_phase=1" },
		{ "onecycle", "max_lr=1 total_steps=9 anneal_strategy=0",
		  "max_lr=1 total_steps=9 anneal_strategy=cos" },
		{ "plateau", "mode=1 threshold_mode=1",
		  "mode=max threshold_mode=abs" },
		{ "plateau", "mode=0 threshold_mode=0",
		  "mode=min threshold_mode=rel" },
	};
	char a[1024], b[1024];
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct gpo_sched *x = sched_make(pairs[i][0], pairs[i][1]);
		struct gpo_sched *y = sched_make(pairs[i][0], pairs[i][2]);

		save(x, a, sizeof(a));
		save(y, b, sizeof(b));
		ck_assert_str_eq(a, b);
		gpo_sched_free(x);
		gpo_sched_free(y);
	}
}
END_TEST

/* ---- through the optimizer ----------------------------------------------- */

#define NA 5
#define NB 3

struct sgd_rig {
	struct gpo_optim *opt;
	struct gpo_sched *s;
	double base[2];
	uint64_t rng;
};

static void rig_init(struct sgd_rig *r, const char *kind,
		     const char *settings)
{
	const uint64_t shape_a[1] = { NA }, shape_b[1] = { NB };
	struct gpo_device *dev;
	float p[NA + NB];

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu", &dev), "cpu: %s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &r->opt), 0);
	ck_assert_int_eq(gpo_optim_add_group(r->opt), 1);
	ck_assert_int_ge(gpo_optim_add_tensor(r->opt, "a", 1, shape_a, 0), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(r->opt, "b", 1, shape_b, 1), 0);
	r->base[0] = 0.1;
	r->base[1] = 0.037;
	ck_assert_int_eq(gpo_optim_set(r->opt, 0, "lr", r->base[0]), 0);
	ck_assert_int_eq(gpo_optim_set(r->opt, 1, "lr", r->base[1]), 0);
	r->rng = tu_seed() ^ 0x59d;
	tu_fill(p, NA + NB, &r->rng, -1, 1);
	ck_assert_int_eq(gpo_optim_write(r->opt, "param", NULL, p, sizeof(p)),
			 0);
	r->s = sched_make(kind, settings);
	ck_assert_int_eq(gpo_optim_attach_sched(r->opt, r->s), 0);
}

static void rig_free(struct sgd_rig *r)
{
	gpo_optim_free(r->opt);
	gpo_sched_free(r->s);
}

/* one sgd step; checks that each group moved by its scheduled lr */
static void rig_step(struct sgd_rig *r, struct gpo_step_info *info)
{
	float p0[NA + NB], g[NA + NB], p1[NA + NB];
	double lr[2];
	int i;

	tu_fill(g, NA + NB, &r->rng, -1, 1);
	lr[0] = gpo_sched_lr(r->s, r->base[0]);
	lr[1] = gpo_sched_lr(r->s, r->base[1]);
	ck_assert_int_eq(gpo_optim_read(r->opt, "param", NULL, p0, sizeof(p0)),
			 0);
	ck_assert_int_eq(gpo_optim_write(r->opt, "grad", NULL, g, sizeof(g)),
			 0);
	ck_assert_msg(!gpo_optim_step(r->opt, info), "step: %s", gpo_errmsg());
	ck_assert_int_eq(info->skipped, 0);
	ck_assert(info->lr == lr[0]);
	ck_assert_int_eq(gpo_optim_read(r->opt, "param", NULL, p1, sizeof(p1)),
			 0);
	for (i = 0; i < NA + NB; i++) {
		double want = p0[i] - lr[i >= NA] * g[i];

		ck_assert_msg(fabs(p1[i] - want) <= 1e-6,
			      "param %d: %.9g, want %.9g (lr %g)", i, p1[i],
			      want, lr[i >= NA]);
	}
}

START_TEST(test_sched_drives_sgd_lr)
{
	struct gpo_step_info info;
	struct sgd_rig r;
	int k;

	rig_init(&r, "cosine", "t_max=10 eta_min=0.001 warmup_steps=3");
	for (k = 1; k <= 25; k++) {
		rig_step(&r, &info);
		ck_assert_uint_eq(info.step, k);
		ck_assert_uint_eq(gpo_sched_last_epoch(r.s), k);
	}
	rig_free(&r);
}
END_TEST

START_TEST(test_sched_skipped_step_does_not_advance)
{
	float g[NA + NB] = { 0 };
	struct gpo_step_info info;
	struct sgd_rig r;
	double lr;

	rig_init(&r, "exponential", "gamma=0.5");
	ck_assert_int_eq(gpo_optim_set(r.opt, -1, "check_finite", 1), 0);
	rig_step(&r, &info);
	rig_step(&r, &info);
	lr = gpo_sched_lr(r.s, r.base[0]);
	g[NA + 1] = INFINITY;
	ck_assert_int_eq(gpo_optim_write(r.opt, "grad", NULL, g, sizeof(g)),
			 0);
	ck_assert_int_eq(gpo_optim_step(r.opt, &info), 0);
	ck_assert_int_eq(info.skipped, 1);
	ck_assert_uint_eq(gpo_sched_last_epoch(r.s), 2);
	ck_assert(gpo_sched_lr(r.s, r.base[0]) == lr);
	rig_step(&r, &info);
	ck_assert(info.lr == lr);
	ck_assert_uint_eq(gpo_sched_last_epoch(r.s), 3);
	rig_free(&r);
}
END_TEST

START_TEST(test_sched_plateau_reads_optimizer_metric)
{
	struct gpo_step_info info;
	struct sgd_rig r;
	int k;

	rig_init(&r, "plateau", "patience=0 factor=0.5");
	for (k = 1; k <= 8; k++) {
		/* never better than the first: every later step cuts */
		ck_assert_int_eq(gpo_optim_set_metric(r.opt, 1.0), 0);
		rig_step(&r, &info);
		ck_assert(info.lr == r.base[0] * pow(0.5, k > 2 ? k - 2 : 0));
	}
	rig_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched");
	TCase *tc = tcase_create("sched");

	tcase_add_loop_test(tc, test_sched_matches_torch, 0,
			    sizeof(kinds) / sizeof(kinds[0]));
	tcase_add_test(tc, test_sched_save_load_round_trip_mid_schedule);
	tcase_add_loop_test(tc, test_sched_configure_rejects_bad_input, 0,
			    sizeof(bad_configs) / sizeof(bad_configs[0]));
	tcase_add_loop_test(tc, test_sched_missing_required_key_refuses, 0,
			    sizeof(partial_configs) /
			    sizeof(partial_configs[0]));
	tcase_add_test(tc, test_sched_defaults_need_no_configure);
	tcase_add_test(tc, test_sched_configure_after_step_is_ebusy);
	tcase_add_test(tc, test_sched_unknown_kind_is_einval);
	tcase_add_test(tc, test_sched_null_pointers_are_einval);
	tcase_add_test(tc, test_sched_onecycle_past_total_steps_is_erange);
	tcase_add_test(tc, test_sched_plateau_nonfinite_metric_is_einval);
	tcase_add_loop_test(tc, test_sched_load_rejects_bad_lines, 0,
			    sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, test_sched_load_accepts_consistent_state);
	tcase_add_test(tc, test_sched_save_reports_needed_length);
	tcase_add_test(tc, test_sched_numbers_and_words_are_one_setting);
	tcase_add_test(tc, test_sched_drives_sgd_lr);
	tcase_add_test(tc, test_sched_skipped_step_does_not_advance);
	tcase_add_test(tc, test_sched_plateau_reads_optimizer_metric);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
