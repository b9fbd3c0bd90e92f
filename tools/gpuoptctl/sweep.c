// SPDX-License-Identifier: MIT
/*
 * sweep.c - gpuoptctl sweep: a grid of jobs made from a template job's
 * config, run at most N at once, then ranked in a table.
 *
 *   gpuoptctl sweep lr=0.1,0.01 momentum=0,0.9 --template base --parallel 4
 *
 * The grid is every combination of the values, the first key varying
 * slowest; point i becomes job PREFIX-i. Every job is made (and its
 * config checked by the daemon) before any starts: a refused point
 * removes the jobs made so far and nothing runs.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

#define SWEEP_KEYS 16
#define SWEEP_MAX 10000		/* points */

struct sweep_key {
	char *name;
	char **vals;
	int n;
	int numeric;		/* every value a number: a number in JSON */
};

struct point {
	char name[64];
	int idx[SWEEP_KEYS];	/* the value of each key */
	int phase;		/* 0 waiting, 1 running, 2 finished */
	struct job_stat js;
};

static const char *sweep_template;
static const char *sweep_prefix;
static unsigned int sweep_parallel = 1;
static int sweep_quiet;
static int sweep_rm;

const struct option sweep_longs[] = {
	{ "template", required_argument, NULL, 't' },
	{ "parallel", required_argument, NULL, 'p' },
	{ "prefix", required_argument, NULL, 'P' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "rm", no_argument, NULL, 'R' },
	{ "json", no_argument, NULL, 'J' },
	{ "raw", no_argument, NULL, 'r' },
	{ "noheadings", no_argument, NULL, 'n' },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

int sweep_opt(int c, const char *arg)
{
	uint64_t n;

	switch (c) {
	case 't':
		sweep_template = arg;
		return 0;
	case 'p':
		if (gpo__parse_u64(arg, &n) || n < 1 || n > 4096) {
			err("sweep: --parallel takes 1 to 4096, not '%s'", arg);
			return -1;
		}
		sweep_parallel = (unsigned int)n;
		return 0;
	case 'P':
		sweep_prefix = arg;
		return 0;
	case 'q':
		sweep_quiet = 1;
		return 0;
	case 'R':
		sweep_rm = 1;
		return 0;
	}
	return table_opt(c, arg);
}

/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (isdigit((unsigned char)*s))
		while (isdigit((unsigned char)*s))
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!isdigit((unsigned char)*++s))
			return 0;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!isdigit((unsigned char)*s))
			return 0;
		while (isdigit((unsigned char)*s))
			s++;
	}
	return !*s;
}

/* KEY=V1,V2,... (or V1|V2|... when a value holds commas) */
static int key_parse(char *word, struct sweep_key *k)
{
	char *eq = strchr(word, '='), *p, *save = NULL;
	const char *sep;

	memset(k, 0, sizeof(*k));
	if (!eq || eq == word || !eq[1]) {
		err("sweep: '%s' is not KEY=V1,V2,...", word);
		return -EINVAL;
	}
	*eq = '\0';
	k->name = word;
	sep = strchr(eq + 1, '|') ? "|" : ",";
	k->vals = calloc(strlen(eq + 1) / 2 + 2, sizeof(char *));
	if (!k->vals)
		return -ENOMEM;
	k->numeric = 1;
	for (p = strtok_r(eq + 1, sep, &save); p;
	     p = strtok_r(NULL, sep, &save)) {
		k->vals[k->n++] = p;
		if (!json_number(p))
			k->numeric = 0;
	}
	if (!k->n) {
		err("sweep: %s has no values", word);
		return -EINVAL;
	}
	return 0;
}

