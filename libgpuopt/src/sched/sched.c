// SPDX-License-Identifier: MIT
/*
 * sched.c - learning-rate schedules with torch.optim.lr_scheduler's
 * formulas (torch 1.13)
 *
 * torch computes most lrs recursively: each step multiplies the group's
 * current lr. Here every kind is the closed form of the same formula
 * (torch's _get_closed_form_lr where it has one), evaluated from the step
 * count and the group's base lr, so that one schedule serves groups of
 * any base lr and a saved line needs no lrs. The two agree to rounding;
 * tests/data/sched holds torch's own values.
 *
 * warmup_steps W in front of a kind is torch's
 *	SequentialLR([LinearLR(opt, warmup_start_factor, 1.0, W), main],
 *		     milestones=[W])
 * epochs 0..W-1 ramp, then the main schedule runs at its own epoch
 * last_epoch - W (SequentialLR restarts it with step(0)).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"

#define MAX_MILESTONES	64
/* the longest value: MAX_MILESTONES numbers of 20 digits and commas */
#define VALUE_MAX	(MAX_MILESTONES * 21 + 1)

enum sched_kind {
	SK_CONSTANT,
	SK_STEP,
	SK_MULTISTEP,
	SK_EXPONENTIAL,
	SK_COSINE,
	SK_RESTARTS,
	SK_LINEAR,
	SK_POLYNOMIAL,
	SK_ONECYCLE,
	SK_PLATEAU,
	SK_KINDS
};

struct milestones {
	unsigned int n;
	uint64_t at[MAX_MILESTONES];	/* strictly increasing */
};

struct gpo_sched {
	enum sched_kind kind;
	uint64_t given;			/* a bit per key_table entry set */

	/* settings, torch's names */
	uint64_t step_size;
	double gamma;
	struct milestones milestones;
	uint64_t t_max;
	double eta_min;
	uint64_t t_0;
	uint64_t t_mult;
	double start_factor;
	double end_factor;
	uint64_t total_iters;
	double power;
	double max_lr;
	uint64_t total_steps;
	double pct_start;
	int anneal_linear;
	double div_factor;
	double final_div_factor;
	int three_phase;
	int mode_max;
	double factor;
	uint64_t patience;
	double threshold;
	int threshold_abs;
	uint64_t cooldown;
	double min_lr;
	double eps;
	uint64_t warmup_steps;
	double warmup_start_factor;

	/* state */
	uint64_t last_epoch;		/* steps taken, warmup included */
	uint64_t t_cur;			/* cosine_restarts: T_cur and T_i */
	uint64_t t_i;
	double best;			/* plateau */
	uint64_t num_bad_epochs;
	uint64_t cooldown_counter;
	uint64_t reductions;		/* times _reduce_lr() ran */
};

/* ---- keys ---------------------------------------------------------------- */

enum key_type { KT_U64, KT_DOUBLE, KT_BEST, KT_WORD, KT_BOOL, KT_LIST };

enum key_range {
	R_ANY,
	R_POS,
	R_NONNEG,
	R_OPEN_UNIT,
	R_HALF_UNIT,
	R_UNIT,
	R_BELOW_ONE,
};

static const struct {
	double lo, hi;
	int lo_open, hi_open;
	const char *text;
} ranges[] = {
	[R_ANY] = { -INFINITY, INFINITY, 0, 0, "any number" },
	[R_POS] = { 0, INFINITY, 1, 0, "> 0" },
	[R_NONNEG] = { 0, INFINITY, 0, 0, ">= 0" },
	[R_OPEN_UNIT] = { 0, 1, 1, 1, "in (0, 1)" },
	[R_HALF_UNIT] = { 0, 1, 1, 0, "in (0, 1]" },
	[R_UNIT] = { 0, 1, 0, 0, "in [0, 1]" },
	[R_BELOW_ONE] = { 0, 1, 0, 1, "in [0, 1)" },
};

struct sched_key {
	const char *name;
	enum key_type type;
	size_t off;
	double def;
	unsigned int kinds;		/* kinds that have it */
	unsigned int required;		/* kinds that have no default */
	enum key_range range;
	const char *words[2];		/* KT_WORD: the words for 0 and 1 */
	int state;			/* state: only gpo_sched_load sets it */
};

