/* SPDX-License-Identifier: MIT */
/*
 * fs_i.h - gpuoptfs internals shared by the daemon's files
 *
 * The daemon serves the /gpuopt tree of DESIGN.md through libfuse's
 * high-level API. tree.c resolves a path to a node and applies the rules
 * every file shares; tree_*.c describe the files of one part of the tree;
 * job.c runs the jobs behind job_i.h; config.c parses job configs.
 */
#ifndef FS_I_H
#define FS_I_H

#define FUSE_USE_VERSION 314

#include <fuse.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <gpuopt.h>
/* ARRAY_SIZE, numbers in the C locale, gpo__sbuf, clocks, directories */
#include "common/common.h"

#define FS_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define FS_STR_(x) #x
#define FS_STR(x) FS_STR_(x)
#define FSD_VERSION FS_STR(GPUOPT_VERSION_MAJOR) "." \
	FS_STR(GPUOPT_VERSION_MINOR) "." FS_STR(GPUOPT_VERSION_PATCH)

struct job;
struct fsd;

/* ---- err.c: the request's error message, mkdir -p ------------------------ */

/* fs_mkdirs - mkdir -p; 0 or -errno */
int fs_mkdirs(const char *path, mode_t mode);

/*
 * fs_err - set the calling thread's error message for the request being
 * served and return @err, as gpo__err() does in the library. tree.c copies
 * the message into error_log and the job's error file.
 */
int fs_err(int err, const char *fmt, ...) FS_PRINTF(2, 3);
/* fs_lib_err - fs_err() with the library's gpo_errmsg() */
int fs_lib_err(int err);
const char *fs_errmsg(void);
/*
 * fs_escape - @src as one line of plain ASCII for logs others read:
 * newline, tab, CR and backslash as \n \t \r \\, other control and
 * non-ASCII bytes as \xHH, cut at a whole escape to fit @len
 */
void fs_escape(char *dst, size_t len, const char *src);
void fs_err_clear(void);

/* ---- statedir.c: the state directory, never through symlinks ------------- */

/*
 * fs_state_dirfd - an fd of STATE/@uid[/@job[/@sub]], each step opened
 * with O_NOFOLLOW and made (0700) first when @create; or -errno
 */
int fs_state_dirfd(struct fsd *fs, uid_t uid, const char *job,
		   const char *sub, int create);
/* fs_state_open_file - @name under @dfd for reading, only a regular file
 * and never through a link (-ENOENT otherwise); an fd or -errno */
int fs_state_open_file(int dfd, const char *name, struct stat *st);
/* fs_fd_path - a path naming fd @fd (and @name in it) for APIs that take
 * paths: /proc/self/fd/N[/NAME] */
void fs_fd_path(int fd, const char *name, char *buf, size_t len);

/* ---- the daemon ---------------------------------------------------------- */

#define BUSY_SLOTS 10			/* of 100 ms: one second */
#define BUSY_SLOT_NS 100000000ull
#define ERRLOG_MAX 64

/* What the daemon knows of one device beyond the library's info. */
struct dev_slot {
	pthread_mutex_t lock;
	struct gpo_device *dev;		/* opened on first use */
	uint64_t busy_ns[BUSY_SLOTS];
	uint64_t busy_epoch[BUSY_SLOTS];
	uint64_t busy_total_ns;
	uint64_t steps;
};

struct uid_mem {
	uid_t uid;
	uint64_t bytes;
};

struct errlog_entry {
	char time[40];
	uid_t uid;
	char path[128];
	char msg[256];
};

struct fsd {
	/* set at start, read-only afterwards */
	uid_t admin_uid;		/* owns root-only files: the daemon's */
	gid_t admin_gid;
	unsigned int max_jobs_per_uid;
	uint64_t max_job_bytes;		/* of one job's state; UINT64_MAX: max */
	uint64_t max_uid_bytes;		/* of one user's jobs together */
	char state_dir[4096];
	char mountpoint[4096];
	char default_device[64];
	int debug;
	uint64_t start_ns;
	struct fuse *fuse;

