// SPDX-License-Identifier: MIT
/*
 * main.c - gpuoptfs: the command line, mounting, privileges and signals
 *
 *   gpuoptfs [-f] [-d] [--state-dir DIR] [--allow-other]
 *            [--max-jobs-per-uid N] [--max-threads N] MOUNTPOINT
 *
 * Order matters: a stale mount is cleaned before mounting; the daemon
 * forks into the background before any thread exists; a small unmount
 * helper is forked before privileges go, keeping only what unmounting
 * needs, and unmounts when the daemon asks or dies; then the daemon drops
 * every capability and sets no_new_privs, and only then loads the
 * library's backends and serves.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fs_i.h"
#include "job_i.h"
#include <fuse_lowlevel.h>

#define FUSE_SUPER_MAGIC 0x65735546
#define FUSERMOUNT "fusermount3"

struct options {
	int foreground;
	int debug;
	int allow_other;
	unsigned int max_jobs_per_uid;
	unsigned int max_threads;
	uint64_t max_job_bytes;
	uint64_t max_uid_bytes;
	const char *state_dir;
	const char *mountpoint;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuoptfs [-f] [-d] [--state-dir DIR] [--allow-other]\n"
		"                [--max-jobs-per-uid N] [--max-job-bytes N]\n"
		"                [--max-uid-bytes N] [--max-threads N] MOUNTPOINT\n"
		"\n"
		"  -f, --foreground        stay in the foreground\n"
		"  -d, --debug             log requests and errors on stderr (implies -f)\n"
		"  --state-dir DIR         where jobs keep checkpoints\n"
		"                          (/var/lib/gpuopt as root, else $XDG_STATE_HOME/gpuopt)\n"
		"  --allow-other           let other users in (always as root)\n"
		"  --max-jobs-per-uid N    jobs one user may have (64)\n"
		"  --max-job-bytes N       memory one job may hold (half the RAM)\n"
		"  --max-uid-bytes N       memory one user's jobs may hold together\n"
		"                          (half the RAM); N in bytes or 'max'\n"
		"  --max-threads N         requests served at once (16)\n"
		"  -V, --version           print the version\n"
		"  -h, --help              this help\n"
		"See gpuoptfs(8).\n");
}

static int parse_uint(const char *s, unsigned int min, unsigned int max,
		      unsigned int *out)
{
	uint64_t v;

	if (gpo__parse_u64(s, &v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_bytes(const char *s, uint64_t *out)
{
	if (!strcmp(s, "max")) {
		*out = UINT64_MAX;
		return 0;
	}
	return gpo__parse_u64(s, out);
}

/* the default memory limits: half the machine's memory */
static uint64_t half_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || size <= 0)
		return UINT64_MAX;
	return (uint64_t)pages * (uint64_t)size / 2;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "allow-other", no_argument, NULL, 'a' },
		{ "max-jobs-per-uid", required_argument, NULL, 'j' },
		{ "max-threads", required_argument, NULL, 't' },
		{ "max-job-bytes", required_argument, NULL, 'J' },
		{ "max-uid-bytes", required_argument, NULL, 'U' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->max_jobs_per_uid = 64;
	o->max_threads = 16;
	o->max_job_bytes = half_ram();
	o->max_uid_bytes = o->max_job_bytes;
	while ((c = getopt_long(argc, argv, "fdVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->foreground = 1;
			break;
		case 'd':
			o->debug = 1;
			o->foreground = 1;
			break;
		case 's':
			o->state_dir = optarg;
			break;
		case 'a':
			o->allow_other = 1;
			break;
		case 'j':
			if (parse_uint(optarg, 1, 1000000,
				       &o->max_jobs_per_uid))
				goto bad;
			break;
		case 't':
			if (parse_uint(optarg, 1, 1024, &o->max_threads))
				goto bad;
			break;
		case 'J':
		case 'U':
			if (parse_bytes(optarg, c == 'J' ? &o->max_job_bytes :
					&o->max_uid_bytes))
				goto bad;
			break;
		case 'V':
			printf("gpuoptfs %s (libgpuopt %s)\n", FSD_VERSION,
			       gpo_version());
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad_usage;
		}
	}
	if (optind != argc - 1)
		goto bad_usage;
	o->mountpoint = argv[optind];
	return 0;
bad:
	fprintf(stderr, "gpuoptfs: bad value '%s'\n", optarg);
bad_usage:
	usage(stderr);
	return -1;
}

/* ---- the state directory ------------------------------------------------- */

/*
 * Checkpoints are made and removed under the state directory as the
 * daemon's user: a directory another user owns or may write could hold
 * links to files of someone else, so it is refused, not repaired.
 */
static int check_state_dir(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		fprintf(stderr, "gpuoptfs: state directory %s: %s\n", path,
			strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "gpuoptfs: state directory %s: not a directory\n",
			path);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr,
			"gpuoptfs: state directory %s belongs to uid %u, not to the daemon's uid %u: refusing it (give it to uid %u or choose another with --state-dir)\n",
			path, (unsigned int)st.st_uid,
			(unsigned int)geteuid(), (unsigned int)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 022) {
		fprintf(stderr,
			"gpuoptfs: state directory %s is writable by others (mode %04o): refusing it (chmod go-w)\n",
			path, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int setup_state_dir(struct fsd *fs, const struct options *o)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char path[PATH_MAX];
	int ret;

	if (o->state_dir)
		snprintf(path, sizeof(path), "%s", o->state_dir);
	else if (geteuid() == 0)
		snprintf(path, sizeof(path), "/var/lib/gpuopt");
	else if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/gpuopt", xdg);
	else
		snprintf(path, sizeof(path), "%s/.local/state/gpuopt",
			 home ? home : "/tmp");
	ret = fs_mkdirs(path, geteuid() == 0 ? 0755 : 0700);
	/* the daemon leaves for / when it goes into the background */
	if (!ret && !realpath(path, fs->state_dir))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "gpuoptfs: state directory %s: %s\n", path,
			strerror(-ret));
		return ret;
	}
	return check_state_dir(fs->state_dir);
}

