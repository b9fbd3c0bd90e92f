// SPDX-License-Identifier: MIT
/*
 * fsio.c - the system calls the shell cannot make precisely, for the
 * gpuoptfs tests. Each command prints OK or the errno's name.
 *
 *   fsio write FILE TEXT [OFFSET]     one pwrite(), then close()
 *   fsio writefile FILE DATA CHUNK [START]
 *                                     DATA's bytes in CHUNK-byte writes at
 *                                     increasing offsets: "write=X close=Y"
 *   fsio open FILE r|w                open(2) only
 *   fsio mkdir PATH | rmdir PATH | stat PATH
 *   fsio poll FILE MS                 read to the end, poll(POLLIN) up to
 *                                     MS ms: "READY" or "TIMEOUT"
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	int err;
	const char *name;
} names[] = {
	{ EINVAL, "EINVAL" }, { EBUSY, "EBUSY" }, { EACCES, "EACCES" },
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ENOSPC, "ENOSPC" },
	{ ENOMEM, "ENOMEM" }, { ENODEV, "ENODEV" }, { EEXIST, "EEXIST" },
	{ EDQUOT, "EDQUOT" }, { ENOSYS, "ENOSYS" }, { EIO, "EIO" },
	{ EINTR, "EINTR" }, { ERANGE, "ERANGE" }, { ENOTDIR, "ENOTDIR" },
	{ EISDIR, "EISDIR" }, { ENOTCONN, "ENOTCONN" }, { EROFS, "EROFS" },
	{ ENOTEMPTY, "ENOTEMPTY" }, { EOVERFLOW, "EOVERFLOW" },
	{ ENODATA, "ENODATA" }, { EBADE, "EBADE" }, { EAGAIN, "EAGAIN" },
};

static const char *errname(int err)
{
	static char buf[16];
	size_t i;

	if (!err)
		return "OK";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

static int do_write(const char *file, const char *text, off_t off)
{
	int fd, err = 0;

	fd = open(file, O_WRONLY);
	if (fd < 0) {
		puts(errname(errno));
		return 0;
	}
	if (pwrite(fd, text, strlen(text), off) < 0)
		err = errno;
	if (close(fd) && !err)
		err = errno;
	puts(errname(err));
	return 0;
}

static int do_writefile(const char *file, const char *data, size_t chunk,
			off_t start)
{
	int fd, in, werr = 0, cerr = 0;
	char *buf;
	ssize_t n;
	off_t off = start;

	buf = malloc(chunk);
	in = open(data, O_RDONLY);
	if (!buf || in < 0) {
		perror(data);
		return 2;
	}
	fd = open(file, O_WRONLY);
	if (fd < 0) {
		printf("open=%s\n", errname(errno));
		return 0;
	}
	while ((n = read(in, buf, chunk)) > 0) {
		if (pwrite(fd, buf, n, off) != n) {
			werr = errno;
			break;
		}
		off += n;
	}
	if (close(fd))
		cerr = errno;
	printf("write=%s close=%s\n", errname(werr), errname(cerr));
	free(buf);
	close(in);
	return 0;
}

static int do_poll(const char *file, int ms)
{
	struct pollfd p;
	char buf[4096];
	int fd;

	fd = open(file, O_RDONLY);
	if (fd < 0) {
		puts(errname(errno));
		return 0;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, ms) == 1 && (p.revents & POLLIN) &&
	    read(fd, buf, sizeof(buf)) > 0)
		puts("READY");
	else
		puts("TIMEOUT");
	close(fd);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fsio write|writefile|open|mkdir|rmdir|stat|poll ...\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	struct stat st;
	int fd;

	if (!strcmp(cmd, "write") && (argc == 4 || argc == 5))
		return do_write(argv[2], argv[3],
				argc == 5 ? atoll(argv[4]) : 0);
	if (!strcmp(cmd, "writefile") && (argc == 5 || argc == 6))
		return do_writefile(argv[2], argv[3], atol(argv[4]),
				    argc == 6 ? atoll(argv[5]) : 0);
	if (!strcmp(cmd, "open") && argc == 4) {
		fd = open(argv[2], argv[3][0] == 'w' ? O_WRONLY : O_RDONLY);
		puts(errname(fd < 0 ? errno : 0));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (!strcmp(cmd, "mkdir") && argc == 3) {
		puts(errname(mkdir(argv[2], 0755) ? errno : 0));
		return 0;
	}
	if (!strcmp(cmd, "rmdir") && argc == 3) {
		puts(errname(rmdir(argv[2]) ? errno : 0));
		return 0;
	}
	if (!strcmp(cmd, "stat") && argc == 3) {
		puts(errname(stat(argv[2], &st) ? errno : 0));
		return 0;
	}
	if (!strcmp(cmd, "poll") && argc == 4)
		return do_poll(argv[2], atoi(argv[3]));
	return usage();
}
