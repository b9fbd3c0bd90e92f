/* SPDX-License-Identifier: MIT */
/*
 * diskcache_i.h - an on-disk cache of compiled kernels, shared by the
 * OpenCL (program binaries) and Vulkan (pipeline cache) backends.
 *
 * Entries live in $GPUOPT_CACHE_DIR, else $XDG_CACHE_HOME/gpuopt, else
 * ~/.cache/gpuopt, as <kind>-<key as 16 hex digits>.bin. Each entry carries
 * its length and an XXH64 checksum; a damaged entry reads as missing.
 * Writes go to a temporary file renamed over the entry, so a reader never
 * sees half an entry. Setting GPUOPT_CACHE_DIR=off disables the cache.
 */
#ifndef GPUOPT_DISKCACHE_I_H
#define GPUOPT_DISKCACHE_I_H

#include <stddef.h>
#include <stdint.h>

/* gpo__diskcache_key - hash @len bytes into @seed; chain calls for many parts */
uint64_t gpo__diskcache_key(uint64_t seed, const void *data, size_t len);
uint64_t gpo__diskcache_key_str(uint64_t seed, const char *s);

/*
 * gpo__diskcache_load - read entry (@kind, @key) into a malloc'ed buffer
 * Returns 0, -ENOENT when missing, -EBADMSG when damaged (the entry is
 * then removed), -ENOMEM.
 */
int gpo__diskcache_load(const char *kind, uint64_t key, void **data,
		   size_t *size);

/* gpo__diskcache_store - write entry (@kind, @key) atomically; 0 or -errno */
int gpo__diskcache_store(const char *kind, uint64_t key, const void *data,
		    size_t size);

/* gpo__diskcache_path - the file of an entry (for tests); 0 or -errno */
int gpo__diskcache_path(const char *kind, uint64_t key, char *buf, size_t len);

#endif /* GPUOPT_DISKCACHE_I_H */
