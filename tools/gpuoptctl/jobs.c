// SPDX-License-Identifier: MIT
/*
 * jobs.c - gpuoptctl jobs, create, set, the ctl verbs, status, logs and
 * rm: the jobs/ directory of the tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

enum { J_JOB, J_OWNER, J_STATE, J_STEP, J_LOSS, J_LR, J_SPS, J_ETA, J_DEVICE,
       J_MAX_STEPS, J_EVAL_LOSS, J_ACCURACY, J_GRAD_NORM, J_ELAPSED,
       J_OPTIMIZER, J_MODEL, J_UID, J_EPOCH, J_SAMPLES_PS, J_TOKENS_PS,
       J_TRAIN_ACC };

/* a rate: whole numbers in the table, as read in JSON, "-" when absent */
static void set_rate(struct table *t, struct libscols_line *ln, int col,
		     double v)
{
	if (isnan(v) || tbl_json)
		table_set_num(t, ln, col, v, 6);
	else
		table_setf(t, ln, col, "%.0f", v);
}

static const struct col_def job_cols[] = {
	[J_JOB] = { "job", "JOB", 0, "" },
	[J_OWNER] = { "owner", "OWNER", 0, "" },
	[J_STATE] = { "state", "STATE", 0, "" },
	[J_STEP] = { "step", "STEP", COL_RIGHT | COL_NUMBER, "" },
	[J_LOSS] = { "loss", "LOSS", COL_RIGHT | COL_NUMBER, "" },
	[J_LR] = { "lr", "LR", COL_RIGHT | COL_NUMBER, "" },
	[J_SPS] = { "steps_per_sec", "STEPS/S", COL_RIGHT | COL_NUMBER, "" },
	[J_ETA] = { "eta", "ETA", COL_RIGHT | COL_NUMBER, "" },
	[J_DEVICE] = { "device", "DEVICE", 0, "" },
	[J_MAX_STEPS] = { "max_steps", "MAX_STEPS", COL_RIGHT | COL_NUMBER, "" },
	[J_EVAL_LOSS] = { "eval_loss", "EVAL_LOSS", COL_RIGHT | COL_NUMBER, "" },
	[J_ACCURACY] = { "accuracy", "ACCURACY", COL_RIGHT | COL_NUMBER, "" },
	[J_GRAD_NORM] = { "grad_norm", "GRAD_NORM", COL_RIGHT | COL_NUMBER, "" },
	[J_ELAPSED] = { "elapsed_s", "ELAPSED_S", COL_RIGHT | COL_NUMBER, "" },
	[J_OPTIMIZER] = { "optimizer", "OPTIMIZER", 0, "" },
	[J_MODEL] = { "model", "MODEL", 0, "" },
	[J_UID] = { "uid", "UID", COL_RIGHT | COL_NUMBER, "" },
	/* what a model trained on data reports: "-" for the others */
	[J_EPOCH] = { "epoch", "EPOCH", COL_RIGHT | COL_NUMBER, "" },
	[J_SAMPLES_PS] = { "samples_per_sec", "SAMPLES/S",
			   COL_RIGHT | COL_NUMBER, "" },
	[J_TOKENS_PS] = { "tokens_per_sec", "TOKENS/S",
			  COL_RIGHT | COL_NUMBER, "" },
	[J_TRAIN_ACC] = { "train_accuracy", "TRAIN_ACC",
			  COL_RIGHT | COL_NUMBER, "" },
};

#define JOB_DEFAULT "job,owner,state,step,loss,lr,steps_per_sec,eta,device"
#define JOB_JSON "job,owner,state,step,max_steps,loss,lr,steps_per_sec,eta,device"


