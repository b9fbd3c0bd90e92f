// SPDX-License-Identifier: MIT
/*
 * bench/ctl.c - what reading the control plane costs a running job
 *
 * DESIGN.md's target: reading a job's stat while it runs at full speed
 * costs the job < 5 % of its steps per second, and a read's p99 latency
 * is under 2 ms. Against a mounted gpuoptfs (bench/ctl.sh mounts one), for
 * each device: make a job (adamw on model=quadratic:N, N chosen so that a
 * step takes about -t microseconds through the daemon, unless -n gives
 * it), start it, then measure windows of -w seconds, each one of
 *   none     no reader: the job's steps/s (stat's step at the start and
 *            the end of the window);
 *   stat xK  K threads reading jobs/NAME/stat in a tight loop, open, read
 *            to the end, close, as cat does; steps/s and every read's
 *            latency;
 *   prom x1  one thread reading metrics.prom the same way, as a scraper
 *            would (a scraper reads far less often: this is its worst).
 * The kinds of window take turns, -r rounds of them, so drift hits all
 * alike; steps/s is the median of the rounds, latencies are pooled.
 * cost = 1 - steps/s with readers / steps/s without. -f paces each reader
 * at RATE reads/s instead (a watch or a scraper, not a tight loop). With
 * -p, the daemon's CPU time (/proc/PID/stat) is shown too, and the rest of
 * the machine's load: on a machine with few cores, readers take cores from
 * the job, which is not a lock's fault, and another tenant's build skews
 * every figure.
 *
 *   bench_ctl -m MNT [-d DEVICES] [-n N] [-t STEP_US] [-w SECONDS]
 *             [-r ROUNDS] [-k K,...] [-f RATE] [-p DAEMON_PID]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "bench_i.h"

#define MAX_K		8	/* kinds of stat window */
#define MAX_READERS	64
#define MAX_ROUNDS	31
#define READ_BUF	(128u << 10)	/* cat's buffer */
#define N_MIN		1024ull
#define N_MAX		(1ull << 28)

struct bench {
	const char *mnt;
	const char *device;
	char job[64];
	char stat_path[4096];
	char prom_path[4096];
	uint64_t n;		/* quadratic:N */
	int n_given;		/* -n: else chosen per device */
	double step_us;		/* wanted step time, for choosing N */
	double window;
	int rounds;
	int nk;
	int k[MAX_K];
	double pace;		/* reads/s of each reader, 0: a tight loop */
	long daemon_pid;
};

/* What one kind of window gathered over the rounds. */
struct figure {
	const char *file;	/* NULL: no reader */
	int readers;
	double rate[MAX_ROUNDS];
	double *lat;		/* ms, every read of every round */
	size_t nlat, caplat;
	double reads_s;		/* total reads / total window time */
	double daemon_cpu;	/* cores the daemon used, mean */
	double bench_cpu;	/* cores the readers used, mean */
	double all_cpu;		/* cores busy on the machine, mean */
	double secs;
	double steps;
	int failed;		/* reads that failed */
};

struct reader {
	pthread_t thread;
	const char *path;
	const int *stop;
	double pace;
	char *buf;
	double *lat;
	size_t n, cap;
	int failed;
};

static void sys_die(const char *what)
{
	perror(what);
	exit(1);
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench_ctl: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* The whole of a file of the tree into @buf; its length, or -errno. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t r = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len - 1 && (r = read(fd, buf + got, len - 1 - got)) > 0)
		got += r;
	r = r < 0 ? -errno : (ssize_t)got;
	close(fd);
	buf[got] = '\0';
	return r;
}