/* The template's config without the swept keys, and the point's values */
static void point_config(struct gpo__sbuf *out, const char *tmpl,
			 const struct sweep_key *keys, int nkeys,
			 const struct point *pt)
{
	const char *line, *next;
	size_t kl;
	int k, skip;

	out->len = 0;
	for (line = tmpl; *line; line = next) {
		next = line + strcspn(line, "\n");
		kl = strcspn(line, "=\n");
		skip = line[kl] != '=';
		for (k = 0; k < nkeys && !skip; k++)
			skip = strlen(keys[k].name) == kl &&
			       !strncmp(line, keys[k].name, kl);
		/* where the job runs is the template's, unless swept */
		if (!skip)
			gpo__sbuf_printf(out, "%.*s\n", (int)(next - line),
					 line);
		if (*next)
			next++;
	}
	for (k = 0; k < nkeys; k++)
		gpo__sbuf_printf(out, "%s=%s\n", keys[k].name,
				 keys[k].vals[pt->idx[k]]);
}

static int want_eval;		/* rank by eval_loss: some job has one */

static double metric(const struct point *p)
{
	return want_eval ? p->js.eval_loss : p->js.loss;
}

/* best first: done before the rest, a finite metric, lower, then order */
static int point_cmp(const void *a, const void *b)
{
	const struct point *x = *(const struct point *const *)a;
	const struct point *y = *(const struct point *const *)b;
	int xd = !strcmp(x->js.state, "done"), yd = !strcmp(y->js.state, "done");
	double mx = metric(x), my = metric(y);
	int xf = isfinite(mx), yf = isfinite(my);

	if (xd != yd)
		return yd - xd;
	if (xf != yf)
		return yf - xf;
	if (xf && mx != my)
		return mx < my ? -1 : 1;
	return (x > y) - (x < y);
}

/* the result table's columns: job, one per key, then the results */
enum { R_STATE, R_STEP, R_LOSS, R_EVAL_LOSS, R_ACCURACY, R_LR, R_ELAPSED,
       R_N };

static const struct col_def result_cols[R_N] = {
	[R_STATE] = { "state", "STATE", 0, "" },
	[R_STEP] = { "step", "STEP", COL_RIGHT | COL_NUMBER, "" },
	[R_LOSS] = { "loss", "LOSS", COL_RIGHT | COL_NUMBER, "" },
	[R_EVAL_LOSS] = { "eval_loss", "EVAL_LOSS", COL_RIGHT | COL_NUMBER, "" },
	[R_ACCURACY] = { "accuracy", "ACCURACY", COL_RIGHT | COL_NUMBER, "" },
	[R_LR] = { "final_lr", "FINAL_LR", COL_RIGHT | COL_NUMBER, "" },
	[R_ELAPSED] = { "elapsed_s", "ELAPSED_S", COL_RIGHT | COL_NUMBER, "" },
};

struct result_table {
	struct col_def defs[1 + SWEEP_KEYS + R_N];
	char headers[SWEEP_KEYS][64];
	char defaults[1024];
	int nkeys;
	struct table t;
};

static int results_new(struct result_table *rt, const struct sweep_key *keys,
		       int nkeys, int eval)
{
	struct gpo__sbuf d = { 0 };
	int k, i;

	rt->nkeys = nkeys;
	rt->defs[0] = (struct col_def){ "job", "JOB", 0, "" };
	gpo__sbuf_printf(&d, "job");
	for (k = 0; k < nkeys; k++) {
		for (i = 0; keys[k].name[i] && i < 63; i++)
			rt->headers[k][i] = (char)toupper(
				(unsigned char)keys[k].name[i]);
		rt->headers[k][i] = '\0';
		rt->defs[1 + k] = (struct col_def){
			keys[k].name, rt->headers[k],
			keys[k].numeric ? COL_RIGHT | COL_NUMBER : 0, ""
		};
		gpo__sbuf_printf(&d, ",%s", keys[k].name);
	}
	for (i = 0; i < R_N; i++)
		rt->defs[1 + nkeys + i] = result_cols[i];
	gpo__sbuf_printf(&d, ",state,step,loss%s", eval ? ",eval_loss" : "");
	snprintf(rt->defaults, sizeof(rt->defaults), "%s", d.buf ? d.buf : "");
	gpo__sbuf_free(&d);
	return table_new(&rt->t, "sweep", rt->defs, 1 + nkeys + R_N,
			 rt->defaults, NULL);
}