	/* rescan replaces the context: readers hold ctx_lock for reading */
	pthread_rwlock_t ctx_lock;
	struct gpo_ctx *ctx;
	int ndevs;
	struct dev_slot *devs;
	struct gpo_device *cpu;		/* validates configs */

	pthread_mutex_t lock;		/* everything below */
	struct job *jobs;		/* list, newest first */
	struct job *zombies;		/* removed, still referenced by handles */
	struct timespec jobs_mtime;	/* a job was made or removed */
	struct fs_handle *handles;	/* open files */
	int njobs;
	int dev_users;			/* jobs holding a device */
	uint64_t steps_total;
	uint64_t errors_total;
	struct uid_mem *uid_mem;	/* bytes reserved per uid */
	int n_uid_mem;
	struct errlog_entry errlog[ERRLOG_MAX];
	unsigned int errlog_next;
	unsigned int errlog_count;
};

/* main.c */
int fs_exiting(struct fsd *fs);
void fs_debug(struct fsd *fs, const char *fmt, ...) FS_PRINTF(2, 3);

/* notify.c: systemd's readiness protocol and journal */
/* fs_notify_ready - from the init callback: READY=1 once the mount answers */
void fs_notify_ready(struct fsd *fs);
void fs_notify_stopping(struct fsd *fs);
/*
 * fs_journal_job - a line about a job for the operator: to the journal
 * with GPUOPT_JOB= and GPUOPT_UID= under systemd, else to stderr.
 * @priority is syslog's (LOG_INFO, LOG_ERR, ...).
 */
void fs_journal_job(struct fsd *fs, const char *job, uid_t uid, int priority,
		    const char *fmt, ...) FS_PRINTF(5, 6);

/* tree_root.c: the daemon-wide state */
int fs_ctx_open(struct fsd *fs);
void fs_ctx_close(struct fsd *fs);
void fs_log_error(struct fsd *fs, uid_t uid, const char *path,
		  const char *msg);
/*
 * fs_mem_reserve - count @bytes of a job's state against @uid's memory
 * limit before any of it is allocated: 0, or -EDQUOT with the reason
 */
int fs_mem_reserve(struct fsd *fs, uid_t uid, uint64_t bytes);
void fs_mem_release(struct fsd *fs, uid_t uid, uint64_t bytes);
/* fs_device - the opened device @index (cached), or a negative errno;
 * the caller holds ctx_lock for reading. */
int fs_device(struct fsd *fs, int index, struct gpo_device **out);
/* fs_pool_add_jobs - add to @st, the daemon's pool of device @index, the
 * job workers' pools on it (tree_pools.c); ctx_lock not held */
int fs_pool_add_jobs(struct fsd *fs, int index, struct gpo_pool_stats *st);
/* fs_device_seen - a job opened device @index: its pool shows now */
void fs_device_seen(struct fsd *fs, int index, struct gpo_device *dev);
/* fs_busy_add - account device time [@t0, @t1) spent in a job's step */
void fs_busy_add(struct fsd *fs, int index, uint64_t t0, uint64_t t1);
/* fs_busy_ratio - the share (0-1) of the last second the device was busy */
double fs_busy_ratio(struct fsd *fs, int index);
/* fs_busy_percent - the same in whole percent, for busy_percent */
unsigned int fs_busy_percent(struct fsd *fs, int index);

/* ---- the tree ------------------------------------------------------------ */

enum fs_dir {
	D_NONE = 0,			/* a file */
	D_ROOT,
	D_DEVICES,
	D_DEVICE,
	D_POOLS,
	D_POOL,
	D_JOBS,
	D_JOB,
	D_PARAMS,
	D_CHECKPOINTS,
};

struct fs_handle;
struct fs_node;

#define F_ADMIN		0x1	/* root (or the daemon's user) writes */
#define F_PRIVATE	0x2	/* only the job's owner or root reads it */
#define F_STREAM	0x4	/* append-only: not regenerated at 0 */
#define F_LINES		0x8	/* store takes complete lines, collected */