/* One whole value to a file of a job, as echo does; on failure say why. */
static void put(struct bench *b, const char *file, const char *text)
{
	char path[4096], why[512];
	ssize_t len = strlen(text), r;
	int fd;

	snprintf(path, sizeof(path), "%s/jobs/%s/%s", b->mnt, b->job, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		sys_die(path);
	r = write(fd, text, len);
	if (r != len) {
		fprintf(stderr, "bench_ctl: %s <- '%s': %s\n", path, text,
			r < 0 ? strerror(errno) : "short write");
		snprintf(path, sizeof(path), "%s/jobs/%s/error", b->mnt,
			 b->job);
		if (slurp(path, why, sizeof(why)) > 0)
			fprintf(stderr, "bench_ctl: the job says: %s", why);
		exit(1);
	}
	close(fd);
}

/* A value of the job's stat, as text (the line after "KEY "). */
static void stat_value(struct bench *b, const char *key, char *out,
		       size_t len)
{
	char buf[4096], pat[64], *p;
	size_t n;

	if (slurp(b->stat_path, buf, sizeof(buf)) < 0)
		sys_die(b->stat_path);
	snprintf(pat, sizeof(pat), "\n%s ", key);
	p = strstr(buf, pat);
	if (!p)
		die("no %s in the job's stat", key);
	p += strlen(pat);
	n = strcspn(p, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

static uint64_t job_step(struct bench *b)
{
	char v[64];

	stat_value(b, "step", v, sizeof(v));
	return strtoull(v, NULL, 10);
}

static void job_make(struct bench *b)
{
	char path[4096], cfg[256];

	snprintf(b->job, sizeof(b->job), "bench-ctl-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/jobs/%s", b->mnt, b->job);
	if (mkdir(path, 0755))
		sys_die(path);
	snprintf(b->stat_path, sizeof(b->stat_path), "%s/jobs/%s/stat",
		 b->mnt, b->job);
	snprintf(cfg, sizeof(cfg),
		 "optimizer=adamw lr=1e-3 model=quadratic:%llu max_steps=max device=%s",
		 (unsigned long long)b->n, b->device);
	put(b, "config", cfg);
	put(b, "ctl", "start");
	/* the first step builds the optimizer (and compiles kernels) */
	while (job_step(b) < 10)
		usleep(10000);
}

static void job_remove(struct bench *b)
{
	char path[4096];

	put(b, "ctl", "stop");
	snprintf(path, sizeof(path), "%s/jobs/%s", b->mnt, b->job);
	if (rmdir(path))
		sys_die(path);
}

static double sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return s;
}

/* steps/s over @secs seconds */
static double job_rate(struct bench *b, double secs)
{
	uint64_t s0, s1;
	double t0, t1;

	t0 = now_s();
	s0 = job_step(b);
	sleep_s(secs);
	t1 = now_s();
	s1 = job_step(b);
	return (s1 - s0) / (t1 - t0);
}

/*
 * A step of about step_us through the daemon: a job of size N, its rate,
 * N scaled by it, a few times (a GPU's fixed cost per step makes the rate
 * far from linear in N).
 */
static void choose_n(struct bench *b)
{
	double want = 1e6 / b->step_us, rate;
	uint64_t n = 1ull << 18;
	int i;

	for (i = 0; i < 5; i++) {
		b->n = n;
		job_make(b);
		sleep_s(0.2);
		rate = job_rate(b, 0.5);
		job_remove(b);
		fprintf(stderr, "# %s: quadratic:%llu runs %.0f steps/s\n",
			b->device, (unsigned long long)n, rate);
		if (rate > 0.85 * want && rate < 1.15 * want)
			return;
		n = (uint64_t)(n * (rate > 0 ? rate / want : 0.1));
		n = (n + 1023) / 1024 * 1024;
		if (n < N_MIN)
			n = N_MIN;
		if (n > N_MAX)
			n = N_MAX;
		if (n == b->n)
			return;		/* at a bound: as close as it gets */
	}
	b->n = n;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	double t0, next = now_s(), *v;
	ssize_t got;
	int fd;

	while (!__atomic_load_n(r->stop, __ATOMIC_RELAXED)) {
		if (r->pace > 0) {
			next += 1 / r->pace;
			if (next > now_s())
				sleep_s(next - now_s());
		}
		t0 = now_s();
		fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			r->failed++;
			continue;
		}
		while ((got = read(fd, r->buf, READ_BUF)) > 0)
			;
		close(fd);
		if (got < 0)
			r->failed++;
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 4096;
			v = realloc(r->lat, r->cap * sizeof(*v));
			if (!v)
				sys_die("realloc");
			r->lat = v;
		}
		r->lat[r->n++] = (now_s() - t0) * 1e3;
	}
	return NULL;
}

/* user + system seconds of process @pid, all its threads */
static double proc_cpu_s(long pid)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (slurp(path, buf, sizeof(buf)) < 0)
		return 0;
	/* after "(comm)", field 3 is state; utime and stime are 14, 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u"
			 " %llu %llu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/* seconds of CPU time the whole machine spent busy, all cores */
