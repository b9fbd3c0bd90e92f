/* SPDX-License-Identifier: MIT */
/*
 * gpuoptctl_i.h - what gpuoptctl's files share: the tree, messages,
 * formatting, the tables (libsmartcols) and the commands.
 *
 *   main.c     options, the command table, dispatch, help
 *   tree.c     reads and writes of the tree, the daemon's reasons
 *   table.c    every listing through libsmartcols: -J -r -n -o
 *   devices.c  devices, pools, rescan
 *   jobs.c     jobs, create, set, the verbs, status, logs, rm
 *   wait.c     wait
 *   top.c      top
 *   plot.c     plot
 *   sweep.c    sweep
 */
#ifndef GPUOPTCTL_I_H
#define GPUOPTCTL_I_H

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <libsmartcols.h>
#include "common/common.h"	/* linked from libgpocommon.a */

#define CTL_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124

/* ---- main.c -------------------------------------------------------------- */

extern const char *ctl_mnt;

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;
	const char *summary;		/* a line of gpuoptctl --help */
	const char *help;
	/* the command's own options, besides the global ones */
	const char *shorts;
	const struct option *longs;
	int (*opt)(int c, const char *arg);	/* 0, or -1: usage error */
};

extern const struct cmd *cur_cmd;

void err(const char *fmt, ...) CTL_PRINTF(1, 2);
int cmd_usage(FILE *f);
/* A command's operands between @min and @max: 0, or a usage error's status */
int operands(int argc, int min, int max);

/* ---- tree.c -------------------------------------------------------------- */

int tree_path(char *out, size_t len, const char *rel);
int read_rel(const char *rel, struct gpo__sbuf *b);
int read_value(const char *rel, char *out, size_t len);
int kv_get(const char *text, const char *key, char *out, size_t len);
int daemon_reason(const char *rel, const char *since, char *out, size_t len);
int fail_op(const char *what, const char *rel, const char *since, int errnum);
int write_rel(const char *rel, const char *text);
int do_write(const char *what, const char *rel, const char *text);
int tree_ok(void);
int job_name_ok(const char *name);
int job_exists(const char *name);
int name_cmp(const void *a, const void *b);
int index_cmp(const void *a, const void *b);
int list_dir(const char *rel, char ***out,
	     int (*cmp)(const void *, const void *));
/* A verb to the job's ctl, "VERB [ARG]"; the exit status */
int job_verb(const char *job, const char *verb, const char *arg);

void fmt_bytes(char *out, size_t len, const char *text);
void fmt_num(char *out, size_t len, double v, int prec);
void fmt_duration(char *out, size_t len, double s);
void owner_name(uid_t uid, char *out, size_t len);
double num_of(const char *s);
double mono_s(void);
int term_width(int fd);

struct job_stat {
	char name[64];
	uid_t uid;
	char state[16];
	uint64_t step;
	uint64_t max_steps;
	int unlimited;
	double loss;
	double eval_loss;	/* NAN when the job has none */
	double accuracy;
	double lr;
	double grad_norm;
	double steps_per_sec;
	double elapsed_s;
	double eta_s;
	double epoch;		/* models trained on data; else NAN */
	double samples_per_sec;
	double tokens_per_sec;	/* gpt jobs */
	double train_accuracy;
	char device[32];
	char optimizer[16];
	char model[64];
};

int job_stat_read(const char *name, struct job_stat *js);
void step_text(const struct job_stat *js, char *out, size_t len);
int job_ended(const char *state);

extern volatile sig_atomic_t got_signal;
void catch_signals(void);

/* ---- table.c ------------------------------------------------------------- */

/* the listing options: -J --json, -r --raw, -n --noheadings, -o COLUMNS */
extern int tbl_json, tbl_raw, tbl_noheadings;
extern const char *tbl_columns;
extern const struct option table_longs[];
#define TABLE_SHORTS "Jrno:"
int table_opt(int c, const char *arg);
void table_opts_reset(void);

enum {
	COL_RIGHT = 1 << 0,	/* numbers */
	COL_NUMBER = 1 << 1,	/* a number in JSON */
	COL_WRAP = 1 << 2,	/* the last, free-width text */
};

struct col_def {
	const char *name;	/* -o's name and the JSON key */
	const char *header;
	int flags;
	const char *help;
};

struct table {
	struct libscols_table *tb;
	const struct col_def *defs;
	int ndefs;
	int shown[32];		/* def index -> scols column, or -1 */
};

/*
 * table_new - a table named @name (JSON's key) of @defs, the columns that
 * -o names or else @defaults (comma list; @json_defaults for --json when
 * given). An unknown column is a usage error: it says which, lists the
 * known ones and returns -EINVAL.
 */
int table_new(struct table *t, const char *name, const struct col_def *defs,
	      int ndefs, const char *defaults, const char *json_defaults);
struct libscols_line *table_row(struct table *t);
/* table_set - the cell of column @def in @ln, if it is shown */
void table_set(struct table *t, struct libscols_line *ln, int def,
	       const char *text);
/* table_set_num - a number: @prec digits in a table, every digit in JSON */
void table_set_num(struct table *t, struct libscols_line *ln, int def,
		   double v, int prec);
void table_setf(struct table *t, struct libscols_line *ln, int def,
		const char *fmt, ...) CTL_PRINTF(4, 5);
int table_shows(const struct table *t, int def);
/* table_print - to stdout, or into @out when @out is given */
int table_print(struct table *t, struct gpo__sbuf *out);
void table_free(struct table *t);
void table_list_columns(FILE *f, const struct col_def *defs, int ndefs);

/* ---- the tables that top also draws -------------------------------------- */

int devices_table(struct gpo__sbuf *out);
int jobs_table(struct gpo__sbuf *out);

/* ---- the commands -------------------------------------------------------- */

int cmd_devices(int argc, char **argv);
int cmd_pools(int argc, char **argv);
int cmd_rescan(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int job_create(const char *name, const char *text);
int cmd_create(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_verb(int argc, char **argv);
int cmd_step(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

extern const struct option logs_longs[], wait_longs[], top_longs[],
	plot_longs[], sweep_longs[], rm_longs[];
int logs_opt(int c, const char *arg);
int rm_opt(int c, const char *arg);
int wait_opt(int c, const char *arg);
int top_opt(int c, const char *arg);
int plot_opt(int c, const char *arg);
int sweep_opt(int c, const char *arg);

#endif /* GPUOPTCTL_I_H */