static int results_print(struct result_table *rt, struct point **order,
			 int n, const struct sweep_key *keys)
{
	struct libscols_line *ln;
	struct table *t = &rt->t;
	const struct point *p;
	int i, k, r = 1 + rt->nkeys;

	for (i = 0; i < n; i++) {
		p = order[i];
		ln = table_row(t);
		table_set(t, ln, 0, p->name);
		for (k = 0; k < rt->nkeys; k++)
			table_set(t, ln, 1 + k, keys[k].vals[p->idx[k]]);
		table_set(t, ln, r + R_STATE, p->js.state);
		table_setf(t, ln, r + R_STEP, "%llu",
			   (unsigned long long)p->js.step);
		table_set_num(t, ln, r + R_LOSS, p->js.loss, 6);
		table_set_num(t, ln, r + R_EVAL_LOSS, p->js.eval_loss, 6);
		table_set_num(t, ln, r + R_ACCURACY, p->js.accuracy, 4);
		table_set_num(t, ln, r + R_LR, p->js.lr, 4);
		table_set_num(t, ln, r + R_ELAPSED, p->js.elapsed_s, 4);
	}
	return table_print(t, NULL);
}

static void progress(const struct point *p, int finished, int running,
		     int failed, int total, int tty)
{
	char loss[24];

	if (sweep_quiet)
		return;
	if (tty) {
		fprintf(stderr, "\rsweep: %d/%d finished, %d running, %d failed\033[K",
			finished, total, running, failed);
		fflush(stderr);
		return;
	}
	if (!p)
		return;
	fmt_num(loss, sizeof(loss), p->js.loss, 6);
	fprintf(stderr, "sweep: %s %s step %llu loss %s (%d/%d)\n", p->name,
		p->js.state, (unsigned long long)p->js.step, loss, finished,
		total);
}