static double machine_cpu_s(void)
{
	unsigned long long v[8] = { 0 };
	char buf[4096];

	if (slurp("/proc/stat", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		return 0;
	/* user nice system (idle iowait) irq softirq, and steal: time the
	 * hypervisor gave another guest is lost to the job as well */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
	       sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* One window of figure @f in round @round. */
static void window(struct bench *b, struct figure *f, int round)
{
	struct reader r[MAX_READERS];
	double t0, t1, d0, d1, c0, c1, m0, m1;
	uint64_t s0, s1;
	int stop = 0, i;
	size_t total = 0;
	double *v;

	memset(r, 0, sizeof(r));
	for (i = 0; f->file && i < f->readers; i++) {
		r[i].path = f->file;
		r[i].stop = &stop;
		r[i].pace = b->pace;
		r[i].buf = malloc(READ_BUF);
		if (!r[i].buf)
			sys_die("malloc");
		errno = pthread_create(&r[i].thread, NULL, reader_main, &r[i]);
		if (errno)
			sys_die("pthread_create");
	}
	/* readers under way before the window opens */
	sleep_s(0.05);
	t0 = now_s();
	s0 = job_step(b);
	d0 = proc_cpu_s(b->daemon_pid);
	c0 = self_cpu_s();
	m0 = machine_cpu_s();
	sleep_s(b->window);
	t1 = now_s();
	s1 = job_step(b);
	d1 = proc_cpu_s(b->daemon_pid);
	c1 = self_cpu_s();
	m1 = machine_cpu_s();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; f->file && i < f->readers; i++) {
		pthread_join(r[i].thread, NULL);
		total += r[i].n;
	}
	f->rate[round] = (s1 - s0) / (t1 - t0);
	f->secs += t1 - t0;
	f->steps += s1 - s0;
	f->daemon_cpu += d1 - d0;
	f->bench_cpu += c1 - c0;
	f->all_cpu += m1 - m0;
	if (total && f->nlat + total > f->caplat) {
		f->caplat = f->nlat + total;
		v = realloc(f->lat, f->caplat * sizeof(*v));
		if (!v)
			sys_die("realloc");
		f->lat = v;
	}
	for (i = 0; f->file && i < f->readers; i++) {
		if (r[i].n)
			memcpy(f->lat + f->nlat, r[i].lat,
			       r[i].n * sizeof(*v));
		f->nlat += r[i].n;
		f->failed += r[i].failed;
		free(r[i].lat);
		free(r[i].buf);
	}
}

/* nearest rank; @v sorted */
static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)ceil(p * n);

	if (!n)
		return NAN;
	return v[i ? i - 1 : 0];
}

static void row(const char *figure, const char *value, const char *target,
		double ratio)
{
	char r[32] = "-";

	if (!isnan(ratio))
		snprintf(r, sizeof(r), "%.2f", ratio);
	printf("  %-30s %14s %10s %7s\n", figure, value, target, r);
}

static void report(struct bench *b, struct figure *f, int nf)
{
	double base, rate, cost, serve, other;
	char what[64], val[32];
	int i;

	base = median(f[0].rate, b->rounds);
	printf("\n# %s: model=quadratic:%llu adamw, %.3f ms a step alone; "
	       "%d rounds of %.1f s windows\n", b->device,
	       (unsigned long long)b->n, base > 0 ? 1e3 / base : NAN,
	       b->rounds, b->window);
	if (b->pace > 0)
		printf("# each reader paced at %.0f reads/s\n", b->pace);
	printf("  %-30s %14s %10s %7s\n", "figure", "value", "target",
	       "ratio");
	for (i = 0; i < nf; i++) {
		rate = median(f[i].rate, b->rounds);
		if (!f[i].file) {
			snprintf(val, sizeof(val), "%.1f", rate);
			row("steps/s, no reader", val, "", NAN);
		} else {
			snprintf(what, sizeof(what), "steps/s, %d x %s",
				 f[i].readers, strrchr(f[i].file, '/') + 1);
			snprintf(val, sizeof(val), "%.1f", rate);
			row(what, val, "", NAN);
			cost = base > 0 ? 1 - rate / base : NAN;
			snprintf(val, sizeof(val), "%.1f %%", 100 * cost);
			row("  cost", val, "< 5 %", cost / 0.05);
			snprintf(val, sizeof(val), "%.0f",
				 f[i].nlat / f[i].secs);
			row("  reads/s (all readers)", val, "", NAN);
			qsort(f[i].lat, f[i].nlat, sizeof(double), cmp_double);
			snprintf(val, sizeof(val), "%.3f ms",
				 pct(f[i].lat, f[i].nlat, 0.5));
			row("  read latency p50", val, "", NAN);
			snprintf(val, sizeof(val), "%.3f ms",
				 pct(f[i].lat, f[i].nlat, 0.99));
			row("  read latency p99", val, "< 2 ms",
			    pct(f[i].lat, f[i].nlat, 0.99) / 2);
			snprintf(val, sizeof(val), "%.3f ms",
				 f[i].nlat ? f[i].lat[f[i].nlat - 1] : NAN);
			row("  read latency max", val, "", NAN);
			if (f[i].failed) {
				snprintf(val, sizeof(val), "%d", f[i].failed);
				row("  failed reads", val, "0", NAN);
			}
		}
		if (b->daemon_pid > 0) {
			snprintf(val, sizeof(val), "%.2f",
				 f[i].daemon_cpu / f[i].secs);
			row("  daemon CPU, cores", val, "", NAN);
		}
		if (f[i].file) {
			snprintf(val, sizeof(val), "%.2f",
				 f[i].bench_cpu / f[i].secs);
			row("  readers' CPU, cores", val, "", NAN);
		}
		if (b->daemon_pid > 0) {
			/* another tenant's build skews every figure: show it */
			other = f[i].all_cpu - f[i].daemon_cpu - f[i].bench_cpu;
			snprintf(val, sizeof(val), "%.2f",
				 fmax(other, 0) / f[i].secs);
			row("  other load (+ steal), cores", val, "", NAN);
		}
		if (f[i].file && b->daemon_pid > 0 && f[0].steps > 0 &&
		    f[i].nlat) {
			/* the daemon's CPU beyond what its steps take alone */
			serve = f[i].daemon_cpu -
				f[i].steps * f[0].daemon_cpu / f[0].steps;
			snprintf(val, sizeof(val), "%.0f us",
				 1e6 * (serve + f[i].bench_cpu) / f[i].nlat);
			row("  CPU a read (est.)", val, "", NAN);
		}
	}
	fflush(stdout);
}

