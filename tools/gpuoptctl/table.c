// SPDX-License-Identifier: MIT
/*
 * table.c - every listing of gpuoptctl goes through libsmartcols (what
 * lsblk and findmnt use): aligned columns whatever the widths, --json,
 * --raw, --noheadings and -o COLUMNS alike for all of them.
 */
#include <math.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpuoptctl_i.h"

int tbl_json, tbl_raw, tbl_noheadings;
const char *tbl_columns;

const struct option table_longs[] = {
	{ "json", no_argument, NULL, 'J' },
	{ "raw", no_argument, NULL, 'r' },
	{ "noheadings", no_argument, NULL, 'n' },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

int table_opt(int c, const char *arg)
{
	switch (c) {
	case 'J':
		tbl_json = 1;
		return 0;
	case 'r':
		tbl_raw = 1;
		return 0;
	case 'n':
		tbl_noheadings = 1;
		return 0;
	case 'o':
		tbl_columns = arg;
		return 0;
	}
	return -1;
}

void table_list_columns(FILE *f, const struct col_def *defs, int ndefs)
{
	int i;

	for (i = 0; i < ndefs; i++)
		fprintf(f, "%s%s", i ? "," : "", defs[i].name);
}

static int col_find(const struct col_def *defs, int ndefs, const char *name,
		    size_t len)
{
	int i;

	for (i = 0; i < ndefs; i++)
		if (strlen(defs[i].name) == len &&
		    !strncasecmp(defs[i].name, name, len))
			return i;
	return -1;
}

/* Add the columns of comma list @list; -EINVAL for an unknown one. */
static int add_columns(struct table *t, const char *list, const char *what)
{
	struct libscols_column *cl;
	const struct col_def *d;
	const char *p = list;
	size_t len;
	int i, fl;

	while (*p) {
		len = strcspn(p, ",");
		i = len ? col_find(t->defs, t->ndefs, p, len) : -1;
		if (i < 0) {
			fflush(stdout);
			fprintf(stderr, "gpuoptctl: %s: unknown column '%.*s' (columns: ",
				what, (int)len, p);
			table_list_columns(stderr, t->defs, t->ndefs);
			fprintf(stderr, ")\n");
			return -EINVAL;
		}
		p += len;
		if (*p)
			p++;
		if (t->shown[i] >= 0)
			continue;	/* named twice: shown once */
		d = &t->defs[i];
		fl = 0;
		if (d->flags & COL_RIGHT)
			fl |= SCOLS_FL_RIGHT;
		cl = scols_table_new_column(t->tb, d->header, 0, fl);
		if (!cl)
			return -ENOMEM;
		/* lsblk's keys: the lower-case names */
		scols_column_set_name(cl, tbl_json ? d->name : d->header);
		if (d->flags & COL_NUMBER)
			scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
		t->shown[i] = (int)scols_table_get_ncols(t->tb) - 1;
	}
	return 0;
}

int table_new(struct table *t, const char *name, const struct col_def *defs,
	      int ndefs, const char *defaults, const char *json_defaults)
{
	const char *list = tbl_columns;
	int i, ret;

	memset(t, 0, sizeof(*t));
	t->defs = defs;
	t->ndefs = ndefs;
	for (i = 0; i < (int)ARRAY_SIZE(t->shown); i++)
		t->shown[i] = -1;
	t->tb = scols_new_table();
	if (!t->tb) {
		err("%s: %s", name, strerror(ENOMEM));
		return -ENOMEM;
	}
	scols_table_set_name(t->tb, name);
	scols_table_enable_json(t->tb, tbl_json);
	scols_table_enable_raw(t->tb, tbl_raw);
	scols_table_enable_noheadings(t->tb, tbl_noheadings);
	if (tbl_json && json_defaults)
		defaults = json_defaults;
	/* -o +LIST: the defaults and LIST */
	if (list && *list == '+') {
		ret = add_columns(t, defaults, name);
		list++;
	} else {
		ret = 0;
	}
	if (!ret)
		ret = add_columns(t, list && *list ? list : list ? "," : defaults,
				  name);
	if (ret) {
		scols_unref_table(t->tb);
		t->tb = NULL;
	}
	return ret;
}

struct libscols_line *table_row(struct table *t)
{
	return scols_table_new_line(t->tb, NULL);
}

int table_shows(const struct table *t, int def)
{
	return def >= 0 && def < t->ndefs && t->shown[def] >= 0;
}

void table_set(struct table *t, struct libscols_line *ln, int def,
	       const char *text)
{
	if (!ln || !table_shows(t, def))
		return;
	/* JSON: an unknown number is null, not "-" */
	if (tbl_json && (t->defs[def].flags & COL_NUMBER) &&
	    (!strcmp(text, "-") || !strcmp(text, "nan") || !*text))
		return;
	scols_line_set_data(ln, t->shown[def], text);
}

/* A number: @prec digits in a table, every digit in JSON */
void table_set_num(struct table *t, struct libscols_line *ln, int def,
		   double v, int prec)
{
	char s[32];

	if (tbl_json && isfinite(v))
		gpo__fmt_double(s, sizeof(s), v);
	else
		fmt_num(s, sizeof(s), v, prec);
	table_set(t, ln, def, s);
}

void table_setf(struct table *t, struct libscols_line *ln, int def,
		const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!table_shows(t, def))
		return;
	va_start(ap, fmt);
	gpo__vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	table_set(t, ln, def, buf);
}

int table_print(struct table *t, struct gpo__sbuf *out)
{
	char *text = NULL;
	int ret;

	if (!out)
		return scols_print_table(t->tb) ? -EIO : 0;
	ret = scols_print_table_to_string(t->tb, &text);
	if (!ret && text)
		gpo__sbuf_printf(out, "%s\n", text);
	free(text);
	return ret ? -EIO : 0;
}

void table_free(struct table *t)
{
	scols_unref_table(t->tb);
	t->tb = NULL;
}