/* jobs_table - the jobs, into @out for top, else printed */
int jobs_table(struct gpo__sbuf *out)
{
	char **names, v[64];
	struct libscols_line *ln;
	struct job_stat js;
	struct table t;
	int n, i, ret, rows = 0;

	ret = table_new(&t, "jobs", job_cols, ARRAY_SIZE(job_cols),
			JOB_DEFAULT, JOB_JSON);
	if (ret)
		return ret;
	n = list_dir("jobs", &names, name_cmp);
	for (i = 0; i < n; i++) {
		if (job_stat_read(names[i], &js))
			continue;	/* removed meanwhile */
		rows++;
		ln = table_row(&t);
		table_set(&t, ln, J_JOB, js.name);
		owner_name(js.uid, v, sizeof(v));
		table_set(&t, ln, J_OWNER, v);
		table_set(&t, ln, J_STATE, js.state);
		/* JSON: the step done, max_steps in its own column */
		if (tbl_json)
			snprintf(v, sizeof(v), "%llu",
				 (unsigned long long)js.step);
		else
			step_text(&js, v, sizeof(v));
		table_set(&t, ln, J_STEP, v);
		if (js.unlimited)	/* JSON: null */
			table_set(&t, ln, J_MAX_STEPS, tbl_json ? "" : "max");
		else
			table_setf(&t, ln, J_MAX_STEPS, "%llu",
				   (unsigned long long)js.max_steps);
		table_set_num(&t, ln, J_LOSS, js.loss, 6);
		table_set_num(&t, ln, J_LR, js.lr, 4);
		table_set_num(&t, ln, J_EVAL_LOSS, js.eval_loss, 6);
		table_set_num(&t, ln, J_ACCURACY, js.accuracy, 4);
		table_set_num(&t, ln, J_GRAD_NORM, js.grad_norm, 6);
		table_set_num(&t, ln, J_EPOCH, js.epoch, 20);
		table_set_num(&t, ln, J_TRAIN_ACC, js.train_accuracy, 4);
		set_rate(&t, ln, J_SAMPLES_PS, js.samples_per_sec);
		set_rate(&t, ln, J_TOKENS_PS, js.tokens_per_sec);
		table_set_num(&t, ln, J_ELAPSED, js.elapsed_s, 6);
		if (isnan(js.steps_per_sec) || js.steps_per_sec <= 0)
			table_set(&t, ln, J_SPS, "-");
		else if (tbl_json)
			table_set_num(&t, ln, J_SPS, js.steps_per_sec, 6);
		else
			table_setf(&t, ln, J_SPS, "%.0f", js.steps_per_sec);
		if (tbl_json && !strcmp(js.state, "running"))
			table_set_num(&t, ln, J_ETA, js.eta_s, 6);	/* seconds */
		else if (!strcmp(js.state, "running"))
			fmt_duration(v, sizeof(v), js.eta_s);
		else
			snprintf(v, sizeof(v), "-");
		if (!tbl_json || strcmp(js.state, "running"))
			table_set(&t, ln, J_ETA, v);
		table_set(&t, ln, J_DEVICE, js.device);
		table_set(&t, ln, J_OPTIMIZER, js.optimizer);
		table_set(&t, ln, J_MODEL, js.model);
		table_setf(&t, ln, J_UID, "%u", (unsigned int)js.uid);
	}
	gpo__dir_free(names, n > 0 ? n : 0);
	ret = table_print(&t, out);
	table_free(&t);
	/* a bare header says nothing about why the table is empty */
	if (!ret && !rows && !tbl_json && !tbl_raw && !tbl_noheadings) {
		if (out)
			gpo__sbuf_printf(out, "(no jobs)\n");
		else
			printf("(no jobs)\n");
	}
	return ret;
}

int cmd_jobs(int argc, char **argv)
{
	int status = operands(argc, 0, 0);
	struct table t;

	if (status)
		return status;
	if (table_new(&t, "jobs", job_cols, ARRAY_SIZE(job_cols), JOB_DEFAULT,
		      JOB_JSON))
		return EXIT_USAGE;
	table_free(&t);
	if (!tree_ok())
		return 1;
	return jobs_table(NULL) ? 1 : 0;
}

/* ---- making and changing jobs -------------------------------------------- */

/* The key=value operands as one config text, one word a line. */
static int config_text(int argc, char **argv, struct gpo__sbuf *text)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strchr(argv[i], '=') || argv[i][0] == '=') {
			err("'%s' is not key=value", argv[i]);
			return -EINVAL;
		}
		gpo__sbuf_printf(text, "%s\n", argv[i]);
	}
	return 0;
}

/*
 * job_create - make job @name with config @text (may be empty): all or
 * nothing, a refused config removes the job again. The exit status.
 */
int job_create(const char *name, const char *text)
{
	char path[PATH_MAX], rel[128], what[160], since[48], reason[512];
	int ret;

	if (!job_name_ok(name))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s", name);
	snprintf(what, sizeof(what), "create %s", name);
	tree_path(path, sizeof(path), rel);
	gpo__fmt_time(since, sizeof(since));
	if (mkdir(path, 0755))
		return fail_op(what, rel, since, -errno);
	if (!*text)
		return 0;
	snprintf(rel, sizeof(rel), "jobs/%s/config", name);
	ret = write_rel(rel, text);
	if (!ret)
		return 0;
	if (!daemon_reason(rel, since, reason, sizeof(reason)))
		snprintf(reason, sizeof(reason), "the config");
	rmdir(path);
	err("%s: %s (%s)", what, reason, strerror(-ret));
	return 1;
}

