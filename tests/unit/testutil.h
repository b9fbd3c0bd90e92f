/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - what the unit tests share: the devices to run on, fresh
 * random inputs, poisoned outputs, comparisons against float64 references.
 */
#ifndef GPUOPT_TESTUTIL_H
#define GPUOPT_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuopt.h>

#define TU_MAX_DEVICES 16

/*
 * tu_ctx - the test process's context (created on first use)
 */
struct gpo_ctx *tu_ctx(void);

/*
 * tu_devices - the devices to test on: every device of tu_ctx(), or those
 * matching GPUOPT_TEST_DEVICES (a comma list of ids or backend names,
 * e.g. "cpu,opencl:0"). Devices that fail to open are left out and
 * reported on stderr. Each backend named in GPUOPT_TEST_REQUIRE (a comma
 * list, e.g. "opencl,vulkan") must have at least one device, or the test
 * fails; a backend this build left out (make BACKENDS=...) is exempt, as
 * it was left out on purpose. Returns the count.
 */
int tu_devices(struct gpo_device **devs, int max);

/* tu_built - was libgpuopt built with @backend (GPO_HAVE_*, BACKENDS)? */
int tu_built(const char *backend);

/* tu_wanted - is this device one GPUOPT_TEST_DEVICES lets tests use? */
int tu_wanted(const struct gpo_device_info *info);

/*
 * tu_backend_gate - may the test program of @backend ("opencl", "vulkan")
 * run? Returns 0 to run; 77 after printing why to skip: the backend has
 * no device here (counted in a child process: runtimes that start threads
 * would not survive Check's fork of each test) or GPUOPT_TEST_DEVICES
 * leaves it out. Never skips for these when GPUOPT_TEST_REQUIRE names
 * @backend. Always skips when the build left @backend out (BACKENDS).
 */
int tu_backend_gate(const char *backend);

/*
 * tu_open_backend - open every wanted device of @backend in @ctx (at
 * least one, or the test fails) into @devs, and cpu:0 into *@cpu.
 * Returns the count.
 */
int tu_open_backend(struct gpo_ctx *ctx, const char *backend,
		    struct gpo_device **devs, int max, struct gpo_device **cpu);

/* tu_cache_dir_new - a fresh, empty GPUOPT_CACHE_DIR for this test */
void tu_cache_dir_new(char *dir, size_t len);
void tu_cache_dir_remove(const char *dir);

/*
 * tu_cache_entries - the kernel cache entries "<kind>-<key>.bin" in @dir:
 * the first one's path and key in @path and @key; returns the count
 */
int tu_cache_entries(const char *dir, const char *kind, char *path,
		     size_t len, uint64_t *key);

/* tu_device_id - "cpu:0" etc. */
const char *tu_device_id(struct gpo_device *dev);

/*
 * tu_seed - the random seed of this run: GPUOPT_TEST_SEED if set, else
 * fresh from the clock; printed once so a failure can be replayed.
 */
uint64_t tu_seed(void);

/* tu_rand - uniform in [lo, hi) from the xorshift state @s */
double tu_rand(uint64_t *s, double lo, double hi);
void tu_fill(float *x, size_t n, uint64_t *s, double lo, double hi);

/* tu_poison - fill with a signalling-NaN pattern so unwritten data fails */
void tu_poison(float *x, size_t n);

/*
 * tu_max_rel_err - max over i of |got - want| / max(|want|, floor);
 * NaN anywhere in @got gives INFINITY.
 */
double tu_max_rel_err(const float *got, const double *want, size_t n,
		      double floor);

/*
 * tu_odd_sizes - sizes that are not multiples of 4, 8 or 16, from small
 * to a few hundred thousand; returns the count written to @out (<= max)
 */
int tu_odd_sizes(uint64_t *out, int max);

/* tu_run - run @s with Check and return the exit status for main() */
int tu_run(Suite *s);

/* ---- added with the optimizer tests ------------------------------------ */

/*
 * tu_quick - GPUOPT_TEST_QUICK=1 (run-unit.sh sets it under valgrind):
 * tests leave out their huge and large sizes
 */
int tu_quick(void);

/*
 * tu_rng - a random stream for @tag: tu_seed() mixed with the tag, so that
 * every test draws its own inputs and a failing one replays alone
 */
uint64_t tu_rng(const char *tag);

/*
 * tu_data_path - @rel under the test data directory: GPUOPT_TEST_DATA, or
 * tests/data (tests run with the repository root as working directory)
 */
void tu_data_path(char *buf, size_t len, const char *rel);

/*
 * tu_check_errmsg - assert that the last libgpuopt call of this thread left
 * a message in gpo_errmsg(); @what names the call in the failure text
 */
void tu_check_errmsg(const char *what);

#endif /* GPUOPT_TESTUTIL_H */