/* Stop what is still running (after a signal) */
static void stop_running(struct point *pts, int n)
{
	char rel[128];
	int i;

	for (i = 0; i < n; i++) {
		if (pts[i].phase != 1)
			continue;
		snprintf(rel, sizeof(rel), "jobs/%s/ctl", pts[i].name);
		write_rel(rel, "stop\n");
	}
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep_key keys[SWEEP_KEYS];
	struct result_table rt;
	struct point *pts = NULL, **order = NULL;
	struct gpo__sbuf tmpl = { 0 }, cfg = { 0 };
	char rel[128], path[4096];
	int nkeys, n = 1, i, k, status = 1, made = 0, tty;
	int next = 0, running = 0, finished = 0, failed = 0, done = 0;
	const char *prefix;
	int have_eval = 0;

	if (argc < 1 || !sweep_template) {
		if (!sweep_template)
			err("sweep: --template NAME is needed");
		return cmd_usage(stderr);
	}
	if (argc > SWEEP_KEYS) {
		err("sweep: at most %d keys", SWEEP_KEYS);
		return EXIT_USAGE;
	}
	nkeys = argc;
	memset(keys, 0, sizeof(keys));
	for (k = 0; k < nkeys; k++) {
		if (key_parse(argv[k], &keys[k])) {
			status = EXIT_USAGE;
			goto out_keys;
		}
		if (keys[k].n > SWEEP_MAX / n) {
			err("sweep: more than %d points", SWEEP_MAX);
			status = EXIT_USAGE;
			goto out_keys;
		}
		n *= keys[k].n;
	}
	/* a bad -o is a usage error before anything is made; eval_loss is
	 * shown (and ranks) when the template's stat has it */
	if (results_new(&rt, keys, nkeys, 0)) {
		status = EXIT_USAGE;
		goto out_keys;
	}
	table_free(&rt.t);
	if (!tree_ok() || !job_exists(sweep_template))
		goto out_keys;
	prefix = sweep_prefix ? sweep_prefix : sweep_template;
	snprintf(rel, sizeof(rel), "jobs/%s/config", sweep_template);
	if (read_rel(rel, &tmpl) || !tmpl.buf) {
		err("sweep: cannot read %s's config", sweep_template);
		goto out_keys;
	}
	pts = calloc(n, sizeof(*pts));
	order = calloc(n, sizeof(*order));
	if (!pts || !order) {
		err("sweep: %s", strerror(ENOMEM));
		goto out_free;
	}
	for (i = 0; i < n; i++) {
		int rest = i;

		for (k = nkeys - 1; k >= 0; k--) {
			pts[i].idx[k] = rest % keys[k].n;
			rest /= keys[k].n;
		}
		if ((size_t)snprintf(pts[i].name, sizeof(pts[i].name), "%s-%d",
				     prefix, i) >= sizeof(pts[i].name)) {
			err("sweep: the prefix '%s' is too long", prefix);
			goto out_free;
		}
		order[i] = &pts[i];
	}
	/* every job made before any starts: a refused point stops it all */
	for (i = 0; i < n; i++) {
		point_config(&cfg, tmpl.buf, keys, nkeys, &pts[i]);
		if (job_create(pts[i].name, cfg.buf ? cfg.buf : ""))
			goto out_unmake;
		made++;
	}

	tty = isatty(STDERR_FILENO);
	catch_signals();
	while (finished < n && !got_signal) {
		while (running < (int)sweep_parallel && next < n) {
			if (job_verb(pts[next].name, "start", NULL)) {
				job_stat_read(pts[next].name, &pts[next].js);
				pts[next].phase = 2;
				finished++;
				failed++;
			} else {
				pts[next].phase = 1;
				running++;
			}
			next++;
		}
		for (i = 0; i < n; i++) {
			if (pts[i].phase != 1)
				continue;
			if (job_stat_read(pts[i].name, &pts[i].js)) {
				snprintf(pts[i].js.state,
					 sizeof(pts[i].js.state), "removed");
			} else if (!job_ended(pts[i].js.state)) {
				continue;
			}
			pts[i].phase = 2;
			running--;
			finished++;
			if (strcmp(pts[i].js.state, "done"))
				failed++;
			progress(&pts[i], finished, running, failed, n, tty);
		}
		progress(NULL, finished, running, failed, n, tty);
		if (finished < n)
			usleep(100000);
	}
	if (tty && !sweep_quiet)
		fputc('\n', stderr);
	if (got_signal) {
		stop_running(pts, n);
		err("sweep: stopped by a signal; the jobs are kept");
		status = 128 + got_signal;
		goto out_free;
	}

	for (i = 0; i < n; i++) {
		if (!strcmp(pts[i].js.state, "done"))
			done++;
		if (isfinite(pts[i].js.eval_loss))
			have_eval = 1;
	}
	want_eval = have_eval;
	qsort(order, n, sizeof(*order), point_cmp);
	if (results_new(&rt, keys, nkeys, have_eval))
		goto out_free;
	status = results_print(&rt, order, n, keys) ? 1 : 0;
	table_free(&rt.t);
	if (!done) {
		err("sweep: no job finished (done)");
		status = 1;
	}
	if (sweep_rm) {
		for (i = 0; i < n; i++) {
			snprintf(rel, sizeof(rel), "jobs/%s", pts[i].name);
			if (!tree_path(path, sizeof(path), rel) && rmdir(path)) {
				err("sweep: rm %s: %s", pts[i].name,
				    strerror(errno));
				status = 1;
			}
		}
	}
	goto out_free;

out_unmake:
	for (i = 0; i < made; i++) {
		snprintf(rel, sizeof(rel), "jobs/%s", pts[i].name);
		if (!tree_path(path, sizeof(path), rel))
			rmdir(path);
	}
out_free:
	free(order);
	free(pts);
	gpo__sbuf_free(&cfg);
	gpo__sbuf_free(&tmpl);
out_keys:
	for (k = 0; k < nkeys; k++)
		free(keys[k].vals);
	return status;
}
