// SPDX-License-Identifier: MIT
/*
 * tree.c - gpuoptctl's reads and writes of the tree, the daemon's reasons
 * for refusals (error_log), the jobs' stat, and the small formatters the
 * commands share.
 */
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

int tree_path(char *out, size_t len, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", ctl_mnt, rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* read_rel - the whole of file @rel; 0 or -errno */
int read_rel(const char *rel, struct gpo__sbuf *b)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, ret;

	b->len = 0;
	ret = tree_path(path, sizeof(path), rel);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (gpo__sbuf_reserve(b, 65536)) {
			ret = -ENOMEM;
			break;
		}
		n = read(fd, b->buf + b->len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		b->len += n;
	}
	close(fd);
	if (b->buf)
		b->buf[b->len] = '\0';
	return ret;
}

/* read_value - one value of file @rel without its newline, "" on error */
int read_value(const char *rel, char *out, size_t len)
{
	struct gpo__sbuf b = { 0 };
	int ret;

	out[0] = '\0';
	ret = read_rel(rel, &b);
	if (!ret && b.buf) {
		b.buf[strcspn(b.buf, "\n")] = '\0';
		snprintf(out, len, "%s", b.buf);
	}
	gpo__sbuf_free(&b);
	return ret;
}

/* kv_get - the value of @key in the "key value" lines of @text */
int kv_get(const char *text, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key), n;
	const char *p = text;

	out[0] = '\0';
	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			p += kl + 1;
			n = strcspn(p, "\n");
			if (n >= len)
				n = len - 1;
			memcpy(out, p, n);
			out[n] = '\0';
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/*
 * daemon_reason - what the daemon said about our failed operation on @rel
 * since @since: the last error_log line of our uid on that path. Lines are
 * "TIME UID PATH MESSAGE".
 */
int daemon_reason(const char *rel, const char *since, char *out,
			 size_t len)
{
	char want[PATH_MAX + 2], time_s[48], path[PATH_MAX];
	unsigned int uid;
	struct gpo__sbuf b = { 0 };
	const char *line, *next;
	int found = 0, pos;

	out[0] = '\0';
	snprintf(want, sizeof(want), "/%s", rel);
	if (read_rel("error_log", &b) || !b.buf)
		goto out;
	for (line = b.buf; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		pos = 0;
		if (sscanf(line, "%47s %u %4095s %n", time_s, &uid, path,
			   &pos) != 3 || !pos)
			continue;
		if (uid != (unsigned int)getuid() || strcmp(path, want) ||
		    strcmp(time_s, since) < 0)
			continue;
		snprintf(out, len, "%.*s", (int)(next - line - pos -
					       (next[-1] == '\n')),
			 line + pos);
		found = 1;
	}
out:
	gpo__sbuf_free(&b);
	return found;
}

/*
 * fail_op - report a failed operation on @rel with the daemon's reason and
 * the errno's words; returns the exit status 1.
 */
int fail_op(const char *what, const char *rel, const char *since,
		   int errnum)
{
	char reason[512];

	if (daemon_reason(rel, since, reason, sizeof(reason)))
		err("%s: %s (%s)", what, reason, strerror(-errnum));
	else
		err("%s: %s", what, strerror(-errnum));
	return 1;
}

/* write_rel - one whole value to @rel, as echo does; 0 or -errno */
int write_rel(const char *rel, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	ssize_t n;
	int fd, ret = 0;

	ret = tree_path(path, sizeof(path), rel);
	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	if (close(fd) && !ret && errno != EINTR)
		ret = -errno;
	return ret;
}

/* Write @text to @rel; on failure say why (@what) and return 1. */
int do_write(const char *what, const char *rel, const char *text)
{
	char since[48];
	int ret;

	gpo__fmt_time(since, sizeof(since));
	ret = write_rel(rel, text);
	return ret ? fail_op(what, rel, since, ret) : 0;
}

int tree_ok(void)
{
	char path[PATH_MAX];
	struct stat st;
	char v[64];

	if (tree_path(path, sizeof(path), "jobs") || stat(path, &st) ||
	    !S_ISDIR(st.st_mode) || read_value("version", v, sizeof(v)) ||
	    strncmp(v, "gpuoptfs ", 9)) {
		err("%s: no gpuopt tree here (is gpuoptfs running? GPUOPT_MNT or -m name the mount)",
		    ctl_mnt);
		return 0;
	}
	return 1;
}

/* A job name the tree could hold: the daemon judges the rest. */
int job_name_ok(const char *name)
{
	if (!*name || name[0] == '.' || strchr(name, '/') ||
	    strlen(name) > 63) {
		err("bad job name '%s': 1-63 of A-Z a-z 0-9 _ . -, not starting with '.'",
		    name);
		return 0;
	}
	return 1;
}

/* The job exists: 1, else say so and 0. */
int job_exists(const char *name)
{
	char path[PATH_MAX], rel[128];
	struct stat st;

	if (!job_name_ok(name))
		return 0;
	snprintf(rel, sizeof(rel), "jobs/%s", name);
	if (!tree_path(path, sizeof(path), rel) && !stat(path, &st) &&
	    S_ISDIR(st.st_mode))
		return 1;
	err("no job '%s'", name);
	return 0;
}

int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int index_cmp(const void *a, const void *b)
{
	long x = atol(*(char *const *)a), y = atol(*(char *const *)b);

	return (x > y) - (x < y);
}

static int not_hidden(const char *name, void *arg)
{
	return name[0] != '.';
}

