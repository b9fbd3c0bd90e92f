// SPDX-License-Identifier: MIT
/*
 * plot.c - gpuoptctl plot: an SVG of a job's history.csv. The top panel
 * draws loss (and eval_loss) on the left axis and lr on the right; a
 * lower panel, when history.csv has those columns, grad_norm on the left
 * and accuracy on the right. Ticks are nice numbers (1, 2, 5 x 10^k)
 * printed with no more digits than the step between them needs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

enum { S_STEP, S_LOSS, S_LR, S_GRAD_NORM, S_ACCURACY, S_EVAL_LOSS, S_N };

static const char *const series_names[S_N] = {
	"step", "loss", "lr", "grad_norm", "accuracy", "eval_loss",
};

struct history {
	double *v[S_N];		/* NULL: no such column */
	size_t n;
};

static void history_free(struct history *h)
{
	int k;

	for (k = 0; k < S_N; k++)
		free(h->v[k]);
}

/* history_parse - the columns we draw, found by the header's names */
static int history_parse(const char *text, struct history *h)
{
	int col[16], ncol = 0, k, c;
	const char *p = text, *end;
	size_t cap = 0, len;
	double *nv;

	memset(h, 0, sizeof(*h));
	/* the header: step,loss,lr,grad_norm,... */
	end = p + strcspn(p, "\n");
	while (p < end && ncol < (int)ARRAY_SIZE(col)) {
		len = strcspn(p, ",\n");
		col[ncol] = -1;
		for (k = 0; k < S_N; k++)
			if (strlen(series_names[k]) == len &&
			    !strncmp(p, series_names[k], len))
				col[ncol] = k;
		ncol++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (ncol < 3 || col[0] != S_STEP)
		return 0;	/* not a history we know */
	p = *end ? end + 1 : end;
	while (*p) {
		double row[16];
		char *e;

		for (c = 0; c < ncol; c++) {
			row[c] = gpo__strtod(p, &e);
			if (e == p)
				row[c] = NAN;
			p = e;
			if (*p != ',')
				break;
			p++;
		}
		if (c + 1 >= ncol && !isnan(row[0])) {
			for (c = ncol; c < (int)ARRAY_SIZE(row); c++)
				row[c] = NAN;
			if (h->n == cap) {
				cap = cap ? cap * 2 : 1024;
				for (c = 0; c < ncol; c++) {
					k = col[c];
					if (k < 0)
						continue;
					nv = realloc(h->v[k], cap * sizeof(double));
					if (!nv)
						return -ENOMEM;
					h->v[k] = nv;
				}
			}
			for (c = 0; c < ncol; c++)
				if (col[c] >= 0)
					h->v[col[c]][h->n] = row[c];
			h->n++;
		}
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
	return 0;
}

/* A column with at least one finite value */
static int has(const struct history *h, int k)
{
	size_t i;

	if (!h->v[k])
		return 0;
	for (i = 0; i < h->n; i++)
		if (isfinite(h->v[k][i]))
			return 1;
	return 0;
}

struct axis {
	double lo;
	double hi;
	double step;		/* between ticks; 0 on a log axis */
	int log;
};

/* The finite range of @v; 0 if there is none. */
static int range_of(const double *v, size_t n, double *lo, double *hi)
{
	int any = 0;
	size_t i;

	for (i = 0; v && i < n; i++) {
		if (!isfinite(v[i]))
			continue;
		if (!any || v[i] < *lo)
			*lo = v[i];
		if (!any || v[i] > *hi)
			*hi = v[i];
		any = 1;
	}
	return any;
}

/* 1, 2 or 5 times a power of ten, near @span / @ticks */
static double nice_step(double span, int ticks)
{
	double raw = span / ticks, mag, f;

	if (!(raw > 0) || !isfinite(raw))
		return 1;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	if (f <= 1)
		f = 1;
	else if (f <= 2)
		f = 2;
	else if (f <= 5)
		f = 5;
	else
		f = 10;
	return f * mag;
}

static void axis_fit(struct axis *a, const double *v, size_t n, int log_ok,
		     int ticks)
{
	double lo = 0, hi = 0, d;

	memset(a, 0, sizeof(*a));
	if (!range_of(v, n, &lo, &hi)) {
		lo = 0;
		hi = 1;
	}
	/* a log axis when every value is positive and they span 100x */
	if (log_ok && lo > 0 && hi / lo >= 100) {
		a->log = 1;
		a->lo = pow(10, floor(log10(lo)));
		a->hi = pow(10, ceil(log10(hi)));
		if (a->hi <= a->lo)
			a->hi = a->lo * 10;
		return;
	}
	if (hi - lo <= fabs(hi) * 1e-9) {
		/* a constant: the line in the middle of a range around it */
		d = hi ? fabs(hi) * 0.5 : 1;
		lo -= d;
		hi += d;
	}
	a->step = nice_step(hi - lo, ticks);
	a->lo = floor(lo / a->step) * a->step;
	a->hi = ceil(hi / a->step) * a->step;
	if (a->hi <= a->lo)
		a->hi = a->lo + a->step;
}

static double axis_pos(const struct axis *a, double v)
{
	if (a->log)
		return (log10(v) - log10(a->lo)) /
		       (log10(a->hi) - log10(a->lo));
	return (v - a->lo) / (a->hi - a->lo);
}

/*
 * tick_label - @v as a tick of @a: the digits the tick step needs and no
 * more, so 3 * 0.1 is "0.3", never "0.30000000000000004"
 */
static void tick_label(char *out, size_t len, const struct axis *a, double v)
{
	double big;
	int decimals, digits;
	char *e, *z;

	if (a->log || !a->step) {
		gpo__snprintf(out, len, "%g", v);
		return;
	}
	if (fabs(v) < a->step * 1e-6)
		v = 0;
	big = fmax(fabs(a->lo), fabs(a->hi));
	if (big < 1e-4 || big >= 1e7) {
		/* an exponent; the mantissa's digits as the step needs */
		digits = (int)floor(log10(big)) - (int)floor(log10(a->step));
		if (digits < 0)
			digits = 0;
		if (digits > 15)
			digits = 15;
		gpo__snprintf(out, len, "%.*e", digits, v);
		/* 2.50e-05 -> 2.5e-05, 1.0e+08 -> 1e+08 */
		e = strchr(out, 'e');
		z = e;
		while (z && z > out && z[-1] == '0')
			z--;
		if (z && z > out && z[-1] == '.')
			z--;
		if (z && z != e)
			memmove(z, e, strlen(e) + 1);
		return;
	}
	/* steps are 1, 2 or 5 x 10^k: 10^k's decimals and no more */
	decimals = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
	gpo__snprintf(out, len, "%.*f", decimals, v);
	if (decimals) {		/* 0.0010 -> 0.001 */
		z = out + strlen(out);
		while (z[-1] == '0')
			*--z = '\0';
		if (z[-1] == '.')
			z[-1] = '\0';
	}
}

#define PW 800			/* the picture */
#define PL 90			/* the plot areas' margins */
#define PR 90
#define PT 50			/* the top panel: y 50 to 390 */
#define PH1 340
#define P2T 440			/* the lower panel: y 440 to 600 */
#define PH2 160
#define LOSS_COLOR "#1f77b4"
#define LR_COLOR "#d62728"
#define GRAD_COLOR "#2ca02c"
#define ACC_COLOR "#9467bd"
#define EVAL_COLOR "#ff7f0e"

struct panel {
	int top;
	int height;
};

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

static void svg_tick(FILE *f, int x, double y, int side, const char *color,
		     const char *label)
{
	fprintf(f,
		"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n"
		"<text x=\"%d\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">%s</text>\n",
		x - 5, y, x + 5, y, color, side ? x + 8 : x - 8, y + 4,
		side ? "start" : "end", color, label);
}

/* The ticks of a y axis, on the left (@side 0) or right (1). */
static void svg_yticks(FILE *f, const struct panel *pn, const struct axis *a,
		       int side, const char *color)
{
	int x = side ? PW - PR : PL;
	char label[40];
	double v, k0;
	int k;

	if (a->log) {
		for (k = 0; k <= 40; k++) {
			v = a->lo * pow(10, k);
			if (v > a->hi * 1.0001)
				break;
			tick_label(label, sizeof(label), a, v);
			svg_tick(f, x, pn->top + pn->height -
				 axis_pos(a, v) * pn->height, side, color,
				 label);
		}
		return;
	}
	k0 = round(a->lo / a->step);
	for (k = 0; k <= 20; k++) {
		v = (k0 + k) * a->step;	/* no drift from adding steps */
		if (v > a->hi + a->step * 1e-6)
			break;
		tick_label(label, sizeof(label), a, v);
		svg_tick(f, x, pn->top + pn->height - axis_pos(a, v) * pn->height,
			 side, color, label);
	}
}

static void svg_polyline(FILE *f, const struct panel *pn,
			 const struct history *h, int k, const struct axis *x,
			 const struct axis *y, const char *color,
			 const char *dash, size_t every)
{
	double w = PW - PL - PR;
	const double *v = h->v[k];
	size_t i;
	int any = 0;

	for (i = 0; i < h->n; i++) {
		if (i % every && i != h->n - 1)
			continue;
		if (!isfinite(v[i]) || (y->log && v[i] <= 0))
			continue;
		if (!any)
			fprintf(f,
				"<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
				series_names[k], color, dash);
		fprintf(f, "%s%.2f,%.2f", any ? " " : "",
			PL + axis_pos(x, h->v[S_STEP][i]) * w,
			pn->top + pn->height - axis_pos(y, v[i]) * pn->height);
		any = 1;
	}
	if (any)
		fputs("\"/>\n", f);
}

static void svg_xaxis(FILE *f, const struct panel *pn, const struct axis *ax)
{
	double w = PW - PL - PR, xv, px, k0;
	char label[40];
	int k;

	k0 = ceil(ax->lo / ax->step - 1e-9);
	for (k = 0; k <= 20; k++) {
		xv = (k0 + k) * ax->step;
		if (xv > ax->hi + ax->step * 1e-6)
			break;
		px = PL + axis_pos(ax, xv) * w;
		tick_label(label, sizeof(label), ax, xv);
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>\n"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			px, pn->top + pn->height, px, pn->top + pn->height + 5,
			px, pn->top + pn->height + 20, label);
	}
}

static void svg_frame(FILE *f, const struct panel *pn)
{
	fprintf(f,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n",
		PL, pn->top, PW - PL - PR, pn->height);
}

static void svg_ylabel(FILE *f, const struct panel *pn, int side,
		       const char *color, const char *text)
{
	if (side)
		fprintf(f,
			"<text transform=\"translate(%d %d) rotate(90)\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
			PW - 20, pn->top + pn->height / 2, color, text);
	else
		fprintf(f,
			"<text transform=\"translate(20 %d) rotate(-90)\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
			pn->top + pn->height / 2, color, text);
}

static void svg_legend(FILE *f, const struct panel *pn, int slot,
		       const char *color, const char *text)
{
	double x = PW - PR - 120 - slot * 110.0;

	fprintf(f,
		"<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n"
		"<text x=\"%.0f\" y=\"%d\">%s</text>\n",
		x, pn->top + 15, x + 20, pn->top + 15, color, x + 25,
		pn->top + 19, text);
}

static void svg_write(FILE *f, const char *job, const struct history *h)
{
	struct panel top = { PT, PH1 }, low = { P2T, PH2 };
	int lower = has(h, S_GRAD_NORM) || has(h, S_ACCURACY);
	int height = lower ? P2T + PH2 + 60 : PT + PH1 + 60;
	struct axis ax, al, ar, gl, gr;
	double *both = NULL;
	size_t every;

	/* the step axis: nice ticks over the first to the last step */
	range_of(h->v[S_STEP], h->n, &ax.lo, &ax.hi);
	if (ax.hi <= ax.lo)
		ax.hi = ax.lo + 1;
	ax.log = 0;
	ax.step = nice_step(ax.hi - ax.lo, 6);
	/* loss and eval_loss share the left axis */
	if (h->v[S_EVAL_LOSS] && h->v[S_LOSS]) {
		both = malloc(2 * h->n * sizeof(double));
		if (both) {
			memcpy(both, h->v[S_LOSS], h->n * sizeof(double));
			memcpy(both + h->n, h->v[S_EVAL_LOSS],
			       h->n * sizeof(double));
		}
	}
	if (both)
		axis_fit(&al, both, 2 * h->n, 1, 5);
	else
		axis_fit(&al, h->v[S_LOSS], h->v[S_LOSS] ? h->n : 0, 1, 5);
	free(both);
	axis_fit(&ar, h->v[S_LR], h->v[S_LR] ? h->n : 0, 0, 5);
	every = h->n > 4000 ? (h->n + 3999) / 4000 : 1;

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<title>",
		PW, height, PW, height);
	svg_text(f, job);
	fprintf(f, ": loss and lr over steps</title>\n"
		"<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", PW, height);
	fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">",
		PW / 2);
	svg_text(f, job);
	fputs(": loss and lr over steps</text>\n", f);

	svg_frame(f, &top);
	svg_xaxis(f, &top, &ax);
	svg_yticks(f, &top, &al, 0, LOSS_COLOR);
	svg_yticks(f, &top, &ar, 1, LR_COLOR);
	svg_ylabel(f, &top, 0, LOSS_COLOR, al.log ? "loss (log scale)" : "loss");
	svg_ylabel(f, &top, 1, LR_COLOR, "lr");
	if (has(h, S_LOSS))
		svg_polyline(f, &top, h, S_LOSS, &ax, &al, LOSS_COLOR, "",
			     every);
	if (has(h, S_LR))
		svg_polyline(f, &top, h, S_LR, &ax, &ar, LR_COLOR, "", every);
	if (has(h, S_EVAL_LOSS)) {
		svg_polyline(f, &top, h, S_EVAL_LOSS, &ax, &al, EVAL_COLOR,
			     " stroke-dasharray=\"4 3\"", every);
		svg_legend(f, &top, 2, EVAL_COLOR, "eval_loss");
	}
	svg_legend(f, &top, 1, LOSS_COLOR, "loss");
	svg_legend(f, &top, 0, LR_COLOR, "lr");

	if (lower) {
		svg_frame(f, &low);
		svg_xaxis(f, &low, &ax);
		if (has(h, S_GRAD_NORM)) {
			axis_fit(&gl, h->v[S_GRAD_NORM], h->n, 1, 3);
			svg_yticks(f, &low, &gl, 0, GRAD_COLOR);
			svg_ylabel(f, &low, 0, GRAD_COLOR, gl.log ?
				   "grad_norm (log)" : "grad_norm");
			svg_polyline(f, &low, h, S_GRAD_NORM, &ax, &gl,
				     GRAD_COLOR, "", every);
			svg_legend(f, &low, 1, GRAD_COLOR, "grad_norm");
		}
		if (has(h, S_ACCURACY)) {
			axis_fit(&gr, h->v[S_ACCURACY], h->n, 0, 3);
			svg_yticks(f, &low, &gr, 1, ACC_COLOR);
			svg_ylabel(f, &low, 1, ACC_COLOR, "accuracy");
			svg_polyline(f, &low, h, S_ACCURACY, &ax, &gr,
				     ACC_COLOR, "", every);
			svg_legend(f, &low, 0, ACC_COLOR, "accuracy");
		}
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
		PL + (PW - PL - PR) / 2, height - 15);
	fputs("</svg>\n", f);
}