/* ---- stale mounts -------------------------------------------------------- */

static int run_fusermount_unmount(const char *mnt)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp(FUSERMOUNT, FUSERMOUNT, "-u", "-z", "-q", "--", mnt,
		       (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EPERM;
}

static int lazy_unmount(const char *mnt)
{
	if (geteuid() == 0)
		return umount2(mnt, MNT_DETACH) ? -errno : 0;
	return run_fusermount_unmount(mnt);
}

/* A live FUSE mount right at @mnt (not merely a directory inside one). */
static int is_live_fuse_mount(const char *mnt)
{
	char parent[PATH_MAX + 4];
	struct stat st, pst;
	struct statfs sfs;

	snprintf(parent, sizeof(parent), "%s/..", mnt);
	if (statfs(mnt, &sfs) || (unsigned long)sfs.f_type != FUSE_SUPER_MAGIC)
		return 0;
	if (stat(mnt, &st) || stat(parent, &pst))
		return 0;
	return st.st_dev != pst.st_dev;
}

/*
 * A daemon killed without unmounting leaves its mount behind: every access
 * fails with ENOTCONN. Detach it so that the new mount takes its place.
 */
static int clean_stale_mount(const char *mnt)
{
	struct stat st;
	int ret;

	if (!stat(mnt, &st)) {
		if (is_live_fuse_mount(mnt)) {
			fprintf(stderr,
				"gpuoptfs: %s: a FUSE filesystem is mounted there already\n",
				mnt);
			return -EBUSY;
		}
		return 0;
	}
	if (errno != ENOTCONN) {
		ret = -errno;
		fprintf(stderr, "gpuoptfs: %s: %s\n", mnt, strerror(errno));
		return ret;
	}
	fprintf(stderr,
		"gpuoptfs: %s: stale mount of a dead daemon: unmounting it\n",
		mnt);
	ret = lazy_unmount(mnt);
	if (!ret && stat(mnt, &st))
		ret = -errno;
	if (ret)
		fprintf(stderr,
			"gpuoptfs: %s: cannot clean the stale mount: %s\n",
			mnt, strerror(-ret));
	return ret;
}

/* ---- privileges ---------------------------------------------------------- */

static int have_cap(cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return 0;
	cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

#define CAP_BIT(c) (1ull << (c))

/* Keep the capabilities of mask @keep (CAP_BIT()s) and no others. */
static int limit_caps(uint64_t keep)
{
	cap_value_t c, max = cap_max_bits();
	cap_t caps;
	int ret = 0;

	if (have_cap(CAP_SETPCAP))
		for (c = 0; c < max; c++)
			if (!(keep & CAP_BIT(c)))
				cap_drop_bound(c);
	cap_reset_ambient();
	caps = cap_init();
	if (!caps)
		return -errno;
	for (c = 0; c < max && c < 64; c++) {
		if (!(keep & CAP_BIT(c)) || !have_cap(c))
			continue;
		cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET);
		cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET);
	}
	if (cap_set_proc(caps))
		ret = -errno;
	cap_free(caps);
	return ret;
}