/*
 * One file of the tree. Text files have show (the whole content, made
 * fresh when read at offset 0) and store (one whole value, written at
 * offset 0). Binary files use read_at/write_at/flush instead.
 */
struct fs_file {
	const char *name;
	mode_t mode;
	unsigned int flags;
	int arg;			/* which field, for shared handlers */
	int (*show)(struct fs_node *n, struct gpo__sbuf *sb);
	int (*store)(struct fs_node *n, const char *text, uid_t uid);
	int (*read_at)(struct fs_handle *h, char *buf, size_t size,
		       off_t off);
	int (*write_at)(struct fs_handle *h, const char *buf, size_t size,
			off_t off, uid_t uid);
	int (*flush)(struct fs_handle *h, uid_t uid);
	/* returns poll events ready now, keeping @ph when none are */
	unsigned int (*poll)(struct fs_handle *h, struct fuse_pollhandle *ph);
	off_t (*size)(struct fs_node *n);
	/* when the content last changed; else the daemon's start */
	struct timespec (*mtime)(struct fs_node *n);
	int (*open)(struct fs_handle *h);	/* a file of the disk */
};

/* A resolved path. A node holds a reference on its job. */
struct fs_node {
	struct fsd *fs;
	enum fs_dir dir;
	const struct fs_file *file;
	int index;			/* devices/<i>, pools/<i> */
	int tensor;			/* params/<t> */
	char ckpt[80];			/* checkpoints/<file> */
	struct job *job;
	char path[128];			/* for messages */
};

/*
 * An open file. The kernel may send several requests for one handle at
 * once (two threads reading one fd): @lock serializes them, since the
 * snapshot and the staged writes below belong to the handle.
 */
struct fs_handle {
	struct fs_handle *prev, *next;	/* fs->handles, under fs->lock */
	struct fs_node node;
	pthread_mutex_t lock;		/* everything below */
	struct gpo__sbuf snap;		/* text made by the last read at 0 */
	int have_snap;
	char *stage;			/* binary writes being assembled */
	size_t stage_len;
	size_t stage_total;
	uint64_t stage_gen;		/* the job's model when it began */
	uint64_t stage_id;		/* grad: staged in the job's shm */
	char *lines;			/* F_LINES: the incomplete last line */
	size_t lines_len;
	uint64_t lines_next;		/* the offset the next write takes */
	pid_t lines_pid;		/* who wrote the incomplete line */
	off_t read_pos;			/* streams: how far it read */
	int fd;				/* a file of the disk, or -1 */
};

/* tree_root.c */
extern const struct fs_file root_files[];
/* tree_devices.c */
extern const struct fs_file device_files[];
/* tree_pools.c */
extern const struct fs_file pool_files[];
/* tree_jobs.c */
extern const struct fs_file job_files[];
extern const struct fs_file params_index_file;
extern const struct fs_file params_tensor_file;
extern const struct fs_file checkpoint_file;
int jobs_mkdir(struct fsd *fs, const char *name, uid_t uid, gid_t gid);
int jobs_rmdir(struct fsd *fs, const char *name, uid_t uid);
/* jobs_dir_mtime - the mtime of jobs/ or a directory of a job, 0 if it
 * has one of its own, else -ENOENT */
int jobs_dir_mtime(struct fs_node *n, struct timespec *ts);

/* tree.c */
extern const struct fuse_operations fs_ops;
/* fs_close_all - at exit, free the files the kernel never released */
void fs_close_all(struct fsd *fs);
const struct fs_file *fs_file_find(const struct fs_file *table,
				   const char *name);
/* parse one whole integer value with an optional trailing newline */
int fs_parse_u64(const char *text, uint64_t *out);

/* metrics.c */
int metrics_show(struct fsd *fs, struct gpo__sbuf *sb);

#endif /* FS_I_H */