static const char *plot_out;

const struct option plot_longs[] = {
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

int plot_opt(int c, const char *arg)
{
	if (c != 'o')
		return -1;
	plot_out = arg;
	return 0;
}

int cmd_plot(int argc, char **argv)
{
	char rel[128], tmp[4096];
	struct gpo__sbuf b = { 0 };
	struct history h;
	int status, ret;
	FILE *f = stdout;

	status = operands(argc, 1, 1);
	if (status)
		return status;
	if (!tree_ok() || !job_exists(argv[0]))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s/history.csv", argv[0]);
	ret = read_rel(rel, &b);
	memset(&h, 0, sizeof(h));
	if (!ret)
		ret = history_parse(b.buf ? b.buf : "", &h);
	gpo__sbuf_free(&b);
	if (ret) {
		history_free(&h);
		err("plot %s: %s", argv[0], strerror(-ret));
		return 1;
	}
	if (!h.n) {
		history_free(&h);
		err("plot %s: history.csv has no rows yet (a row every log_every steps)",
		    argv[0]);
		return 1;
	}
	if (plot_out && strcmp(plot_out, "-")) {
		/* the whole picture or none: a temporary file, renamed */
		snprintf(tmp, sizeof(tmp), "%s.tmp%ld", plot_out,
			 (long)getpid());
		f = fopen(tmp, "w");
		if (!f) {
			err("plot: %s: %s", tmp, strerror(errno));
			history_free(&h);
			return 1;
		}
	}
	svg_write(f, argv[0], &h);
	history_free(&h);
	if (f == stdout)
		return fflush(stdout) ? 1 : 0;
	if (fclose(f) || rename(tmp, plot_out)) {
		err("plot: %s: %s", plot_out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}
