// SPDX-License-Identifier: MIT
/*
 * gpuoptctl - a friendly command over the /gpuopt tree of gpuoptfs
 *
 *   gpuoptctl [-m MOUNT] COMMAND [ARG...]      (gpuoptctl --help lists them)
 *
 * It works only through the mounted tree (GPUOPT_MNT, default /gpuopt):
 * every command is reads of files, writes of one value, mkdir and rmdir,
 * so whatever it does a script can do with cat and echo. It links nothing
 * but libc. A failed write prints the daemon's own reason, taken from
 * error_log, and exits 1; a usage error exits 2.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <gpuopt.h>		/* the version macros only */
#include "common/common.h"	/* linked from libgpocommon.a */

#define STR_(x) #x
#define STR(x) STR_(x)
#define CTL_VERSION STR(GPUOPT_VERSION_MAJOR) "." \
	STR(GPUOPT_VERSION_MINOR) "." STR(GPUOPT_VERSION_PATCH)
#define PRINTF(a, b) __attribute__((format(printf, a, b)))

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124

static const char *mnt = "/gpuopt";

/* ---- messages ------------------------------------------------------------ */

static void PRINTF(1, 2) err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("gpuoptctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the tree ------------------------------------------------------------ */

static int tree_path(char *out, size_t len, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", mnt, rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* read_rel - the whole of file @rel; 0 or -errno */
static int read_rel(const char *rel, struct gpo__sbuf *b)
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
static int read_value(const char *rel, char *out, size_t len)
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
static int kv_get(const char *text, const char *key, char *out, size_t len)
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
static int daemon_reason(const char *rel, const char *since, char *out,
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
static int fail_op(const char *what, const char *rel, const char *since,
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
static int write_rel(const char *rel, const char *text)
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
static int do_write(const char *what, const char *rel, const char *text)
{
	char since[48];
	int ret;

	gpo__fmt_time(since, sizeof(since));
	ret = write_rel(rel, text);
	return ret ? fail_op(what, rel, since, ret) : 0;
}

static int tree_ok(void)
{
	char path[PATH_MAX];
	struct stat st;
	char v[64];

	if (tree_path(path, sizeof(path), "jobs") || stat(path, &st) ||
	    !S_ISDIR(st.st_mode) || read_value("version", v, sizeof(v)) ||
	    strncmp(v, "gpuoptfs ", 9)) {
		err("%s: no gpuopt tree here (is gpuoptfs running? GPUOPT_MNT or -m name the mount)",
		    mnt);
		return 0;
	}
	return 1;
}

/* A job name the tree could hold: the daemon judges the rest. */
static int job_name_ok(const char *name)
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
static int job_exists(const char *name)
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

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int index_cmp(const void *a, const void *b)
{
	long x = atol(*(char *const *)a), y = atol(*(char *const *)b);

	return (x > y) - (x < y);
}

static int not_hidden(const char *name, void *arg)
{
	return name[0] != '.';
}

/* list_dir - the entries of @rel, sorted by @cmp; count or -errno */
static int list_dir(const char *rel, char ***out,
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

/* ---- formatting ---------------------------------------------------------- */

static void fmt_bytes(char *out, size_t len, const char *text)
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

static void fmt_num(char *out, size_t len, double v, int prec)
{
	if (isnan(v))
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.*g", prec, v);
}

static void fmt_duration(char *out, size_t len, double s)
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

static void owner_name(uid_t uid, char *out, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(out, len, "%s", pw->pw_name);
	else
		snprintf(out, len, "%u", (unsigned int)uid);
}

static double num_of(const char *s)
{
	char *end;
	double v;

	if (!*s || !strcmp(s, "-"))
		return NAN;
	v = gpo__strtod(s, &end);
	return end == s ? NAN : v;
}

/* ---- jobs and devices as the tree shows them ---------------------------- */

struct job_stat {
	char name[64];
	uid_t uid;
	char state[16];
	uint64_t step;
	uint64_t max_steps;
	int unlimited;
	double loss;
	double lr;
	double grad_norm;
	double steps_per_sec;
	double elapsed_s;
	double eta_s;
	char device[32];
	char optimizer[16];
	char model[64];
};

/* job_stat_read - jobs/@name/stat, parsed; 0 or -errno */
static int job_stat_read(const char *name, struct job_stat *js)
{
	char rel[128], v[64], path[PATH_MAX];
	struct gpo__sbuf b = { 0 };
	struct stat st;
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
	kv_get(b.buf, "loss", v, sizeof(v));
	js->loss = num_of(v);
	kv_get(b.buf, "lr", v, sizeof(v));
	js->lr = num_of(v);
	kv_get(b.buf, "grad_norm", v, sizeof(v));
	js->grad_norm = num_of(v);
	kv_get(b.buf, "steps_per_sec", v, sizeof(v));
	js->steps_per_sec = num_of(v);
	kv_get(b.buf, "elapsed_s", v, sizeof(v));
	js->elapsed_s = num_of(v);
	kv_get(b.buf, "eta_s", v, sizeof(v));
	js->eta_s = num_of(v);
	kv_get(b.buf, "device", js->device, sizeof(js->device));
	kv_get(b.buf, "optimizer", js->optimizer, sizeof(js->optimizer));
	kv_get(b.buf, "model", js->model, sizeof(js->model));
	gpo__sbuf_free(&b);
	snprintf(rel, sizeof(rel), "jobs/%s", name);
	if (!tree_path(path, sizeof(path), rel) && !stat(path, &st))
		js->uid = st.st_uid;
	return 0;
}

static void step_text(const struct job_stat *js, char *out, size_t len)
{
	if (js->unlimited)
		snprintf(out, len, "%llu/max", (unsigned long long)js->step);
	else
		snprintf(out, len, "%llu/%llu", (unsigned long long)js->step,
			 (unsigned long long)js->max_steps);
}

static void jobs_table(struct gpo__sbuf *out, int width)
{
	char **names, steps[48], loss[24], lr[24], sps[24], eta[24],
	     owner[32], line[512];
	struct job_stat js;
	int n, i;

	n = list_dir("jobs", &names, name_cmp);
	snprintf(line, sizeof(line), "%-20s %-8s %-8s %17s %12s %10s %9s %8s %s",
		 "JOB", "OWNER", "STATE", "STEP", "LOSS", "LR", "STEPS/S",
		 "ETA", "DEVICE");
	gpo__sbuf_printf(out, "%.*s\n", width, line);
	for (i = 0; i < n; i++) {
		if (job_stat_read(names[i], &js))
			continue;	/* removed meanwhile */
		step_text(&js, steps, sizeof(steps));
		fmt_num(loss, sizeof(loss), js.loss, 6);
		fmt_num(lr, sizeof(lr), js.lr, 4);
		if (isnan(js.steps_per_sec) || js.steps_per_sec <= 0)
			snprintf(sps, sizeof(sps), "-");
		else
			snprintf(sps, sizeof(sps), "%.0f", js.steps_per_sec);
		if (!strcmp(js.state, "running"))
			fmt_duration(eta, sizeof(eta), js.eta_s);
		else
			snprintf(eta, sizeof(eta), "-");
		owner_name(js.uid, owner, sizeof(owner));
		snprintf(line, sizeof(line),
			 "%-20s %-8s %-8s %17s %12s %10s %9s %8s %s",
			 js.name, owner, js.state, steps, loss, lr, sps, eta,
			 js.device);
		gpo__sbuf_printf(out, "%.*s\n", width, line);
	}
	if (n <= 0)
		gpo__sbuf_printf(out, "(no jobs)\n");
	gpo__dir_free(names, n > 0 ? n : 0);
}

static void dev_value(const char *idx, const char *file, char *out,
		      size_t len)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "devices/%s/%s", idx, file);
	if (read_value(rel, out, len))
		snprintf(out, len, "-");
}

static void devices_table(struct gpo__sbuf *out, int width)
{
	char **idx, id[32], type[24], cus[16], total[32], used[32], busy[16],
	     en[8], present[8], name[128], mt[32], mu[32], line[512];
	int n, i;

	n = list_dir("devices", &idx, index_cmp);
	snprintf(line, sizeof(line), "%-3s %-10s %-10s %5s %10s %10s %5s %4s %s",
		 "IDX", "ID", "TYPE", "CUS", "MEMORY", "POOL", "BUSY", "EN",
		 "NAME");
	gpo__sbuf_printf(out, "%.*s\n", width, line);
	for (i = 0; i < n; i++) {
		dev_value(idx[i], "id", id, sizeof(id));
		dev_value(idx[i], "type", type, sizeof(type));
		dev_value(idx[i], "compute_units", cus, sizeof(cus));
		dev_value(idx[i], "mem_total_bytes", mt, sizeof(mt));
		dev_value(idx[i], "mem_used_bytes", mu, sizeof(mu));
		dev_value(idx[i], "busy_percent", busy, sizeof(busy));
		dev_value(idx[i], "enabled", en, sizeof(en));
		dev_value(idx[i], "present", present, sizeof(present));
		if (!strcmp(present, "0"))
			snprintf(en, sizeof(en), "gone");
		dev_value(idx[i], "name", name, sizeof(name));
		fmt_bytes(total, sizeof(total), mt);
		fmt_bytes(used, sizeof(used), mu);
		snprintf(line, sizeof(line),
			 "%-3s %-10s %-10s %5s %10s %10s %4s%% %4s %s", idx[i],
			 id, type, cus, total, used, busy, en, name);
		gpo__sbuf_printf(out, "%.*s\n", width, line);
	}
	gpo__dir_free(idx, n > 0 ? n : 0);
}

/* ---- usage --------------------------------------------------------------- */

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;
	const char *summary;		/* a line of gpuoptctl --help */
	const char *help;
};

static const struct cmd *cur_cmd;

static const struct cmd cmds[];

static void main_usage(FILE *f)
{
	const struct cmd *c;

	fprintf(f,
		"usage: gpuoptctl [-m MOUNT] COMMAND [ARG...]\n"
		"\n"
		"Inspect and steer gpuoptfs through its tree (GPUOPT_MNT, default /gpuopt).\n"
		"\n");
	for (c = cmds; c->name; c++) {
		int n = fprintf(f, "  %s%s%s", c->name, *c->args ? " " : "",
				c->args);

		if (n > 30)
			fprintf(f, "\n%32s%s\n", "", c->summary);
		else
			fprintf(f, "%*s%s\n", 32 - n, "", c->summary);
	}
	fprintf(f,
		"\n"
		"  -m, --mount DIR  the tree's mountpoint\n"
		"  -V, --version    print the version\n"
		"  -h, --help       this help; gpuoptctl COMMAND --help for one command\n"
		"See gpuoptctl(1) and gpuoptfs(8).\n");
}

static int cmd_usage(FILE *f)
{
	fprintf(f, "usage: gpuoptctl %s%s%s\n\n%s", cur_cmd->name,
		*cur_cmd->args ? " " : "", cur_cmd->args, cur_cmd->help);
	return f == stdout ? 0 : EXIT_USAGE;
}

/*
 * parse_opts - getopt over a command's own arguments; --help prints its
 * usage. Returns the index of the first operand, or -1 with *status set
 * when the command should exit now.
 */
static int parse_opts(int argc, char **argv, const char *shorts,
		      const struct option *longs,
		      int (*opt)(int c, const char *arg), int *status)
{
	static const struct option none[] = { { NULL, 0, NULL, 0 } };
	struct option all[16];
	char sh[32];
	int c, n = 0;

	for (; longs && longs[n].name && n < 14; n++)
		all[n] = longs[n];
	all[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	all[n] = none[0];
	snprintf(sh, sizeof(sh), "+h%s", shorts);
	optind = 0;	/* glibc: start afresh on a new argv */
	opterr = 0;
	while ((c = getopt_long(argc, argv, sh, all, NULL)) != -1) {
		if (c == 'h') {
			*status = cmd_usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':' || !opt || opt(c, optarg)) {
			if (c == '?' || c == ':')
				err("%s: bad option '%s'", cur_cmd->name,
				    argv[optind - 1]);
			*status = cmd_usage(stderr);
			return -1;
		}
	}
	return optind;
}

/* A command without options that takes between @min and @max operands. */
static int operands(int argc, char **argv, int min, int max, int *status)
{
	int first = parse_opts(argc, argv, "", NULL, NULL, status);

	if (first < 0)
		return -1;
	if (argc - first < min || argc - first > max) {
		*status = cmd_usage(stderr);
		return -1;
	}
	return first;
}

/* ---- devices, pools, jobs ------------------------------------------------ */

/* devices and jobs: a table that top also draws, printed once */
static int print_table(int argc, char **argv,
		       void (*table)(struct gpo__sbuf *out, int width))
{
	struct gpo__sbuf out = { 0 };
	int status;

	if (operands(argc, argv, 0, 0, &status) < 0)
		return status;
	if (!tree_ok())
		return 1;
	table(&out, INT_MAX);
	fwrite(out.buf, 1, out.len, stdout);
	gpo__sbuf_free(&out);
	return 0;
}

static int cmd_devices(int argc, char **argv)
{
	return print_table(argc, argv, devices_table);
}

static int cmd_pools(int argc, char **argv)
{
	char **idx, rel[128], id[32], cap[32], used[32], cached[32], peak[32],
	     lim[32], v[64], allocs[24], fails[24];
	struct gpo__sbuf b = { 0 };
	int n, i, status, ret;

	if (operands(argc, argv, 0, 0, &status) < 0)
		return status;
	if (!tree_ok())
		return 1;
	n = list_dir("pools", &idx, index_cmp);
	printf("%-3s %-10s %10s %10s %10s %10s %10s %8s %8s\n", "IDX", "DEVICE",
	       "CAPACITY", "USED", "CACHED", "PEAK", "LIMIT", "ALLOCS",
	       "FAILURES");
	for (i = 0; i < n; i++) {
		dev_value(idx[i], "id", id, sizeof(id));
		snprintf(rel, sizeof(rel), "pools/%s/stat", idx[i]);
		/* reading a pool opens its device: a gone one says ENODEV */
		ret = read_rel(rel, &b);
		if (ret || !b.buf) {
			printf("%-3s %-10s (%s)\n", idx[i], id,
			       strerror(ret ? -ret : EIO));
			continue;
		}
		kv_get(b.buf, "capacity_bytes", v, sizeof(v));
		fmt_bytes(cap, sizeof(cap), v);
		kv_get(b.buf, "used_bytes", v, sizeof(v));
		fmt_bytes(used, sizeof(used), v);
		kv_get(b.buf, "cached_bytes", v, sizeof(v));
		fmt_bytes(cached, sizeof(cached), v);
		kv_get(b.buf, "peak_bytes", v, sizeof(v));
		fmt_bytes(peak, sizeof(peak), v);
		kv_get(b.buf, "limit_bytes", v, sizeof(v));
		fmt_bytes(lim, sizeof(lim), v);
		kv_get(b.buf, "allocs", allocs, sizeof(allocs));
		kv_get(b.buf, "failures", fails, sizeof(fails));
		printf("%-3s %-10s %10s %10s %10s %10s %10s %8s %8s\n", idx[i],
		       id, cap, used, cached, peak, lim, allocs, fails);
	}
	gpo__sbuf_free(&b);
	gpo__dir_free(idx, n > 0 ? n : 0);
	return 0;
}

static int cmd_jobs(int argc, char **argv)
{
	return print_table(argc, argv, jobs_table);
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

static int cmd_create(int argc, char **argv)
{
	char path[PATH_MAX], rel[128], what[160], since[48], reason[512];
	struct gpo__sbuf text = { 0 };
	int first, status, ret;

	first = parse_opts(argc, argv, "", NULL, NULL, &status);
	if (first < 0)
		return status;
	if (argc - first < 1)
		return cmd_usage(stderr);
	if (config_text(argc - first - 1, argv + first + 1, &text))
		return EXIT_USAGE;
	if (!tree_ok() || !job_name_ok(argv[first])) {
		gpo__sbuf_free(&text);
		return 1;
	}
	snprintf(rel, sizeof(rel), "jobs/%s", argv[first]);
	snprintf(what, sizeof(what), "create %s", argv[first]);
	tree_path(path, sizeof(path), rel);
	gpo__fmt_time(since, sizeof(since));
	if (mkdir(path, 0755)) {
		ret = -errno;
		gpo__sbuf_free(&text);
		return fail_op(what, rel, since, ret);
	}
	if (!text.len)
		return 0;
	snprintf(rel, sizeof(rel), "jobs/%s/config", argv[first]);
	ret = write_rel(rel, text.buf);
	gpo__sbuf_free(&text);
	if (!ret)
		return 0;
	/* all or nothing: a job whose config was refused goes again */
	if (!daemon_reason(rel, since, reason, sizeof(reason)))
		snprintf(reason, sizeof(reason), "the config");
	rmdir(path);
	err("%s: %s (%s)", what, reason, strerror(-ret));
	return 1;
}

static int cmd_set(int argc, char **argv)
{
	char rel[128], what[160];
	struct gpo__sbuf text = { 0 };
	int first, status, ret;

	first = operands(argc, argv, 2, INT_MAX, &status);
	if (first < 0)
		return status;
	if (config_text(argc - first - 1, argv + first + 1, &text))
		return EXIT_USAGE;
	if (!tree_ok() || !job_exists(argv[first])) {
		gpo__sbuf_free(&text);
		return 1;
	}
	snprintf(rel, sizeof(rel), "jobs/%s/config", argv[first]);
	snprintf(what, sizeof(what), "set %s", argv[first]);
	ret = do_write(what, rel, text.buf);
	gpo__sbuf_free(&text);
	return ret;
}

static int cmd_rm(int argc, char **argv)
{
	char path[PATH_MAX], rel[128], what[160], since[48];
	int first, status, i, ret = 0;

	first = operands(argc, argv, 1, INT_MAX, &status);
	if (first < 0)
		return status;
	if (!tree_ok())
		return 1;
	for (i = first; i < argc; i++) {
		if (!job_exists(argv[i])) {
			ret = 1;
			continue;
		}
		snprintf(rel, sizeof(rel), "jobs/%s", argv[i]);
		snprintf(what, sizeof(what), "rm %s", argv[i]);
		tree_path(path, sizeof(path), rel);
		gpo__fmt_time(since, sizeof(since));
		if (rmdir(path))
			ret = fail_op(what, rel, since, -errno);
	}
	return ret;
}

/* A verb to the job's ctl: "VERB [ARG]". */
static int job_verb(const char *job, const char *verb, const char *arg)
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

static int cmd_verb(int argc, char **argv)
{
	int first, status;

	first = operands(argc, argv, 1, 1, &status);
	if (first < 0)
		return status;
	return job_verb(argv[first], cur_cmd->name, NULL);
}

static int cmd_step(int argc, char **argv)
{
	int first, status;
	uint64_t n;

	first = operands(argc, argv, 2, 2, &status);
	if (first < 0)
		return status;
	if (gpo__parse_u64(argv[first + 1], &n)) {
		err("step: N must be a whole number, not '%s'",
		    argv[first + 1]);
		return EXIT_USAGE;
	}
	return job_verb(argv[first], "step", argv[first + 1]);
}

static int cmd_checkpoint(int argc, char **argv)
{
	int first, status;

	first = operands(argc, argv, 1, 2, &status);
	if (first < 0)
		return status;
	return job_verb(argv[first], "checkpoint",
			argc - first == 2 ? argv[first + 1] : NULL);
}

static int cmd_restore(int argc, char **argv)
{
	int first, status;

	first = operands(argc, argv, 2, 2, &status);
	if (first < 0)
		return status;
	return job_verb(argv[first], "restore", argv[first + 1]);
}

static int cmd_rescan(int argc, char **argv)
{
	int status;

	if (operands(argc, argv, 0, 0, &status) < 0)
		return status;
	if (!tree_ok())
		return 1;
	return do_write("rescan", "ctl", "rescan\n");
}

/* ---- status and logs ----------------------------------------------------- */

static void list_ckpt(const char *job)
{
	char rel[128], **names;
	size_t sl = strlen(".safetensors"), l;
	int n, i;

	snprintf(rel, sizeof(rel), "jobs/%s/checkpoints", job);
	n = list_dir(rel, &names, name_cmp);
	if (n < 0)
		return;		/* not ours to read */
	printf("%-14s", "checkpoints");
	for (i = 0; i < n; i++) {
		l = strlen(names[i]);
		if (l > sl && !strcmp(names[i] + l - sl, ".safetensors"))
			names[i][l - sl] = '\0';
		printf(" %s", names[i]);
	}
	printf("%s\n", n ? "" : " -");
	gpo__dir_free(names, n);
}

static int cmd_status(int argc, char **argv)
{
	char rel[128], owner[32], key[64], *p, *line, *save = NULL;
	struct gpo__sbuf b = { 0 };
	struct job_stat js;
	const char *job;
	int first, status, ret;

	first = operands(argc, argv, 1, 1, &status);
	if (first < 0)
		return status;
	job = argv[first];
	if (!tree_ok() || !job_exists(job))
		return 1;
	ret = job_stat_read(job, &js);
	if (ret) {
		err("status %s: %s", job, strerror(-ret));
		return 1;
	}
	owner_name(js.uid, owner, sizeof(owner));
	printf("%-14s %s\n%-14s %s (uid %u)\n", "job", job, "owner", owner,
	       (unsigned int)js.uid);
	snprintf(rel, sizeof(rel), "jobs/%s/stat", job);
	if (!read_rel(rel, &b) && b.buf) {
		for (line = strtok_r(b.buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			p = strchr(line, ' ');
			if (!p)
				continue;
			snprintf(key, sizeof(key), "%.*s", (int)(p - line),
				 line);
			printf("%-14s %s\n", key, p + 1);
		}
	}
	snprintf(rel, sizeof(rel), "jobs/%s/error", job);
	if (!read_rel(rel, &b) && b.len) {
		b.buf[strcspn(b.buf, "\n")] = '\0';
		printf("%-14s %s\n", "error", b.buf);
	}
	gpo__sbuf_free(&b);
	list_ckpt(job);
	return 0;
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* Signals end the loops of logs -f, wait and top cleanly. */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int logs_follow;
static int logs_history;

static int logs_opt(int c, const char *arg)
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

static int cmd_logs(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "history", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	char rel[128], path[PATH_MAX], dir[PATH_MAX];
	struct pollfd pfd;
	struct stat st;
	int first, status, fd, ret;

	logs_follow = logs_history = 0;
	first = parse_opts(argc, argv, "fH", longs, logs_opt, &status);
	if (first < 0)
		return status;
	if (argc - first != 1)
		return cmd_usage(stderr);
	if (!tree_ok() || !job_exists(argv[first]))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s/%s", argv[first],
		 logs_history ? "history.csv" : "events");
	tree_path(path, sizeof(path), rel);
	snprintf(rel, sizeof(rel), "jobs/%s", argv[first]);
	tree_path(dir, sizeof(dir), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err("logs %s: %s", argv[first], strerror(errno));
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
		if (!ret && stat(dir, &st))
			break;	/* the job was removed */
	}
	close(fd);
	if (ret && ret != -EPIPE && !got_signal) {
		err("logs %s: %s", argv[first], strerror(-ret));
		return 1;
	}
	return 0;
}

/* ---- wait ---------------------------------------------------------------- */

static const char *const all_states[] = {
	"created", "running", "paused", "stopped", "done", "failed",
};

static char wait_until[128];
static int wait_explicit;		/* --until given */
static double wait_timeout;
static int wait_quiet;

static int state_in(const char *state, const char *list)
{
	size_t n = strlen(state);
	const char *p = list;

	while (*p) {
		if (!strncmp(p, state, n) && (p[n] == ',' || !p[n]))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
}

static int wait_opt(int c, const char *arg)
{
	char copy[128], *w, *save = NULL;
	size_t i;
	char *end;

	switch (c) {
	case 'u':
		snprintf(copy, sizeof(copy), "%s", arg);
		for (w = strtok_r(copy, ",", &save); w;
		     w = strtok_r(NULL, ",", &save)) {
			for (i = 0; i < ARRAY_SIZE(all_states); i++)
				if (!strcmp(w, all_states[i]))
					break;
			if (i == ARRAY_SIZE(all_states)) {
				err("wait: no state '%s' (created running paused stopped done failed)",
				    w);
				return -1;
			}
		}
		snprintf(wait_until, sizeof(wait_until), "%s", arg);
		wait_explicit = 1;
		return 0;
	case 't':
		wait_timeout = gpo__strtod(arg, &end);
		if (*end || end == arg || wait_timeout < 0) {
			err("wait: bad timeout '%s'", arg);
			return -1;
		}
		return 0;
	case 'q':
		wait_quiet = 1;
		return 0;
	}
	return -1;
}

static double mono_s(void)
{
	return gpo__now_ns() / 1e9;
}

static int term_width(int fd)
{
	struct winsize ws;

	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* The progress line of a terminal: bar, steps, loss, ETA. */
static void progress_bar(const struct job_stat *js)
{
	char loss[24], eta[24], tail[160], bar[256];
	int width = term_width(STDOUT_FILENO), cells, full, i;
	double frac;

	fmt_num(loss, sizeof(loss), js->loss, 5);
	fmt_duration(eta, sizeof(eta), js->eta_s);
	if (js->unlimited || !js->max_steps) {
		snprintf(tail, sizeof(tail), "%llu steps  loss %s  %s",
			 (unsigned long long)js->step, loss, js->state);
		printf("\r%s %.*s\033[K", js->name, width - 2 -
		       (int)strlen(js->name), tail);
		fflush(stdout);
		return;
	}
	frac = (double)js->step / js->max_steps;
	if (frac > 1)
		frac = 1;
	snprintf(tail, sizeof(tail), " %llu/%llu %3.0f%%  loss %s  ETA %s",
		 (unsigned long long)js->step,
		 (unsigned long long)js->max_steps, frac * 100, loss, eta);
	cells = width - (int)strlen(js->name) - (int)strlen(tail) - 4;
	if (cells > (int)sizeof(bar) - 1)
		cells = sizeof(bar) - 1;
	if (cells < 5)
		cells = 0;
	full = (int)(frac * cells);
	for (i = 0; i < cells; i++)
		bar[i] = i < full ? '#' : '-';
	bar[cells] = '\0';
	if (cells)
		printf("\r%s [%s]%s\033[K", js->name, bar, tail);
	else
		printf("\r%s%s\033[K", js->name, tail);
	fflush(stdout);
}

static void progress_line(const struct job_stat *js)
{
	char steps[48], loss[24], lr[24], eta[24];

	step_text(js, steps, sizeof(steps));
	fmt_num(loss, sizeof(loss), js->loss, 6);
	fmt_num(lr, sizeof(lr), js->lr, 4);
	fmt_duration(eta, sizeof(eta), js->eta_s);
	printf("%s %s step %s loss %s lr %s eta %s\n", js->name, js->state,
	       steps, loss, lr, eta);
	fflush(stdout);
}

static int cmd_wait(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "until", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	char rel[128], error[512];
	double start, last_line = -1;
	uint64_t last_step = UINT64_MAX;
	struct job_stat js;
	const char *job;
	int first, status, tty, ret, shown = 0;

	snprintf(wait_until, sizeof(wait_until), "done,stopped,failed");
	wait_explicit = 0;
	wait_timeout = 0;
	wait_quiet = 0;
	first = parse_opts(argc, argv, "u:t:q", longs, wait_opt, &status);
	if (first < 0)
		return status;
	if (argc - first != 1)
		return cmd_usage(stderr);
	job = argv[first];
	if (!tree_ok() || !job_exists(job))
		return 1;
	tty = isatty(STDOUT_FILENO) && !wait_quiet;
	catch_signals();
	start = mono_s();
	for (;;) {
		ret = job_stat_read(job, &js);
		if (ret) {
			if (shown && tty)
				putchar('\n');
			err("wait %s: %s", job, ret == -ENOENT ?
			    "the job was removed" : strerror(-ret));
			return 1;
		}
		if (state_in(js.state, wait_until))
			break;
		if (!strcmp(js.state, "done") || !strcmp(js.state, "failed") ||
		    !strcmp(js.state, "stopped"))
			break;	/* it will not move on by itself */
		if (tty) {
			progress_bar(&js);
			shown = 1;
		} else if (!wait_quiet && js.step != last_step &&
			   mono_s() - last_line >= 1) {
			progress_line(&js);
			last_step = js.step;
			last_line = mono_s();
		}
		if (got_signal) {
			if (shown)
				putchar('\n');
			return 128 + got_signal;
		}
		if (wait_timeout > 0 && mono_s() - start >= wait_timeout) {
			if (shown)
				putchar('\n');
			err("wait %s: still %s after %g s", job, js.state,
			    wait_timeout);
			return EXIT_TIMEOUT;
		}
		usleep(tty ? 100000 : 200000);
	}
	if (tty) {
		progress_bar(&js);
		putchar('\n');
	}
	if (!wait_quiet)
		progress_line(&js);
	if (!strcmp(js.state, "failed") &&
	    !(wait_explicit && state_in("failed", wait_until))) {
		snprintf(rel, sizeof(rel), "jobs/%s/error", job);
		read_value(rel, error, sizeof(error));
		err("%s failed: %s", job, *error ? error : "(no reason given)");
		return 1;
	}
	if (state_in(js.state, wait_until))
		return 0;
	err("%s is %s, not %s", job, js.state, wait_until);
	return 1;
}

/* ---- top ----------------------------------------------------------------- */

static int top_iterations;
static double top_delay = 1;

static int top_opt(int c, const char *arg)
{
	uint64_t n;
	char *end;

	if (c == 'n') {
		if (gpo__parse_u64(arg, &n) || n < 1 || n > INT_MAX) {
			err("top: bad count '%s'", arg);
			return -1;
		}
		top_iterations = (int)n;
		return 0;
	}
	if (c == '1') {
		top_iterations = 1;
		return 0;
	}
	if (c == 'd') {
		top_delay = gpo__strtod(arg, &end);
		if (*end || end == arg || top_delay < 0.1 || top_delay > 3600) {
			err("top: bad delay '%s' (0.1 to 3600 s)", arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

static void top_frame(struct gpo__sbuf *out, int width)
{
	char stamp[32], uptime[24], v[64];
	struct gpo__sbuf st = { 0 };
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	read_rel("stat", &st);
	kv_get(st.buf ? st.buf : "", "uptime_s", v, sizeof(v));
	fmt_duration(uptime, sizeof(uptime), num_of(v));
	gpo__sbuf_printf(out, "gpuoptctl top - %s  %s  up %s", stamp, mnt, uptime);
	kv_get(st.buf ? st.buf : "", "jobs", v, sizeof(v));
	gpo__sbuf_printf(out, "  jobs %s", *v ? v : "-");
	kv_get(st.buf ? st.buf : "", "jobs_running", v, sizeof(v));
	gpo__sbuf_printf(out, " (%s running)", *v ? v : "-");
	kv_get(st.buf ? st.buf : "", "steps", v, sizeof(v));
	gpo__sbuf_printf(out, "  steps %s\n\n", *v ? v : "-");
	gpo__sbuf_free(&st);
	devices_table(out, width);
	gpo__sbuf_printf(out, "\n");
	jobs_table(out, width);
}

static struct termios saved_tio;
static int raw_tty = -1;

static void tty_restore(void)
{
	if (raw_tty >= 0)
		tcsetattr(raw_tty, TCSAFLUSH, &saved_tio);
	raw_tty = -1;
}

static void tty_raw(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &saved_tio))
		return;
	t = saved_tio;
	t.c_lflag &= ~(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(fd, TCSAFLUSH, &t))
		raw_tty = fd;
}

/* Wait up to @s seconds for a key: 'q' quits (1), others redraw. */
static int top_keys(double s)
{
	double end = mono_s() + s, left;
	struct pollfd pfd;
	char c;

	while (!got_signal && (left = end - mono_s()) > 0) {
		if (raw_tty < 0) {
			usleep((useconds_t)(left * 1e6));
			continue;
		}
		pfd.fd = raw_tty;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		if (read(raw_tty, &c, 1) != 1)
			return 1;	/* the terminal went away */
		if (c == 'q' || c == 'Q' || c == 3 || c == 4)
			return 1;
		return 0;		/* any other key: now */
	}
	return got_signal != 0;
}

static int cmd_top(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		{ "once", no_argument, NULL, '1' },
		{ NULL, 0, NULL, 0 },
	};
	struct gpo__sbuf out = { 0 };
	int first, status, tty, i, width, height, lines;
	struct winsize ws;
	char *p;

	top_iterations = 0;
	top_delay = 1;
	first = parse_opts(argc, argv, "n:d:1", longs, top_opt, &status);
	if (first < 0)
		return status;
	if (argc - first != 0)
		return cmd_usage(stderr);
	if (!tree_ok())
		return 1;
	tty = isatty(STDOUT_FILENO);
	catch_signals();
	if (tty) {
		if (isatty(STDIN_FILENO))
			tty_raw(STDIN_FILENO);
		/* the alternate screen, the cursor hidden */
		fputs("\033[?1049h\033[?25l", stdout);
	}
	for (i = 0; !top_iterations || i < top_iterations; i++) {
		width = INT_MAX;
		height = INT_MAX;
		if (tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) &&
		    ws.ws_col) {
			width = ws.ws_col;
			height = ws.ws_row;
		}
		out.len = 0;
		top_frame(&out, width);
		if (!tty) {
			if (i)
				putchar('\n');
			fwrite(out.buf, 1, out.len, stdout);
		} else {
			/* home, each line cleared to its end, the rest too */
			fputs("\033[H", stdout);
			for (p = out.buf, lines = 0; p && *p && lines < height;
			     lines++) {
				size_t n = strcspn(p, "\n");

				fwrite(p, 1, n, stdout);
				fputs("\033[K", stdout);
				p += n;
				if (*p == '\n')
					p++;
				if (*p && lines + 1 < height)
					putchar('\n');
			}
			fputs("\033[J", stdout);
		}
		if (fflush(stdout))
			break;
		if (top_iterations && i + 1 == top_iterations)
			break;
		if (top_keys(top_delay))
			break;
	}
	if (tty) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		tty_restore();
	}
	gpo__sbuf_free(&out);
	return 0;
}

/* ---- plot ---------------------------------------------------------------- */

struct series {
	double *step;
	double *loss;
	double *lr;
	size_t n;
};

static int history_parse(const char *text, struct series *s)
{
	size_t cap = 0;
	const char *p = text;
	double v[3];
	double *a, *b, *c;

	memset(s, 0, sizeof(*s));
	p = strchr(p, '\n');	/* the header */
	while (p && *++p) {
		char *end;

		v[0] = gpo__strtod(p, &end);
		if (end == p || *end != ',')
			goto next;
		v[1] = gpo__strtod(end + 1, &end);
		if (*end != ',')
			goto next;
		v[2] = gpo__strtod(end + 1, &end);
		if (s->n == cap) {
			cap = cap ? cap * 2 : 1024;
			a = realloc(s->step, cap * sizeof(double));
			if (a)
				s->step = a;
			b = realloc(s->loss, cap * sizeof(double));
			if (b)
				s->loss = b;
			c = realloc(s->lr, cap * sizeof(double));
			if (c)
				s->lr = c;
			if (!a || !b || !c)
				return -ENOMEM;
		}
		s->step[s->n] = v[0];
		s->loss[s->n] = v[1];
		s->lr[s->n] = v[2];
		s->n++;
next:
		p = strchr(p, '\n');
	}
	return 0;
}

static void series_free(struct series *s)
{
	free(s->step);
	free(s->loss);
	free(s->lr);
}

struct axis {
	double lo;
	double hi;
	int log;
};

/* The finite range of @v (positive only for a log axis); 0 if empty. */
static int range_of(const double *v, size_t n, int pos, double *lo,
		    double *hi)
{
	int any = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isfinite(v[i]) || (pos && v[i] <= 0))
			continue;
		if (!any || v[i] < *lo)
			*lo = v[i];
		if (!any || v[i] > *hi)
			*hi = v[i];
		any = 1;
	}
	return any;
}

static double nice_step(double span, int ticks)
{
	double raw = span / ticks, mag = pow(10, floor(log10(raw))), f;

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

static void axis_fit(struct axis *a, const double *v, size_t n, int log_ok)
{
	double lo = 0, hi = 0, st;

	a->log = 0;
	/* a log axis when every value is positive and they span 100x */
	if (log_ok && range_of(v, n, 0, &lo, &hi) && lo > 0 &&
	    hi / lo >= 100) {
		a->log = 1;
		a->lo = pow(10, floor(log10(lo)));
		a->hi = pow(10, ceil(log10(hi)));
		if (a->hi <= a->lo)
			a->hi = a->lo * 10;
		return;
	}
	if (!range_of(v, n, 0, &lo, &hi)) {
		a->lo = 0;
		a->hi = 1;
		return;
	}
	if (hi == lo) {
		double d = lo ? fabs(lo) * 0.1 : 1;

		lo -= d;
		hi += d;
	}
	st = nice_step(hi - lo, 5);
	a->lo = floor(lo / st) * st;
	a->hi = ceil(hi / st) * st;
}

static double axis_pos(const struct axis *a, double v)
{
	if (a->log)
		return (log10(v) - log10(a->lo)) /
		       (log10(a->hi) - log10(a->lo));
	return (v - a->lo) / (a->hi - a->lo);
}

#define PW 800			/* the picture */
#define PH 450
#define PL 90			/* the plot area's margins */
#define PR 90
#define PT 50
#define PB 60
#define LOSS_COLOR "#1f77b4"
#define LR_COLOR "#d62728"

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

/* The ticks of a y axis, on the left (@side 0) or right (1). */
static void svg_yticks(FILE *f, const struct axis *a, int side,
		       const char *color)
{
	double w = PW - PL - PR, h = PH - PT - PB, v, y, st;
	int x = side ? PL + (int)w : PL, k;
	char label[32];

	if (a->log) {
		for (v = a->lo; v <= a->hi * 1.0001; v *= 10) {
			y = PT + h - axis_pos(a, v) * h;
			snprintf(label, sizeof(label), "%g", v);
			fprintf(f,
				"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n",
				x - 5, y, x + 5, y, color);
			fprintf(f,
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">%s</text>\n",
				side ? x + 8 : x - 8, y + 4,
				side ? "start" : "end", color, label);
		}
		return;
	}
	st = nice_step(a->hi - a->lo, 5);
	for (k = 0; k <= 12; k++) {
		v = a->lo + k * st;
		if (v > a->hi + st * 1e-6)
			break;
		y = PT + h - axis_pos(a, v) * h;
		snprintf(label, sizeof(label), "%.4g", fabs(v) < st * 1e-9 ?
			 0.0 : v);
		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n",
			x - 5, y, x + 5, y, color);
		fprintf(f,
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">%s</text>\n",
			side ? x + 8 : x - 8, y + 4, side ? "start" : "end",
			color, label);
	}
}

static void svg_polyline(FILE *f, const struct series *s, const double *v,
			 const struct axis *x, const struct axis *y,
			 const char *color, size_t every)
{
	double w = PW - PL - PR, h = PH - PT - PB;
	size_t i;
	int any = 0;

	for (i = 0; i < s->n; i++) {
		if (i % every && i != s->n - 1)
			continue;
		if (!isfinite(v[i]) || (y->log && v[i] <= 0))
			continue;
		if (!any)
			fprintf(f,
				"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
				color);
		fprintf(f, "%s%.2f,%.2f", any ? " " : "",
			PL + axis_pos(x, s->step[i]) * w,
			PT + h - axis_pos(y, v[i]) * h);
		any = 1;
	}
	if (any)
		fputs("\"/>\n", f);
}

static void svg_write(FILE *f, const char *job, const struct series *s)
{
	double w = PW - PL - PR, h = PH - PT - PB, xv, px, st;
	struct axis ax = { 0 }, al, ar;
	size_t every;
	int k;

	range_of(s->step, s->n, 0, &ax.lo, &ax.hi);
	if (ax.hi <= ax.lo)
		ax.hi = ax.lo + 1;
	axis_fit(&al, s->loss, s->n, 1);
	axis_fit(&ar, s->lr, s->n, 0);
	every = s->n > 4000 ? (s->n + 3999) / 4000 : 1;

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<title>",
		PW, PH, PW, PH);
	svg_text(f, job);
	fprintf(f, ": loss and lr over steps</title>\n"
		"<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", PW, PH);
	fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">",
		PW / 2);
	svg_text(f, job);
	fputs(": loss and lr over steps</text>\n", f);
	/* the frame and the x axis */
	fprintf(f,
		"<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
		PL, PT, w, h);
	st = nice_step(ax.hi - ax.lo, 6);
	for (k = 0; k <= 14; k++) {
		xv = ceil(ax.lo / st) * st + k * st;
		if (xv > ax.hi + st * 1e-6)
			break;
		px = PL + axis_pos(&ax, xv) * w;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>\n"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.6g</text>\n",
			px, PT + h, px, PT + h + 5, px, PT + h + 20, xv);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
		PL + w / 2, PH - 15);
	svg_yticks(f, &al, 0, LOSS_COLOR);
	svg_yticks(f, &ar, 1, LR_COLOR);
	fprintf(f,
		"<text transform=\"translate(20 %.0f) rotate(-90)\" text-anchor=\"middle\" fill=\"%s\">loss%s</text>\n",
		PT + h / 2, LOSS_COLOR, al.log ? " (log scale)" : "");
	fprintf(f,
		"<text transform=\"translate(%d %.0f) rotate(90)\" text-anchor=\"middle\" fill=\"%s\">lr</text>\n",
		PW - 20, PT + h / 2, LR_COLOR);
	svg_polyline(f, s, s->loss, &ax, &al, LOSS_COLOR, every);
	svg_polyline(f, s, s->lr, &ax, &ar, LR_COLOR, every);
	/* the legend */
	fprintf(f,
		"<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n"
		"<text x=\"%.0f\" y=\"%d\">loss</text>\n"
		"<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n"
		"<text x=\"%.0f\" y=\"%d\">lr</text>\n",
		PL + w - 120, PT + 15, PL + w - 100, PT + 15, LOSS_COLOR,
		PL + w - 95, PT + 19, PL + w - 60, PT + 15, PL + w - 40,
		PT + 15, LR_COLOR, PL + w - 35, PT + 19);
	fputs("</svg>\n", f);
}

static const char *plot_out;

static int plot_opt(int c, const char *arg)
{
	if (c != 'o')
		return -1;
	plot_out = arg;
	return 0;
}

static int cmd_plot(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	char rel[128], tmp[PATH_MAX];
	struct gpo__sbuf b = { 0 };
	struct series s;
	int first, status, ret;
	FILE *f = stdout;

	plot_out = NULL;
	first = parse_opts(argc, argv, "o:", longs, plot_opt, &status);
	if (first < 0)
		return status;
	if (argc - first != 1)
		return cmd_usage(stderr);
	if (!tree_ok() || !job_exists(argv[first]))
		return 1;
	snprintf(rel, sizeof(rel), "jobs/%s/history.csv", argv[first]);
	ret = read_rel(rel, &b);
	if (!ret)
		ret = history_parse(b.buf ? b.buf : "", &s);
	gpo__sbuf_free(&b);
	if (ret) {
		err("plot %s: %s", argv[first], strerror(-ret));
		return 1;
	}
	if (!s.n) {
		series_free(&s);
		err("plot %s: history.csv has no rows yet (a row every log_every steps)",
		    argv[first]);
		return 1;
	}
	if (plot_out && strcmp(plot_out, "-")) {
		/* the whole picture or none: a temporary file, renamed */
		snprintf(tmp, sizeof(tmp), "%s.tmp%ld", plot_out,
			 (long)getpid());
		f = fopen(tmp, "w");
		if (!f) {
			err("plot: %s: %s", tmp, strerror(errno));
			series_free(&s);
			return 1;
		}
	}
	svg_write(f, argv[first], &s);
	series_free(&s);
	if (f == stdout)
		return fflush(stdout) ? 1 : 0;
	if (fclose(f) || rename(tmp, plot_out)) {
		err("plot: %s: %s", plot_out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	return 0;
}

/* ---- the commands -------------------------------------------------------- */

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "devices", cmd_devices, "",
	  "the devices, as a table",
	  "A table of the devices: index, id, type, compute units, memory, bytes\n"
	  "held by the pool, busy share of the last second, enabled, name.\n" },
	{ "pools", cmd_pools, "",
	  "the devices' memory pools",
	  "A table of the devices' memory pools (reading one opens its device).\n" },
	{ "jobs", cmd_jobs, "",
	  "the jobs: state, step, loss, lr, ETA",
	  "A table of the jobs: owner, state, step, loss, lr, steps/s, ETA, device.\n" },
	{ "create", cmd_create, "NAME [KEY=VALUE...]",
	  "make a job with its config",
	  "Make job NAME (mkdir jobs/NAME) and write its config. If the daemon\n"
	  "refuses the config, the job is removed again.\n"
	  "Example: gpuoptctl create rb optimizer=adam lr=0.01 model=rosenbrock:1000 max_steps=500\n" },
	{ "set", cmd_set, "NAME KEY=VALUE...",
	  "change a job's config",
	  "Change the job's config, all words at once or none.\n" },
	{ "start", cmd_verb, "NAME",
	  "start a created job", "Start the job (created -> running).\n" },
	{ "pause", cmd_verb, "NAME",
	  "pause a running job",
	  "Pause the job; returns when no step is under way.\n" },
	{ "resume", cmd_verb, "NAME",
	  "resume a paused job", "Resume a paused job.\n" },
	{ "stop", cmd_verb, "NAME",
	  "stop a job", "Stop a running or paused job.\n" },
	{ "reset", cmd_verb, "NAME",
	  "back to step 0",
	  "Back to created at step 0 (not while running).\n" },
	{ "step", cmd_step, "NAME N",
	  "run N steps, then pause",
	  "Run N steps of a created or paused job, then pause; returns when done.\n" },
	{ "checkpoint", cmd_checkpoint, "NAME [CKPT]",
	  "save a checkpoint",
	  "Save the job as checkpoint CKPT (default step-STEP).\n" },
	{ "restore", cmd_restore, "NAME CKPT",
	  "load a checkpoint",
	  "Load checkpoint CKPT into the job (not while running); it is then paused.\n" },
	{ "status", cmd_status, "NAME",
	  "a job's stat, error and checkpoints",
	  "The job's owner, stat, last error and checkpoints.\n" },
	{ "logs", cmd_logs, "[-f] [--history] NAME",
	  "a job's events (or history.csv)",
	  "Print the job's events.\n"
	  "  -f, --follow    keep printing new lines until the job is removed\n"
	  "  -H, --history   history.csv instead of events\n" },
	{ "wait", cmd_wait, "[--until STATE[,STATE...]] [--timeout S] [-q] NAME",
	  "wait for a state, with progress",
	  "Wait until the job is in one of the states (default done,stopped,failed).\n"
	  "On a terminal: a progress bar (step/max_steps, loss, ETA); otherwise a\n"
	  "plain line a second while it steps, and one at the end.\n"
	  "Exit 0 when a wanted state is reached (failed only if asked for), 1 when\n"
	  "the job fails, stops elsewhere or is removed, 124 after the timeout.\n"
	  "  -u, --until STATES  created running paused stopped done failed\n"
	  "  -t, --timeout S     give up after S seconds\n"
	  "  -q, --quiet         print nothing but errors\n" },
	{ "top", cmd_top, "[-n N] [-d SECONDS] [--once]",
	  "a live table of devices and jobs",
	  "A live table of the devices and jobs, redrawn every second; q quits.\n"
	  "Not on a terminal, it prints a plain frame each time.\n"
	  "  -n, --iterations N  stop after N frames\n"
	  "  -d, --delay S       seconds between frames (default 1)\n"
	  "  -1, --once          one frame (-n 1)\n" },
	{ "plot", cmd_plot, "[-o FILE] NAME",
	  "an SVG of loss and lr over steps",
	  "An SVG of loss (left axis, log scale when it spans 100x) and lr (right\n"
	  "axis) over steps, from the job's history.csv, to open in a browser.\n"
	  "  -o, --output FILE   write FILE instead of standard output\n" },
	{ "rm", cmd_rm, "NAME...",
	  "remove jobs",
	  "Remove jobs (rmdir jobs/NAME), with their checkpoints; not while running.\n" },
	{ "rescan", cmd_rescan, "",
	  "probe the devices again (root)",
	  "Probe the devices again (root): new ones are added, lost ones marked\n"
	  "gone and their jobs fail; the udev rules do this when a GPU comes or goes.\n" },
	{ "help", cmd_help, "[COMMAND]",
	  "help on a command", "Help on gpuoptctl or one command.\n" },
	{ NULL, NULL, NULL, NULL, NULL },
};

static const struct cmd *cmd_find(const char *name)
{
	const struct cmd *c;

	for (c = cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	int first, status;

	first = operands(argc, argv, 0, 1, &status);
	if (first < 0)
		return status;
	if (argc - first == 0) {
		main_usage(stdout);
		return 0;
	}
	cur_cmd = cmd_find(argv[first]);
	if (!cur_cmd) {
		err("no command '%s' (gpuoptctl --help lists them)",
		    argv[first]);
		return EXIT_USAGE;
	}
	return cmd_usage(stdout);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("GPUOPT_MNT");
	int c;

	if (env && *env)
		mnt = env;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+m:Vh", longs, NULL)) != -1) {
		switch (c) {
		case 'm':
			mnt = optarg;
			break;
		case 'V':
			printf("gpuoptctl %s\n", CTL_VERSION);
			return 0;
		case 'h':
			main_usage(stdout);
			return 0;
		default:
			err("bad option '%s'", argv[optind - 1]);
			main_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	cur_cmd = cmd_find(argv[optind]);
	if (!cur_cmd) {
		err("no command '%s' (gpuoptctl --help lists them)",
		    argv[optind]);
		return EXIT_USAGE;
	}
	return cur_cmd->fn(argc - optind, argv + optind);
}