#define K(x)	(1u << SK_##x)
#define ALL	((1u << SK_KINDS) - 1)

#define NUM(n, t, d, kinds, req, r) \
	{ #n, t, offsetof(struct gpo_sched, n), d, kinds, req, r, \
	  { NULL, NULL }, 0 }
#define WORD(n, f, w0, w1, kinds) \
	{ #n, KT_WORD, offsetof(struct gpo_sched, f), 0, kinds, 0, R_ANY, \
	  { w0, w1 }, 0 }
#define STATE(n, t, kinds) \
	{ #n, t, offsetof(struct gpo_sched, n), 0, kinds, 0, R_ANY, \
	  { NULL, NULL }, 1 }

/* Defaults are torch's; warmup_start_factor is ours (see gpuopt.h). */
static const struct sched_key key_table[] = {
	NUM(step_size, KT_U64, 0, K(STEP), K(STEP), R_POS),
	NUM(gamma, KT_DOUBLE, 0.1, K(STEP) | K(MULTISTEP) | K(EXPONENTIAL),
	    K(EXPONENTIAL), R_POS),
	NUM(milestones, KT_LIST, 0, K(MULTISTEP), K(MULTISTEP), R_ANY),
	NUM(t_max, KT_U64, 0, K(COSINE), K(COSINE), R_POS),
	NUM(eta_min, KT_DOUBLE, 0, K(COSINE) | K(RESTARTS), 0, R_NONNEG),
	NUM(t_0, KT_U64, 0, K(RESTARTS), K(RESTARTS), R_POS),
	NUM(t_mult, KT_U64, 1, K(RESTARTS), 0, R_POS),
	NUM(start_factor, KT_DOUBLE, 1.0 / 3, K(LINEAR), 0, R_HALF_UNIT),
	NUM(end_factor, KT_DOUBLE, 1, K(LINEAR), 0, R_UNIT),
	NUM(total_iters, KT_U64, 5, K(LINEAR) | K(POLYNOMIAL), 0, R_POS),
	NUM(power, KT_DOUBLE, 1, K(POLYNOMIAL), 0, R_NONNEG),
	NUM(max_lr, KT_DOUBLE, 0, K(ONECYCLE), K(ONECYCLE), R_POS),
	NUM(total_steps, KT_U64, 0, K(ONECYCLE), K(ONECYCLE), R_POS),
	NUM(pct_start, KT_DOUBLE, 0.3, K(ONECYCLE), 0, R_OPEN_UNIT),
	WORD(anneal_strategy, anneal_linear, "cos", "linear", K(ONECYCLE)),
	NUM(div_factor, KT_DOUBLE, 25, K(ONECYCLE), 0, R_POS),
	NUM(final_div_factor, KT_DOUBLE, 1e4, K(ONECYCLE), 0, R_POS),
	NUM(three_phase, KT_BOOL, 0, K(ONECYCLE), 0, R_ANY),
	WORD(mode, mode_max, "min", "max", K(PLATEAU)),
	NUM(factor, KT_DOUBLE, 0.1, K(PLATEAU), 0, R_BELOW_ONE),
	NUM(patience, KT_U64, 10, K(PLATEAU), 0, R_ANY),
	NUM(threshold, KT_DOUBLE, 1e-4, K(PLATEAU), 0, R_NONNEG),
	WORD(threshold_mode, threshold_abs, "rel", "abs", K(PLATEAU)),
	NUM(cooldown, KT_U64, 0, K(PLATEAU), 0, R_ANY),
	NUM(min_lr, KT_DOUBLE, 0, K(PLATEAU), 0, R_NONNEG),
	NUM(eps, KT_DOUBLE, 1e-8, K(PLATEAU), 0, R_NONNEG),
	NUM(warmup_steps, KT_U64, 0, ALL, 0, R_ANY),
	NUM(warmup_start_factor, KT_DOUBLE, 1e-3, ALL, 0, R_HALF_UNIT),
	/* state last, so that a truncated saved line loses it first */
	STATE(last_epoch, KT_U64, ALL),
	STATE(t_cur, KT_U64, K(RESTARTS)),
	STATE(t_i, KT_U64, K(RESTARTS)),
	STATE(best, KT_BEST, K(PLATEAU)),
	STATE(num_bad_epochs, KT_U64, K(PLATEAU)),
	STATE(cooldown_counter, KT_U64, K(PLATEAU)),
	STATE(reductions, KT_U64, K(PLATEAU)),
};

