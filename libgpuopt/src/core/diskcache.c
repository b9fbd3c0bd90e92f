// SPDX-License-Identifier: MIT
/*
 * diskcache.c - compiled-kernel cache on disk (see diskcache_i.h)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* header-only: no libxxhash at run time on machines that lack it */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "core/gpuopt_i.h"
#include "core/diskcache_i.h"

#define CACHE_MAGIC	0x6f6370676f706700ull	/* "gpogpco" */
#define CACHE_MAX	(256u << 20)

struct cache_header {
	uint64_t magic;
	uint64_t size;
	uint64_t sum;
};

uint64_t gpo__diskcache_key(uint64_t seed, const void *data, size_t len)
{
	return XXH64(data, len, seed);
}

uint64_t gpo__diskcache_key_str(uint64_t seed, const char *s)
{
	return XXH64(s ? s : "", s ? strlen(s) + 1 : 1, seed);
}

static int cache_dir(char *buf, size_t len)
{
	const char *env = getenv("GPUOPT_CACHE_DIR");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;

	if (env && !strcmp(env, "off"))
		return -ENOENT;
	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/gpuopt", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/gpuopt", home);
	else
		return -ENOENT;
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int gpo__diskcache_path(const char *kind, uint64_t key, char *buf, size_t len)
{
	char dir[4096];
	int ret = cache_dir(dir, sizeof(dir)), n;

	if (ret)
		return ret;
	n = snprintf(buf, len, "%s/%s-%016llx.bin", dir, kind,
		     (unsigned long long)key);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* mkdir -p for the cache directory (0700: kernels are per user) */
static int make_dirs(const char *path)
{
	char tmp[4096], *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, (char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EBADMSG;
		done += r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = write(fd, (const char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		done += r;
	}
	return 0;
}

int gpo__diskcache_load(const char *kind, uint64_t key, void **data,
		   size_t *size)
{
	struct cache_header h;
	char path[4200];
	struct stat st;
	void *buf;
	int fd, ret;

	ret = gpo__diskcache_path(kind, key, path, sizeof(path));
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || read_full(fd, &h, sizeof(h)) ||
	    h.magic != CACHE_MAGIC || h.size > CACHE_MAX ||
	    (uint64_t)st.st_size != sizeof(h) + h.size) {
		ret = -EBADMSG;
		goto out_close;
	}
	buf = malloc(h.size ? h.size : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	ret = read_full(fd, buf, h.size);
	if (!ret && XXH64(buf, h.size, 0) != h.sum)
		ret = -EBADMSG;
	if (ret) {
		free(buf);
		goto out_close;
	}
	*data = buf;
	*size = h.size;
out_close:
	close(fd);
	if (ret == -EBADMSG)
		unlink(path);
	return ret;
}

int gpo__diskcache_store(const char *kind, uint64_t key, const void *data,
		    size_t size)
{
	struct cache_header h = { CACHE_MAGIC, size, XXH64(data, size, 0) };
	char dir[4096], path[4200], tmp[4300];
	int fd, ret;

	ret = cache_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	ret = make_dirs(dir);
	if (ret)
		return ret;
	ret = gpo__diskcache_path(kind, key, path, sizeof(path));
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = write_full(fd, &h, sizeof(h));
	if (!ret)
		ret = write_full(fd, data, size);
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}