/*
 * Everything but setuid and setgid, which start each job's worker process
 * as the job's owner (job.c); the workers keep no capability at all.
 */
static int drop_privileges(void)
{
	int ret = limit_caps(CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID));

	if (ret) {
		fprintf(stderr, "gpuoptfs: cannot drop capabilities: %s\n",
			strerror(-ret));
		return ret;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		ret = -errno;
		fprintf(stderr, "gpuoptfs: cannot set no_new_privs: %s\n",
			strerror(errno));
	}
	return ret;
}

/* ---- the unmount helper -------------------------------------------------- */

struct umounter {
	pid_t pid;
	int fd;			/* closing it asks for the unmount */
	int unmounted;
};

static void umounter_main(const char *mnt, int fd)
{
	char c;

	/* a dup of /dev/fuse here would keep a dead daemon's mount alive */
	if (fd > 3)
		close_range(3, fd - 1, 0);
	close_range(fd + 1, ~0u, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	prctl(PR_SET_NAME, "gpuoptfs-umount", 0, 0, 0);
	limit_caps(CAP_BIT(CAP_SYS_ADMIN));
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	if (geteuid() == 0)
		_exit(umount2(mnt, MNT_DETACH) && errno != EINVAL ? 1 : 0);
	execlp(FUSERMOUNT, FUSERMOUNT, "-u", "-z", "-q", "--", mnt,
	       (char *)NULL);
	_exit(127);
}

static int umounter_start(const char *mnt, struct umounter *u)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	u->pid = fork();
	if (u->pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (u->pid == 0) {
		close(p[1]);
		umounter_main(mnt, p[0]);
	}
	close(p[0]);
	u->fd = p[1];
	return 0;
}

static void umounter_run(struct umounter *u)
{
	if (u->pid <= 0)
		return;
	close(u->fd);
	while (waitpid(u->pid, NULL, 0) < 0 && errno == EINTR)
		;
	u->pid = -1;
}

/*
 * After the helper unmounted, fuse_unmount() only has to close /dev/fuse,
 * but while a file is still open the connection lives on and libfuse
 * tries umount2() itself, which fails without privileges and says so on
 * stderr: a false alarm to keep from the operator.
 */
static void close_session_quietly(struct fuse *f)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	fuse_unmount(f);
	if (saved >= 0 && null >= 0)
		dup2(saved, STDERR_FILENO);
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
}

/* ---- the daemon ---------------------------------------------------------- */

static struct fsd the_fs;

int fs_exiting(struct fsd *fs)
{
	return fuse_session_exited(fuse_get_session(fs->fuse));
}

void fs_debug(struct fsd *fs, const char *fmt, ...)
{
	char stamp[40];
	va_list ap;

	if (!fs->debug)
		return;
	gpo__fmt_time(stamp, sizeof(stamp));
	va_start(ap, fmt);
	flockfile(stderr);
	fprintf(stderr, "gpuoptfs %s: ", stamp);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}

static void fs_setup(struct fsd *fs, const struct options *o)
{
	const char *env = getenv("GPUOPT_DEVICE");

	fs->admin_uid = geteuid();
	fs->admin_gid = getegid();
	fs->max_jobs_per_uid = o->max_jobs_per_uid;
	fs->max_job_bytes = o->max_job_bytes;
	fs->max_uid_bytes = o->max_uid_bytes;
	fs->debug = o->debug;
	fs->start_ns = gpo__now_ns();
	clock_gettime(CLOCK_REALTIME, &fs->jobs_mtime);
	snprintf(fs->default_device, sizeof(fs->default_device), "%s",
		 env && *env ? env : "best");
	pthread_rwlock_init(&fs->ctx_lock, NULL);
	pthread_mutex_init(&fs->lock, NULL);
}