/* gpo_sched.given has a bit per entry */
_Static_assert(ARRAY_SIZE(key_table) <= 64, "too many schedule keys");

static void *field(struct gpo_sched *s, const struct sched_key *k)
{
	return (char *)s + k->off;
}

static const void *cfield(const struct gpo_sched *s,
			  const struct sched_key *k)
{
	return (const char *)s + k->off;
}

static uint64_t key_bit(const struct sched_key *k)
{
	return 1ull << (k - key_table);
}

static int has_key(const struct gpo_sched *s, const struct sched_key *k)
{
	return !!(k->kinds & (1u << s->kind));
}

static const struct sched_key *key_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(key_table); i++)
		if (!strcmp(key_table[i].name, name))
			return &key_table[i];
	return NULL;
}

static int in_range(enum key_range r, double v)
{
	if (ranges[r].lo_open ? !(v > ranges[r].lo) : !(v >= ranges[r].lo))
		return 0;
	return ranges[r].hi_open ? v < ranges[r].hi : v <= ranges[r].hi;
}

static int range_err(const struct sched_key *k, const char *text)
{
	return gpo__err(-EINVAL, "%s=%s: must be %s", k->name, text,
		       ranges[k->range].text);
}

/* ---- parsing and printing values ----------------------------------------- */

struct outbuf {
	char *buf;
	size_t len;
	size_t used;			/* what the whole text needs */
};

static void out_add(struct outbuf *o, const char *fmt, ...) GPO_PRINTF(2, 3);

