// SPDX-License-Identifier: MIT
/*
 * statedir.c - the state directory, walked one name at a time
 *
 * A job's checkpoints live in STATE/<uid>/<job>/checkpoints. Each step of
 * that path is opened relative to the one before with O_NOFOLLOW and
 * O_DIRECTORY, and files are made, read and removed relative to the last
 * one: a symbolic link planted anywhere under the state directory is never
 * followed, so removing a job never deletes what the link points to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fs_i.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* @name under @dfd (closed), made first when @create; a new fd or -errno */
static int step_into(int dfd, const char *name, int create)
{
	int fd, err;

	fd = openat(dfd, name, DIR_FLAGS);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dfd, name, 0700) && errno != EEXIST)
			fd = -1;
		else
			fd = openat(dfd, name, DIR_FLAGS);
	}
	err = errno;
	close(dfd);
	return fd < 0 ? -err : fd;
}

int fs_state_dirfd(struct fsd *fs, uid_t uid, const char *job,
		   const char *sub, int create)
{
	char uidname[16];
	int fd;

	snprintf(uidname, sizeof(uidname), "%u", (unsigned int)uid);
	fd = open(fs->state_dir, DIR_FLAGS);
	if (fd < 0)
		return -errno;
	fd = step_into(fd, uidname, create);
	if (fd >= 0 && job)
		fd = step_into(fd, job, create);
	if (fd >= 0 && sub)
		fd = step_into(fd, sub, create);
	return fd;
}

int fs_state_open_file(int dfd, const char *name, struct stat *st)
{
	int fd;

	/* O_NONBLOCK: a FIFO planted there must not hold a thread */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

void fs_fd_path(int fd, const char *name, char *buf, size_t len)
{
	if (name)
		snprintf(buf, len, "/proc/self/fd/%d/%s", fd, name);
	else
		snprintf(buf, len, "/proc/self/fd/%d", fd);
}