static void run_device(struct bench *b)
{
	struct figure f[MAX_K + 2];
	char path[4096];
	int nf = 0, i, round;

	if (!b->n_given)
		choose_n(b);
	job_make(b);
	memset(f, 0, sizeof(f));
	nf++;				/* f[0]: no reader */
	for (i = 0; i < b->nk; i++) {
		f[nf].file = b->stat_path;
		f[nf++].readers = b->k[i];
	}
	f[nf].file = b->prom_path;
	f[nf++].readers = 1;
	stat_value(b, "device", path, sizeof(path));
	fprintf(stderr, "# %s: job %s on %s, quadratic:%llu\n", b->device,
		b->job, path, (unsigned long long)b->n);
	sleep_s(0.5);
	for (round = 0; round < b->rounds; round++)
		for (i = 0; i < nf; i++)
			window(b, &f[i], round);
	job_remove(b);
	report(b, f, nf);
	for (i = 0; i < nf; i++)
		free(f[i].lat);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_ctl -m MNT [-d DEVICES] [-n N] [-t STEP_US]\n"
		"                 [-w SECONDS] [-r ROUNDS] [-k K,...]\n"
		"                 [-f RATE] [-p DAEMON_PID]\n");
	exit(2);
}

static void parse_k(struct bench *b, char *s)
{
	char *tok, *save = NULL;

	b->nk = 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (b->nk == MAX_K || atoi(tok) < 1 ||
		    atoi(tok) > MAX_READERS)
			usage();
		b->k[b->nk++] = atoi(tok);
	}
}

int main(int argc, char **argv)
{
	struct bench b = {
		.step_us = 1000, .window = 2, .rounds = 5, .nk = 2,
		.k = { 1, 4 },
	};
	char *devices = strdup("cpu"), *dev, *save = NULL;
	char host[256] = "?";
	time_t now = time(NULL);
	char date[32];
	int c;

	while ((c = getopt(argc, argv, "m:d:n:t:w:r:k:f:p:")) != -1) {
		switch (c) {
		case 'm': b.mnt = optarg; break;
		case 'd': free(devices); devices = strdup(optarg); break;
		case 'n':
			b.n = parse_size(optarg);
			b.n_given = 1;
			break;
		case 't': b.step_us = atof(optarg); break;
		case 'w': b.window = atof(optarg); break;
		case 'r': b.rounds = atoi(optarg); break;
		case 'k': parse_k(&b, optarg); break;
		case 'f': b.pace = atof(optarg); break;
		case 'p': b.daemon_pid = atol(optarg); break;
		default: usage();
		}
	}
	if (!b.mnt || !devices || b.rounds < 1 || b.rounds > MAX_ROUNDS ||
	    b.window <= 0 || b.step_us <= 0 || b.pace < 0)
		usage();
	snprintf(b.prom_path, sizeof(b.prom_path), "%s/metrics.prom", b.mnt);
	gethostname(host, sizeof(host) - 1);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("# gpuopt bench_ctl, %s, %s, %ld cores: reading stat while a job runs\n",
	       date, host, sysconf(_SC_NPROCESSORS_ONLN));
	printf("# ratio = value / target; cost = 1 - steps/s with readers / without\n");
	fflush(stdout);
	for (dev = strtok_r(devices, ",", &save); dev;
	     dev = strtok_r(NULL, ",", &save)) {
		b.device = dev;
		run_device(&b);
	}
	free(devices);
	return 0;
}