static struct fuse *fs_new(struct fsd *fs, const struct options *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char opts[256];
	struct fuse *f;

	snprintf(opts, sizeof(opts),
		 "fsname=gpuoptfs,subtype=gpuoptfs,default_permissions%s",
		 o->allow_other || geteuid() == 0 ? ",allow_other" : "");
	if (fuse_opt_add_arg(&args, "gpuoptfs") ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, opts)) {
		fuse_opt_free_args(&args);
		return NULL;
	}
	f = fuse_new(&args, &fs_ops, sizeof(fs_ops), fs);
	fuse_opt_free_args(&args);
	return f;
}

/* The backends start threads: they must not take the shutdown signals. */
static int open_library(struct fsd *fs)
{
	sigset_t set, old;
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	ret = fs_ctx_open(fs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		fprintf(stderr, "gpuoptfs: libgpuopt: %s\n", fs_errmsg());
	else if (*gpo_ctx_probe_log(fs->ctx))
		fs_debug(fs, "probe: %s", gpo_ctx_probe_log(fs->ctx));
	return ret;
}

static int serve(struct fsd *fs, unsigned int max_threads)
{
	struct fuse_loop_config *cfg;
	int ret;

	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	ret = fuse_loop_mt(fs->fuse, cfg);
	fuse_loop_cfg_destroy(cfg);
	/* > 0: the signal that ended the loop */
	return ret < 0 ? ret : 0;
}

/* Unmount once: through the helper when there is one, else directly. */
static void fs_unmount(struct fsd *fs, struct umounter *um)
{
	if (um->unmounted)
		return;
	um->unmounted = 1;
	if (um->pid > 0) {
		umounter_run(um);
		close_session_quietly(fs->fuse);
	} else {
		fuse_unmount(fs->fuse);
	}
}

/*
 * A shell starts background commands with SIGINT ignored, and libfuse
 * leaves an ignored signal alone: both must stop the daemon.
 */
static void default_signals(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
}

/* Everything between mounting and unmounting. */
static int run_mounted(struct fsd *fs, const struct options *o,
		       const char *mnt, struct umounter *um)
{
	struct fuse_session *se = fuse_get_session(fs->fuse);
	int ret;

	if (fuse_daemonize(o->foreground))
		return -1;
	ret = umounter_start(mnt, um);
	if (ret) {
		fprintf(stderr, "gpuoptfs: cannot fork: %s\n", strerror(-ret));
		return ret;
	}
	default_signals();
	if (drop_privileges() || fuse_set_signal_handlers(se))
		return -1;
	ret = open_library(fs);
	if (!ret)
		job_load_all(fs);
	if (!ret) {
		fs_debug(fs, "serving %s as uid %u", mnt,
			 (unsigned int)fs->admin_uid);
		ret = serve(fs, o->max_threads);
		if (ret)
			fprintf(stderr, "gpuoptfs: %s\n", strerror(-ret));
		fs_notify_stopping(fs);
		/* unmount first: nobody waits on a daemon that stops serving */
		fs_unmount(fs, um);
		fs_close_all(fs);
		job_stop_all(fs);
		fs_ctx_close(fs);
	}
	fuse_remove_signal_handlers(se);
	return ret;
}

int main(int argc, char **argv)
{
	struct umounter um = { .pid = -1, .fd = -1 };
	struct fsd *fs = &the_fs;
	char mnt[PATH_MAX];
	struct options o;
	struct stat st;
	int status = 1;

	if (parse_args(argc, argv, &o))
		return 2;
	fs_setup(fs, &o);
	if (setup_state_dir(fs, &o) || clean_stale_mount(o.mountpoint))
		return 1;
	if (!realpath(o.mountpoint, mnt)) {
		fprintf(stderr, "gpuoptfs: %s: %s\n", o.mountpoint,
			strerror(errno));
		return 1;
	}
	/* the kernel mounts on a file too, and then every access is EIO */
	if (stat(mnt, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "gpuoptfs: mountpoint %s: not a directory\n",
			o.mountpoint);
		return 1;
	}
	snprintf(fs->mountpoint, sizeof(fs->mountpoint), "%s", mnt);
	fs->fuse = fs_new(fs, &o);
	if (!fs->fuse)
		return 1;
	if (!fuse_mount(fs->fuse, mnt)) {
		if (!run_mounted(fs, &o, mnt, &um))
			status = 0;
		fs_unmount(fs, &um);
	}
	fuse_destroy(fs->fuse);
	fs_debug(fs, "exit %d", status);
	return status;
}