int cmd_create(int argc, char **argv)
{
	struct gpo__sbuf text = { 0 };
	int status;

	status = operands(argc, 1, INT_MAX);
	if (status)
		return status;
	if (config_text(argc - 1, argv + 1, &text))
		return EXIT_USAGE;
	status = tree_ok() ? job_create(argv[0], text.buf ? text.buf : "") : 1;
	gpo__sbuf_free(&text);
	return status;
}

int cmd_set(int argc, char **argv)
{
	char rel[128], what[160];
	struct gpo__sbuf text = { 0 };
	int status, ret;

	status = operands(argc, 2, INT_MAX);
	if (status)
		return status;
	if (config_text(argc - 1, argv + 1, &text))
		return EXIT_USAGE;
	if (!tree_ok() || !job_exists(argv[0])) {
		gpo__sbuf_free(&text);
		return 1;
	}
	snprintf(rel, sizeof(rel), "jobs/%s/config", argv[0]);
	snprintf(what, sizeof(what), "set %s", argv[0]);
	ret = do_write(what, rel, text.buf);
	gpo__sbuf_free(&text);
	return ret;
}

static int rm_purge;

const struct option rm_longs[] = {
	{ "purge", no_argument, NULL, 'P' },
	{ NULL, 0, NULL, 0 },
};

int rm_opt(int c, const char *arg)
{
	if (c != 'P')
		return -1;
	rm_purge = 1;
	return 0;
}

/*
 * A job's record and checkpoints outlive the daemon, so rmdir of a job
 * with checkpoints is ENOTEMPTY until purge deletes them: --purge writes
 * it then and tries again, a plain rm says so. rmdir goes first so that
 * a job that may not go (running, another's) keeps its checkpoints.
 */
static int rm_one(const char *name)
{
	char path[PATH_MAX], rel[128], what[160], since[48];

	if (!job_exists(name))
		return 1;
	snprintf(what, sizeof(what), "rm %s", name);
	snprintf(rel, sizeof(rel), "jobs/%s", name);
	tree_path(path, sizeof(path), rel);
	gpo__fmt_time(since, sizeof(since));
	if (!rmdir(path))
		return 0;
	if (errno != ENOTEMPTY)
		return fail_op(what, rel, since, -errno);
	if (!rm_purge) {
		err("%s: the job has checkpoints: gpuoptctl rm --purge deletes them with it",
		    what);
		return 1;
	}
	if (job_verb(name, "purge", NULL))
		return 1;
	gpo__fmt_time(since, sizeof(since));
	return rmdir(path) ? fail_op(what, rel, since, -errno) : 0;
}

int cmd_rm(int argc, char **argv)
{
	int status, i, ret = 0;

	status = operands(argc, 1, INT_MAX);
	if (status)
		return status;
	if (!tree_ok())
		return 1;
	for (i = 0; i < argc; i++)
		if (rm_one(argv[i]))
			ret = 1;
	return ret;
}

int cmd_verb(int argc, char **argv)
{
	int status;

	status = operands(argc, 1, 1);
	if (status)
		return status;
	return job_verb(argv[0], cur_cmd->name, NULL);
}

int cmd_step(int argc, char **argv)
{
	int status;
	uint64_t n;

	status = operands(argc, 2, 2);
	if (status)
		return status;
	if (gpo__parse_u64(argv[1], &n)) {
		err("step: N must be a whole number, not '%s'",
		    argv[1]);
		return EXIT_USAGE;
	}
	return job_verb(argv[0], "step", argv[1]);
}

int cmd_checkpoint(int argc, char **argv)
{
	int status;

	status = operands(argc, 1, 2);
	if (status)
		return status;
	return job_verb(argv[0], "checkpoint",
			argc == 2 ? argv[1] : NULL);
}

int cmd_restore(int argc, char **argv)
{
	int status;

	status = operands(argc, 2, 2);
	if (status)
		return status;
	return job_verb(argv[0], "restore", argv[1]);
}

/* ---- status and logs ----------------------------------------------------- */

/* status's lines: "key value", or one JSON object with --json */
static int kv_count;

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void kv_out(const char *key, const char *value)
{
	double d;

	if (!tbl_json) {
		printf("%-14s %s\n", key, value);
		return;
	}
	printf("%s\n   ", kv_count++ ? "," : "{");
	json_str(key);
	fputs(": ", stdout);
	/* numbers as numbers; nan and inf have no JSON form */
	if (!gpo__parse_double(value, &d))
		fputs(value, stdout);
	else if (!strcmp(value, "nan") || !strcmp(value, "inf") ||
		 !strcmp(value, "-inf"))
		fputs("null", stdout);
	else
		json_str(value);
}

