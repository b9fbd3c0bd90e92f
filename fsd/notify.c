// SPDX-License-Identifier: MIT
/*
 * notify.c - what the daemon tells systemd: readiness, stopping, and job
 * state changes for the journal
 *
 * READY=1 goes out once the mount answers, not when fuse_mount() returns:
 * the kernel holds every request until the daemon's loop has answered
 * FUSE_INIT, so a unit ordered After=gpuoptfs.service that reads /gpuopt
 * at once would otherwise find it hanging. A thread started from the init
 * callback stat()s the mountpoint through the kernel; when that returns,
 * the tree is served.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include "fs_i.h"

/* sd_journal_send() says nothing when journald is not there */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static int to_journal(void)
{
	return (getenv("NOTIFY_SOCKET") || getenv("JOURNAL_STREAM")) &&
	       !access(JOURNAL_SOCKET, W_OK);
}

static void *ready_main(void *arg)
{
	struct fsd *fs = arg;
	struct stat st;
	int tries;

	/* ENOTCONN or EINTR only while the mount is being set up */
	for (tries = 0; stat(fs->mountpoint, &st) && tries < 100; tries++)
		if (errno != EINTR && errno != ENOTCONN)
			break;
	if (fs_exiting(fs))
		return NULL;
	fs_debug(fs, "ready: %s answers", fs->mountpoint);
	sd_notifyf(0, "READY=1\nSTATUS=serving %s", fs->mountpoint);
	return NULL;
}

void fs_notify_ready(struct fsd *fs)
{
	pthread_attr_t attr;
	pthread_t t;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, ready_main, fs))
		/* nothing to wait with: say it now rather than never */
		sd_notify(0, "READY=1");
	pthread_attr_destroy(&attr);
}

void fs_notify_stopping(struct fsd *fs)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping jobs and unmounting");
}

void fs_journal_job(struct fsd *fs, const char *job, uid_t uid, int priority,
		    const char *fmt, ...)
{
	char msg[512], stamp[40];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (to_journal() &&
	    sd_journal_send("MESSAGE=job %s: %s", job, msg,
			    "PRIORITY=%d", priority,
			    "GPUOPT_JOB=%s", job,
			    "GPUOPT_UID=%u", (unsigned int)uid,
			    "SYSLOG_IDENTIFIER=gpuoptfs", NULL) >= 0)
		return;
	gpo__fmt_time(stamp, sizeof(stamp));
	flockfile(stderr);
	fprintf(stderr, "gpuoptfs %s: job %s uid=%u: %s\n", stamp, job,
		(unsigned int)uid, msg);
	funlockfile(stderr);
}