static void out_add(struct outbuf *o, const char *fmt, ...)
{
	int room = o->used < o->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = gpo__vsnprintf(room ? o->buf + o->used : NULL,
			   room ? o->len - o->used : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += n;
}

static int parse_count(const struct sched_key *k, const char *text,
		       void *dst)
{
	uint64_t v;

	if (gpo__parse_u64(text, &v))
		return gpo__err(-EINVAL, "%s: '%s' is not a whole number",
			       k->name, text);
	if (!in_range(k->range, (double)v))
		return range_err(k, text);
	*(uint64_t *)dst = v;
	return 0;
}

static void print_count(struct outbuf *o, const struct sched_key *k,
			const void *src)
{
	out_add(o, "%" PRIu64, *(const uint64_t *)src);
}

static int parse_number(const struct sched_key *k, const char *text,
			void *dst)
{
	double v;

	if (gpo__parse_double(text, &v))
		return gpo__err(-EINVAL, "%s: '%s' is not a finite number",
			       k->name, text);
	if (!in_range(k->range, v))
		return range_err(k, text);
	*(double *)dst = v;
	return 0;
}

/* %.17g (in the C locale) reads back to the same double */
static void print_number(struct outbuf *o, const struct sched_key *k,
			 const void *src)
{
	out_add(o, "%.17g", *(const double *)src);
}

/* plateau's best starts as torch's mode_worse, an infinity */
static int parse_best(const struct sched_key *k, const char *text,
		      void *dst)
{
	if (!strcmp(text, "inf")) {
		*(double *)dst = INFINITY;
		return 0;
	}
	if (!strcmp(text, "-inf")) {
		*(double *)dst = -INFINITY;
		return 0;
	}
	return parse_number(k, text, dst);
}

static int parse_word(const struct sched_key *k, const char *text,
		      void *dst)
{
	int v;

	for (v = 0; v < 2; v++) {
		char digit[2] = { (char)('0' + v), '\0' };

		if (!strcmp(text, k->words[v]) || !strcmp(text, digit)) {
			*(int *)dst = v;
			return 0;
		}
	}
	return gpo__err(-EINVAL, "%s: '%s' is not %s (0) or %s (1)", k->name,
		       text, k->words[0], k->words[1]);
}

static void print_word(struct outbuf *o, const struct sched_key *k,
		       const void *src)
{
	out_add(o, "%s", k->words[*(const int *)src]);
}

static int parse_flag(const struct sched_key *k, const char *text,
		      void *dst)
{
	if (gpo__parse_bool(text, (int *)dst))
		return gpo__err(-EINVAL, "%s: '%s' is not 0, 1, true or false",
			       k->name, text);
	return 0;
}

static void print_flag(struct outbuf *o, const struct sched_key *k,
		       const void *src)
{
	out_add(o, "%d", *(const int *)src);
}

static int parse_list(const struct sched_key *k, const char *text,
		      void *dst)
{
	struct milestones m = { 0 };
	const char *p = text, *comma;
	char num[24];
	size_t n;

	for (;;) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		if (m.n == MAX_MILESTONES)
			return gpo__err(-EINVAL, "%s: more than %d", k->name,
				       MAX_MILESTONES);
		if (!n || n >= sizeof(num))
			goto out_bad;
		memcpy(num, p, n);
		num[n] = '\0';
		if (gpo__parse_u64(num, &m.at[m.n]))
			goto out_bad;
		if (m.n && m.at[m.n] <= m.at[m.n - 1])
			return gpo__err(-EINVAL, "%s=%s: not increasing",
				       k->name, text);
		m.n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	*(struct milestones *)dst = m;
	return 0;

out_bad:
	return gpo__err(-EINVAL,
		       "%s: '%s' is not a list of whole numbers like 30,80",
		       k->name, text);
}

static void print_list(struct outbuf *o, const struct sched_key *k,
		       const void *src)
{
	const struct milestones *m = src;
	unsigned int i;

	for (i = 0; i < m->n; i++)
		out_add(o, "%s%" PRIu64, i ? "," : "", m->at[i]);
}

static const struct {
	int (*parse)(const struct sched_key *k, const char *text, void *dst);
	void (*print)(struct outbuf *o, const struct sched_key *k,
		      const void *src);
} type_ops[] = {
	[KT_U64] = { parse_count, print_count },
	[KT_DOUBLE] = { parse_number, print_number },
	[KT_BEST] = { parse_best, print_number },
	[KT_WORD] = { parse_word, print_word },
	[KT_BOOL] = { parse_flag, print_flag },
	[KT_LIST] = { parse_list, print_list },
};

/* ---- the formulas -------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* the main schedule's own epoch: SequentialLR restarts it at warmup_steps */
static uint64_t main_epoch(const struct gpo_sched *s)
{
	if (s->last_epoch <= s->warmup_steps)
		return 0;
	return s->last_epoch - s->warmup_steps;
}

static double lr_constant(const struct gpo_sched *s, double base, uint64_t m)
{
	return base;
}

static double lr_step(const struct gpo_sched *s, double base, uint64_t m)
{
	return base * pow(s->gamma, (double)(m / s->step_size));
}

static double lr_multistep(const struct gpo_sched *s, double base,
			   uint64_t m)
{
	unsigned int passed = 0;

	/* bisect_right(milestones, m) */
	while (passed < s->milestones.n && s->milestones.at[passed] <= m)
		passed++;
	return base * pow(s->gamma, passed);
}

static double lr_exponential(const struct gpo_sched *s, double base,
			     uint64_t m)
{
	return base * pow(s->gamma, (double)m);
}

/* eta_min + (base - eta_min) (1 + cos(pi cur / len)) / 2, torch's order */
static double cosine_anneal(double base, double eta_min, double cur,
			    double len)
{
	return eta_min + (base - eta_min) * (1 + cos(M_PI * cur / len)) / 2;
}

static double lr_cosine(const struct gpo_sched *s, double base, uint64_t m)
{
	return cosine_anneal(base, s->eta_min, (double)m, (double)s->t_max);
}

static double lr_restarts(const struct gpo_sched *s, double base,
			  uint64_t m)
{
	return cosine_anneal(base, s->eta_min, (double)s->t_cur,
			     (double)s->t_i);
}

static double lr_linear(const struct gpo_sched *s, double base, uint64_t m)
{
	double n = (double)min_u64(m, s->total_iters);

	return base * (s->start_factor + (s->end_factor - s->start_factor) *
		       n / (double)s->total_iters);
}

static double lr_polynomial(const struct gpo_sched *s, double base,
			    uint64_t m)
{
	double n = (double)min_u64(m, s->total_iters);

	return base * pow(1.0 - n / (double)s->total_iters, s->power);
}

struct phase {
	double end;			/* the last step of the phase */
	double from, to;		/* its lrs */
};

/* OneCycleLR._schedule_phases */
static int onecycle_phases(const struct gpo_sched *s, struct phase *ph)
{
	double t = (double)s->total_steps;
	double initial = s->max_lr / s->div_factor;
	double min_lr = initial / s->final_div_factor;

	ph[0] = (struct phase){ s->pct_start * t - 1, initial, s->max_lr };
	if (!s->three_phase) {
		ph[1] = (struct phase){ t - 1, s->max_lr, min_lr };
		return 2;
	}
	ph[1] = (struct phase){ 2 * s->pct_start * t - 2, s->max_lr, initial };
	ph[2] = (struct phase){ t - 1, initial, min_lr };
	return 3;
}

static double lr_onecycle(const struct gpo_sched *s, double base,
			  uint64_t m)
{
	double x = (double)m, start = 0, pct;
	struct phase ph[3];
	int i, n = onecycle_phases(s, ph);

	/*
	 * torch extrapolates the last phase at step total_steps (a linear
	 * anneal goes below min_lr, even negative) and raises after it; here
	 * the lr stays at the end of the last phase instead.
	 */
	if (x > ph[n - 1].end)
		x = ph[n - 1].end;

	for (i = 0; i < n - 1 && x > ph[i].end; i++)
		start = ph[i].end;
	pct = (x - start) / (ph[i].end - start);
	if (s->anneal_linear)
		return (ph[i].to - ph[i].from) * pct + ph[i].from;
	return ph[i].to + (ph[i].from - ph[i].to) / 2.0 *
	       (cos(M_PI * pct) + 1);
}

/*
 * ReduceLROnPlateau._reduce_lr() on a group whose lr started at @base,
 * once per reduction: lrs are per group (min_lr and eps make groups
 * differ), so they are replayed from the count rather than kept. Once a
 * reduction leaves the lr as it is, all later ones do too.
 */
static double lr_plateau(const struct gpo_sched *s, double base, uint64_t m)
{
	double lr = base, next;
	uint64_t i;

	for (i = 0; i < s->reductions; i++) {
		next = fmax(lr * s->factor, s->min_lr);
		if (!(lr - next > s->eps))
			break;
		lr = next;
	}
	return lr;
}

/* CosineAnnealingWarmRestarts.step() without an epoch */
static int step_restarts(struct gpo_sched *s, double metric)
{
	s->t_cur++;
	if (s->t_cur >= s->t_i) {
		s->t_cur -= s->t_i;
		s->t_i = mul_sat(s->t_i, s->t_mult);
	}
	return 0;
}

/* torch raises once get_lr() would pass total_steps */
static int step_onecycle(struct gpo_sched *s, double metric)
{
	if (main_epoch(s) >= s->total_steps)
		return gpo__err(-ERANGE,
			       "onecycle: all %" PRIu64 " total_steps taken",
			       s->total_steps);
	return 0;
}

static double mode_worse(const struct gpo_sched *s)
{
	return s->mode_max ? -INFINITY : INFINITY;
}

static int plateau_better(const struct gpo_sched *s, double a)
{
	double best = s->best, t = s->threshold;

	if (s->mode_max)
		return s->threshold_abs ? a > best + t : a > best * (t + 1.);
	return s->threshold_abs ? a < best - t : a < best * (1. - t);
}

/* ReduceLROnPlateau.step(metrics) */
static int step_plateau(struct gpo_sched *s, double metric)
{
	if (!isfinite(metric))
		return gpo__err(-EINVAL, "plateau: metric %g is not finite",
			       metric);
	if (plateau_better(s, metric)) {
		s->best = metric;
		s->num_bad_epochs = 0;
	} else {
		s->num_bad_epochs++;
	}
	if (s->cooldown_counter > 0) {
		s->cooldown_counter--;
		s->num_bad_epochs = 0;
	}
	if (s->num_bad_epochs > s->patience) {
		s->reductions++;
		s->cooldown_counter = s->cooldown;
		s->num_bad_epochs = 0;
	}
	return 0;
}

/* ---- consistency checks -------------------------------------------------- */

static int check_onecycle(const struct gpo_sched *s)
{
	struct phase ph[3];
	int i, n = onecycle_phases(s, ph);
	double start = 0;

	for (i = 0; i < n; i++) {
		/* torch divides by each phase's length */
		if (ph[i].end == start)
			return gpo__err(-EINVAL,
				       "onecycle: phase %d has no length (pct_start %g, total_steps %" PRIu64 ")",
				       i + 1, s->pct_start, s->total_steps);
		start = ph[i].end;
	}
	if (main_epoch(s) > s->total_steps)
		return gpo__err(-EINVAL,
			       "onecycle: last_epoch is past total_steps");
	return 0;
}

/* where epoch @m lies: T_cur and T_i as torch's step(epoch) computes them */
static void restart_position(const struct gpo_sched *s, uint64_t m,
			     uint64_t *t_cur, uint64_t *t_i)
{
	uint64_t len = s->t_0;

	if (s->t_mult == 1) {
		*t_cur = m % len;
		*t_i = len;
		return;
	}
	while (m >= len) {
		m -= len;
		len = mul_sat(len, s->t_mult);
	}
	*t_cur = m;
	*t_i = len;
}

static int check_restarts(const struct gpo_sched *s)
{
	uint64_t t_cur, t_i;

	restart_position(s, main_epoch(s), &t_cur, &t_i);
	if (s->t_cur != t_cur || s->t_i != t_i)
		return gpo__err(-EINVAL,
			       "cosine_restarts: t_cur=%" PRIu64 " t_i=%" PRIu64 " do not match last_epoch %" PRIu64,
			       s->t_cur, s->t_i, s->last_epoch);
	return 0;
}

static int check_plateau(const struct gpo_sched *s)
{
	uint64_t m = main_epoch(s);

	if (s->num_bad_epochs > s->patience || s->num_bad_epochs > m ||
	    s->cooldown_counter > s->cooldown || s->reductions > m ||
	    (s->cooldown_counter && !s->reductions))
		return gpo__err(-EINVAL, "plateau: counters out of range");
	if ((m == 0 || isinf(s->best)) && s->best != mode_worse(s))
		return gpo__err(-EINVAL, "plateau: best=%g cannot be", s->best);
	return 0;
}

static const struct sched_kind_ops {
	const char *name;
	/* the lr of a group with base lr @base at the main epoch @m */
	double (*lr)(const struct gpo_sched *s, double base, uint64_t m);
	/* advance the kind's state by one epoch (NULL: it has none) */
	int (*step)(struct gpo_sched *s, double metric);
	/* settings that depend on each other, and the state */
	int (*check)(const struct gpo_sched *s);
} kind_ops[SK_KINDS] = {
	[SK_CONSTANT] = { "constant", lr_constant, NULL, NULL },
	[SK_STEP] = { "step", lr_step, NULL, NULL },
	[SK_MULTISTEP] = { "multistep", lr_multistep, NULL, NULL },
	[SK_EXPONENTIAL] = { "exponential", lr_exponential, NULL, NULL },
	[SK_COSINE] = { "cosine", lr_cosine, NULL, NULL },
	[SK_RESTARTS] = { "cosine_restarts", lr_restarts, step_restarts,
			  check_restarts },
	[SK_LINEAR] = { "linear", lr_linear, NULL, NULL },
	[SK_POLYNOMIAL] = { "polynomial", lr_polynomial, NULL, NULL },
	[SK_ONECYCLE] = { "onecycle", lr_onecycle, step_onecycle,
			  check_onecycle },
	[SK_PLATEAU] = { "plateau", lr_plateau, step_plateau, check_plateau },
};

/* ---- the schedule -------------------------------------------------------- */

static int kind_find(const char *name)
{
	int i;

	for (i = 0; i < SK_KINDS; i++)
		if (!strcmp(name, kind_ops[i].name))
			return i;
	return gpo__err(-EINVAL,
		       "unknown schedule '%s' (constant step multistep exponential cosine cosine_restarts linear polynomial onecycle plateau)",
		       name);
}

static void reset_state(struct gpo_sched *s)
{
	s->last_epoch = 0;
	s->t_cur = 0;
	s->t_i = s->t_0;
	s->best = mode_worse(s);
	s->num_bad_epochs = 0;
	s->cooldown_counter = 0;
	s->reductions = 0;
}

static void sched_init(struct gpo_sched *s, enum sched_kind kind)
{
	const struct sched_key *k;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	for (k = key_table; k < key_table + ARRAY_SIZE(key_table); k++) {
		if (k->type == KT_U64)
			*(uint64_t *)field(s, k) = (uint64_t)k->def;
		else if (k->type == KT_DOUBLE)
			*(double *)field(s, k) = k->def;
		else if (k->type == KT_WORD || k->type == KT_BOOL)
			*(int *)field(s, k) = (int)k->def;
	}
	reset_state(s);
}

/*
 * The first key that must be given but was not: a setting without a
 * default, or (@loading) a piece of the kind's state.
 */
static const struct sched_key *missing_key(const struct gpo_sched *s,
					   int loading)
{
	const struct sched_key *k;

	for (k = key_table; k < key_table + ARRAY_SIZE(key_table); k++) {
		int need = (k->required & (1u << s->kind)) ||
			   (loading && k->state && has_key(s, k));

		if (need && !(s->given & key_bit(k)))
			return k;
	}
	return NULL;
}

static int sched_validate(const struct gpo_sched *s, int loading)
{
	const struct sched_key *k = missing_key(s, loading);
	const struct sched_kind_ops *ops = &kind_ops[s->kind];

	if (k)
		return gpo__err(-EINVAL, "%s needs %s", ops->name, k->name);
	return ops->check ? ops->check(s) : 0;
}

static int apply_setting(struct gpo_sched *s, const char *key,
			 const char *value, int loading)
{
	const struct sched_key *k = key_find(key);
	int ret;

	if (!strcmp(key, "kind"))
		return gpo__err(-EINVAL,
			       "kind=%s: the kind is gpo_sched_new()'s, or the first word of a saved line",
			       value);
	if (!k)
		return gpo__err(-EINVAL, "unknown schedule key '%s'", key);
	if (!has_key(s, k))
		return gpo__err(-EINVAL, "%s has no key '%s'",
			       kind_ops[s->kind].name, key);
	if (k->state && !loading)
		return gpo__err(-EINVAL,
			       "'%s' is state: only gpo_sched_load() sets it",
			       key);
	if (loading && (s->given & key_bit(k)))
		return gpo__err(-EINVAL, "'%s' given twice", key);
	ret = type_ops[k->type].parse(k, value, field(s, k));
	if (ret)
		return ret;
	s->given |= key_bit(k);
	return 0;
}

static int apply_text(struct gpo_sched *s, const char *pos, int loading)
{
	char key[32], value[VALUE_MAX];
	int ret;

	while ((ret = gpo__kv_next(&pos, key, sizeof(key), value,
			      sizeof(value))) > 0) {
		ret = apply_setting(s, key, value, loading);
		if (ret)
			return ret;
	}
	return ret;
}

static int not_configured(const struct gpo_sched *s)
{
	const struct sched_key *k = missing_key(s, 0);

	if (!k)
		return 0;
	return gpo__err(-EINVAL, "%s needs %s: configure it first",
		       kind_ops[s->kind].name, k->name);
}

int gpo_sched_new(const char *kind, struct gpo_sched **out)
{
	struct gpo_sched *s;
	int k;

	if (!kind || !out)
		return gpo__err(-EINVAL, "NULL argument");
	k = kind_find(kind);
	if (k < 0)
		return k;
	s = malloc(sizeof(*s));
	if (!s)
		return gpo__err(-ENOMEM, "out of memory");
	sched_init(s, k);
	*out = s;
	return 0;
}

void gpo_sched_free(struct gpo_sched *s)
{
	free(s);
}

int gpo_sched_configure(struct gpo_sched *s, const char *text)
{
	struct gpo_sched tmp;
	int ret;

	if (!s || !text)
		return gpo__err(-EINVAL, "NULL argument");
	if (s->last_epoch)
		return gpo__err(-EBUSY, "configure before the first step");
	tmp = *s;
	ret = apply_text(&tmp, text, 0);
	if (ret)
		return ret;
	/* best and T_i start from mode and t_0 */
	reset_state(&tmp);
	ret = sched_validate(&tmp, 0);
	if (ret)
		return ret;
	*s = tmp;
	return 0;
}

double gpo__sched_lr_for(struct gpo_sched *s, double base_lr)
{
	uint64_t e = s->last_epoch, w = s->warmup_steps;
	double f = s->warmup_start_factor;

	if (not_configured(s))
		return NAN;
	/* OneCycleLR sets every group's initial_lr to max_lr / div_factor */
	if (s->kind == SK_ONECYCLE)
		base_lr = s->max_lr / s->div_factor;
	/* LinearLR(f, 1.0, w)'s closed form */
	if (e < w)
		return base_lr * (f + (1.0 - f) * (double)e / (double)w);
	return kind_ops[s->kind].lr(s, base_lr, e - w);
}

double gpo_sched_lr(struct gpo_sched *s, double base_lr)
{
	if (!s) {
		gpo__err(-EINVAL, "NULL schedule");
		return NAN;
	}
	return gpo__sched_lr_for(s, base_lr);
}

int gpo_sched_step(struct gpo_sched *s, double metric)
{
	const struct sched_kind_ops *ops;
	int ret;

	if (!s)
		return gpo__err(-EINVAL, "NULL schedule");
	ret = not_configured(s);
	if (ret)
		return ret;
	ops = &kind_ops[s->kind];
	/* the warmup ignores the metric; the main schedule's epoch 0 is free */
	if (s->last_epoch >= s->warmup_steps && ops->step) {
		ret = ops->step(s, metric);
		if (ret)
			return ret;
	}
	s->last_epoch++;
	return 0;
}

uint64_t gpo_sched_last_epoch(struct gpo_sched *s)
{
	return s ? s->last_epoch : 0;
}

int gpo_sched_save(struct gpo_sched *s, char *buf, size_t len)
{
	struct outbuf o = { buf, len, 0 };
	const struct sched_key *k;
	int ret;

	if (!s || (!buf && len))
		return gpo__err(-EINVAL, "NULL argument");
	ret = not_configured(s);
	if (ret)
		return ret;
	out_add(&o, "kind=%s", kind_ops[s->kind].name);
	for (k = key_table; k < key_table + ARRAY_SIZE(key_table); k++) {
		if (!has_key(s, k))
			continue;
		out_add(&o, " %s=", k->name);
		type_ops[k->type].print(&o, k, cfield(s, k));
	}
	return (int)o.used;
}

int gpo_sched_load(struct gpo_sched *s, const char *text)
{
	char key[32], value[32];
	const char *pos = text;
	struct gpo_sched tmp;
	int kind, ret;

	if (!s || !text)
		return gpo__err(-EINVAL, "NULL argument");
	ret = gpo__kv_next(&pos, key, sizeof(key), value, sizeof(value));
	if (ret < 0)
		return ret;
	if (!ret || strcmp(key, "kind"))
		return gpo__err(-EINVAL, "a saved schedule starts with kind=");
	kind = kind_find(value);
	if (kind < 0)
		return kind;
	sched_init(&tmp, kind);
	ret = apply_text(&tmp, pos, 1);
	if (!ret)
		ret = sched_validate(&tmp, 1);
	if (!ret)
		*s = tmp;
	return ret;
}
