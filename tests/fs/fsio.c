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
 *   fsio seq FILE r|w|rw OP...        one open, then each OP on that fd,
 *                                     printing one result each:
 *        w:TEXT       write() at the file position (\n in TEXT: newline)
 *        p:OFF:TEXT   pwrite() at OFF
 *        r            pread() everything from offset 0: OK
 *        t:N          two threads each pread() the fd from offset 0 in
 *                     small pieces, N times: OK or the first errno
 *        o:FILE:TEXT  another open of FILE, one write of TEXT, close:
 *                     a second writer in between, without a fork
 *                     (a child's exit would flush this fd too)
 *        x:CMD        run CMD with system(); prints nothing itself
 *        c            close()
 *   fsio hold FILE N CMD              open FILE N times (read-only), run
 *                                     CMD, print "opened=K"
 */
#include <errno.h>
#include <pthread.h>
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
	{ ESTALE, "ESTALE" }, { EMFILE, "EMFILE" },
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

/* TEXT with \n and \\ made real, into a malloc'ed copy */
static char *unescape(const char *text, size_t *len)
{
	char *out = malloc(strlen(text) + 1);
	size_t n = 0;

	for (; out && *text; text++) {
		if (text[0] == '\\' && text[1] == 'n') {
			out[n++] = '\n';
			text++;
		} else if (text[0] == '\\' && text[1] == '\\') {
			out[n++] = '\\';
			text++;
		} else {
			out[n++] = *text;
		}
	}
	*len = n;
	return out;
}

struct reader {
	int fd;
	int iters;
	int err;
};

/* read the whole file in odd-sized pieces, again and again */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char buf[4096];
	static const size_t sizes[] = { 13, 64, 700, 4096 };
	int i;

	for (i = 0; i < r->iters && !r->err; i++) {
		size_t sz = sizes[i % 4];
		off_t off = 0;
		ssize_t n;

		while ((n = pread(r->fd, buf, sz, off)) > 0)
			off += n;
		if (n < 0)
			r->err = errno;
	}
	return NULL;
}

static const char *threads(int fd, int iters)
{
	struct reader r[2] = { { fd, iters, 0 }, { fd, iters, 0 } };
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, reader_main, &r[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return errname(r[0].err ? r[0].err : r[1].err);
}

static int do_seq(const char *file, const char *mode, int nops, char **ops)
{
	int flags = !strcmp(mode, "rw") ? O_RDWR :
		    mode[0] == 'w' ? O_WRONLY : O_RDONLY;
	char buf[65536], *text;
	int fd, i, err;
	size_t len;
	off_t off;

	fd = open(file, flags | O_CLOEXEC);
	if (fd < 0) {
		printf("open=%s\n", errname(errno));
		return 0;
	}
	for (i = 0; i < nops; i++) {
		const char *op = ops[i];

		fflush(stdout);
		err = 0;
		if (!strncmp(op, "w:", 2)) {
			text = unescape(op + 2, &len);
			if (write(fd, text, len) < 0)
				err = errno;
			free(text);
		} else if (!strncmp(op, "p:", 2)) {
			off = atoll(op + 2);
			op = strchr(op + 2, ':');
			text = unescape(op ? op + 1 : "", &len);
			if (pwrite(fd, text, len, off) < 0)
				err = errno;
			free(text);
		} else if (!strcmp(op, "r")) {
			ssize_t n;

			off = 0;
			while ((n = pread(fd, buf, sizeof(buf), off)) > 0)
				off += n;
			if (n < 0)
				err = errno;
		} else if (!strncmp(op, "t:", 2)) {
			printf("%s\n", threads(fd, atoi(op + 2)));
			continue;
		} else if (!strncmp(op, "o:", 2)) {
			char path[4096];
			const char *colon = strchr(op + 2, ':');
			int fd2;

			if (!colon || colon - op - 2 >= (int)sizeof(path))
				return 2;
			memcpy(path, op + 2, colon - op - 2);
			path[colon - op - 2] = '\0';
			text = unescape(colon + 1, &len);
			fd2 = open(path, O_WRONLY);
			if (fd2 < 0 || write(fd2, text, len) < 0)
				err = errno;
			if (fd2 >= 0 && close(fd2) && !err)
				err = errno;
			free(text);
		} else if (!strncmp(op, "x:", 2)) {
			if (system(op + 2) < 0)
				return 2;
			continue;
		} else if (!strcmp(op, "c")) {
			err = close(fd) ? errno : 0;
			fd = -1;
		} else {
			fprintf(stderr, "fsio seq: bad op '%s'\n", op);
			return 2;
		}
		printf("%s\n", errname(err));
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int do_hold(const char *file, int n, const char *cmd)
{
	int i, got = 0;

	for (i = 0; i < n; i++)
		got += open(file, O_RDONLY) >= 0;
	fflush(stdout);
	if (system(cmd) < 0)
		return 2;
	printf("opened=%d\n", got);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: fsio write|writefile|open|mkdir|rmdir|stat|poll|seq|hold ...\n");
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
	if (!strcmp(cmd, "seq") && argc >= 4)
		return do_seq(argv[2], argv[3], argc - 4, argv + 4);
	if (!strcmp(cmd, "hold") && argc == 5)
		return do_hold(argv[2], atoi(argv[3]), argv[4]);
	return usage();
}