/* list_dir - the entries of @rel, sorted by @cmp; count or -errno */
int list_dir(const char *rel, char ***out,
		    int (*cmp)(const void *, const void *))
{
	char path[PATH_MAX];
	int ret;

	*out = NULL;
	ret = tree_path(path, sizeof(path), rel);
	if (ret)
		return ret;
	return gpo__dir_list(path, not_hidden, NULL, cmp, out);
}

void fmt_bytes(char *out, size_t len, const char *text)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v;
	char *end;
	int u = 0;

	if (!strcmp(text, "max") || !*text) {
		snprintf(out, len, "%s", *text ? text : "-");
		return;
	}
	v = gpo__strtod(text, &end);
	if (end == text) {
		snprintf(out, len, "%s", text);
		return;
	}
	while (v >= 1024 && u < (int)ARRAY_SIZE(units) - 1) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%.0f B", v);
	else
		snprintf(out, len, "%.1f %s", v, units[u]);
}

void fmt_num(char *out, size_t len, double v, int prec)
{
	if (isnan(v))
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.*g", prec, v);
}

void fmt_duration(char *out, size_t len, double s)
{
	long t;

	if (isnan(s) || s < 0 || s > 1e9) {
		snprintf(out, len, "-");
		return;
	}
	t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(out, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60,
			 t % 60);
	else
		snprintf(out, len, "%ld:%02ld", t / 60, t % 60);
}

void owner_name(uid_t uid, char *out, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(out, len, "%s", pw->pw_name);
	else
		snprintf(out, len, "%u", (unsigned int)uid);
}

double num_of(const char *s)
{
	char *end;
	double v;

	if (!*s || !strcmp(s, "-"))
		return NAN;
	v = gpo__strtod(s, &end);
	return end == s ? NAN : v;
}

/* the numbers of a job's stat file: NAN where absent or "-" */
static const struct {
	const char *key;
	size_t off;
} stat_nums[] = {
	{ "loss", offsetof(struct job_stat, loss) },
	{ "lr", offsetof(struct job_stat, lr) },
	{ "eval_loss", offsetof(struct job_stat, eval_loss) },
	{ "accuracy", offsetof(struct job_stat, accuracy) },
	{ "grad_norm", offsetof(struct job_stat, grad_norm) },
	{ "steps_per_sec", offsetof(struct job_stat, steps_per_sec) },
	{ "elapsed_s", offsetof(struct job_stat, elapsed_s) },
	{ "eta_s", offsetof(struct job_stat, eta_s) },
	{ "epoch", offsetof(struct job_stat, epoch) },
	{ "samples_per_sec", offsetof(struct job_stat, samples_per_sec) },
	{ "tokens_per_sec", offsetof(struct job_stat, tokens_per_sec) },
	{ "train_accuracy", offsetof(struct job_stat, train_accuracy) },
};

/* job_stat_read - jobs/@name/stat, parsed; 0 or -errno */
int job_stat_read(const char *name, struct job_stat *js)
{
	char rel[128], v[64], path[PATH_MAX];
	struct gpo__sbuf b = { 0 };
	struct stat st;
	size_t i;
	int ret;

	memset(js, 0, sizeof(*js));
	snprintf(js->name, sizeof(js->name), "%s", name);
	snprintf(rel, sizeof(rel), "jobs/%s/stat", name);
	ret = read_rel(rel, &b);
	if (ret || !b.buf) {
		gpo__sbuf_free(&b);
		return ret ? ret : -EIO;
	}
	kv_get(b.buf, "state", js->state, sizeof(js->state));
	kv_get(b.buf, "step", v, sizeof(v));
	if (gpo__parse_u64(v, &js->step))
		js->step = 0;
	kv_get(b.buf, "max_steps", v, sizeof(v));
	js->unlimited = !strcmp(v, "max");
	if (gpo__parse_u64(v, &js->max_steps))
		js->max_steps = 0;
	for (i = 0; i < ARRAY_SIZE(stat_nums); i++) {
		kv_get(b.buf, stat_nums[i].key, v, sizeof(v));
		*(double *)((char *)js + stat_nums[i].off) = num_of(v);
	}
	kv_get(b.buf, "device", js->device, sizeof(js->device));
	kv_get(b.buf, "optimizer", js->optimizer, sizeof(js->optimizer));
	kv_get(b.buf, "model", js->model, sizeof(js->model));
	gpo__sbuf_free(&b);
	snprintf(rel, sizeof(rel), "jobs/%s", name);
	if (!tree_path(path, sizeof(path), rel) && !stat(path, &st))
		js->uid = st.st_uid;
	return 0;
}

void step_text(const struct job_stat *js, char *out, size_t len)
{
	if (js->unlimited)
		snprintf(out, len, "%llu/max", (unsigned long long)js->step);
	else
		snprintf(out, len, "%llu/%llu", (unsigned long long)js->step,
			 (unsigned long long)js->max_steps);
}

/* A state a job leaves only when told to */
int job_ended(const char *state)
{
	return !strcmp(state, "done") || !strcmp(state, "failed") ||
	       !strcmp(state, "stopped");
}

/* A verb to the job's ctl: "VERB [ARG]". */
int job_verb(const char *job, const char *verb, const char *arg)
{
	char rel[128], what[200], text[160];

	if (!tree_ok() || !job_exists(job))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s/ctl", job);
	snprintf(text, sizeof(text), "%s%s%s\n", verb, arg ? " " : "",
		 arg ? arg : "");
	snprintf(what, sizeof(what), "%s %s%s%s", verb, job, arg ? " " : "",
		 arg ? arg : "");
	return do_write(what, rel, text);
}

volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* Signals end the loops of logs -f, wait and top cleanly. */
void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

double mono_s(void)
{
	return gpo__now_ns() / 1e9;
}

int term_width(int fd)
{
	struct winsize ws;

	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