static void list_ckpt(const char *job)
{
	char rel[128], **names;
	size_t sl = strlen(".safetensors"), l;
	int n, i;

	snprintf(rel, sizeof(rel), "jobs/%s/checkpoints", job);
	n = list_dir(rel, &names, name_cmp);
	if (n < 0)
		return;		/* not ours to read */
	if (tbl_json)
		printf(",\n   \"checkpoints\": [");
	else
		printf("%-14s", "checkpoints");
	for (i = 0; i < n; i++) {
		l = strlen(names[i]);
		if (l > sl && !strcmp(names[i] + l - sl, ".safetensors"))
			names[i][l - sl] = '\0';
		if (tbl_json) {
			fputs(i ? ", " : "", stdout);
			json_str(names[i]);
		} else {
			printf(" %s", names[i]);
		}
	}
	if (tbl_json)
		printf("]");
	else
		printf("%s\n", n ? "" : " -");
	gpo__dir_free(names, n);
}

int cmd_status(int argc, char **argv)
{
	char rel[128], owner[64], key[64], *p, *line, *save = NULL;
	struct gpo__sbuf b = { 0 };
	struct job_stat js;
	const char *job;
	int status, ret;

	status = operands(argc, 1, 1);
	if (status)
		return status;
	job = argv[0];
	if (!tree_ok() || !job_exists(job))
		return 1;
	ret = job_stat_read(job, &js);
	if (ret) {
		err("status %s: %s", job, strerror(-ret));
		return 1;
	}
	kv_out("job", job);
	owner_name(js.uid, owner, sizeof(owner));
	if (tbl_json) {
		kv_out("owner", owner);
		snprintf(owner, sizeof(owner), "%u", (unsigned int)js.uid);
		kv_out("uid", owner);
	} else {
		printf("%-14s %s (uid %u)\n", "owner", owner,
		       (unsigned int)js.uid);
	}
	snprintf(rel, sizeof(rel), "jobs/%s/stat", job);
	if (!read_rel(rel, &b) && b.buf) {
		for (line = strtok_r(b.buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			p = strchr(line, ' ');
			if (!p)
				continue;
			snprintf(key, sizeof(key), "%.*s", (int)(p - line),
				 line);
			kv_out(key, p + 1);
		}
	}
	snprintf(rel, sizeof(rel), "jobs/%s/error", job);
	if (!read_rel(rel, &b) && b.len) {
		b.buf[strcspn(b.buf, "\n")] = '\0';
		kv_out("error", b.buf);
	}
	gpo__sbuf_free(&b);
	list_ckpt(job);
	if (tbl_json)
		printf("\n}\n");
	return 0;
}

static int logs_follow;
static int logs_history;

const struct option logs_longs[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "history", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 },
};

int logs_opt(int c, const char *arg)
{
	if (c == 'f')
		logs_follow = 1;
	else if (c == 'H')
		logs_history = 1;
	else
		return -1;
	return 0;
}

/* Copy what @fd has to stdout; 0 at the end, -errno on failure. */
static int drain(int fd)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR && !got_signal)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (fwrite(buf, 1, n, stdout) != (size_t)n || fflush(stdout))
			return -EPIPE;
	}
}

int cmd_logs(int argc, char **argv)
{
	char rel[128], path[PATH_MAX], dir[PATH_MAX];
	struct pollfd pfd;
	struct stat st;
	int status, fd, ret;

	status = operands(argc, 1, 1);
	if (status)
		return status;
	if (!tree_ok() || !job_exists(argv[0]))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s/%s", argv[0],
		 logs_history ? "history.csv" : "events");
	tree_path(path, sizeof(path), rel);
	snprintf(rel, sizeof(rel), "jobs/%s", argv[0]);
	tree_path(dir, sizeof(dir), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err("logs %s: %s", argv[0], strerror(errno));
		return 1;
	}
	if (logs_follow)
		catch_signals();
	ret = drain(fd);
	while (!ret && logs_follow && !got_signal) {
		/* events wakes poll(); history.csv is read each second */
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			ret = -errno;
		if (!ret && !got_signal)
			ret = drain(fd);
		/* the job was removed: its files answer ENOENT from then on */
		if ((!ret || ret == -ENOENT) && stat(dir, &st)) {
			ret = 0;
			break;
		}
	}
	close(fd);
	if (ret && ret != -EPIPE && !got_signal) {
		err("logs %s: %s", argv[0], strerror(-ret));
		return 1;
	}
	return 0;
}

