// SPDX-License-Identifier: MIT
/*
 * test_ckpt.c - checkpoints: round trips on every device and across
 * devices, the file's layout, the I/O paths, the inspection API, errors
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "testutil.h"
#include "ckpt_util.h"
#include "ckpt/ckpt_i.h"

#define RESUME_STEPS 4

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gpuopt-ckpt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	struct dirent *e;
	char path[512];
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] ||
		    (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int count_files(void)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' || (e->d_name[1] &&
		     (e->d_name[1] != '.' || e->d_name[2]));
	if (d)
		closedir(d);
	return n;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

struct kind_case {
	enum gpo_optim_kind kind;
	const char *g0, *g1;
	int steps_before;	/* 0: saved before the first step */
};

static const struct kind_case kinds[] = {
	{ GPO_ADAMW, "lr=0.01 amsgrad=1", "lr=0.02 weight_decay=0.1", 3 },
	{ GPO_ADAM, "lr=0.01", "lr=0.005 maximize=1", 2 },
	{ GPO_SGD, "lr=0.1 momentum=0.9 dampening=0.3",
	  "lr=0.05 momentum=0.5 nesterov=1", 0 },
	{ GPO_SGD, "lr=0.1 momentum=0.9 dampening=0.3", "lr=0.05", 2 },
	{ GPO_RMSPROP, "lr=0.01 centered=1 momentum=0.9", "lr=0.02", 3 },
	{ GPO_ADAGRAD, "lr=0.1 lr_decay=0.01",
	  "lr=0.05 initial_accumulator_value=0.3", 2 },
	{ GPO_LAMB, "lr=0.01 weight_decay=0.01", "lr=0.02", 3 },
	{ GPO_LION, "lr=0.001 weight_decay=0.1", "lr=0.002", 1 },
};

/* Two groups, odd shapes: w [n/37 + 1, 37] b [3] in 0, v [5, 7, 11] in 1. */
static struct gpo_optim *make_opt(struct gpo_device *dev,
				  const struct kind_case *kc, uint64_t n)
{
	uint64_t sw[2] = { n / 37 + 1, 37 }, sb[1] = { 3 }, sv[3] = { 5, 7, 11 };
	struct gpo_optim *opt;

	ck_assert_int_eq(gpo_optim_new(dev, kc->kind, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 2, sw, 0), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "v", 3, sv, 1), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "b", 1, sb, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, 0, kc->g0), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, 1, kc->g1), 0);
	return opt;
}

/* Everything a restore must bring back, as bytes. */
struct snap {
	int nslots;
	char names[9][32];	/* [0] "param" */
	float *data[9];		/* [0] param */
	uint64_t step, skipped;
	double lr0, lr1;
};

static void take_snap(struct gpo_optim *opt, struct snap *s)
{
	size_t n = gpo_optim_numel(opt);
	int i;

	memset(s, 0, sizeof(*s));
	s->nslots = gpo_optim_slot_count(opt);
	for (i = 0; i <= s->nslots; i++) {
		const char *name = i ? gpo_optim_slot_name(opt, i - 1) : "param";

		snprintf(s->names[i], 32, "%s", name);
		s->data[i] = malloc(n * 4);
		tu_poison(s->data[i], n);
		ck_assert_int_eq(gpo_optim_read(opt, name, NULL, s->data[i],
						n * 4), 0);
	}
	s->step = gpo_optim_steps_done(opt);
	ck_assert_int_eq(gpo_optim_get(opt, 0, "lr", &s->lr0), 0);
	ck_assert_int_eq(gpo_optim_get(opt, 1, "lr", &s->lr1), 0);
}

static void free_snap(struct snap *s)
{
	int i;

	for (i = 0; i <= s->nslots; i++)
		free(s->data[i]);
}

static void assert_snap_eq(const struct snap *a, const struct snap *b,
			   size_t n, const char *what)
{
	int i;

	ck_assert_msg(a->nslots == b->nslots, "%s: %d slots vs %d", what,
		      a->nslots, b->nslots);
	for (i = 0; i <= a->nslots; i++) {
		ck_assert_str_eq(a->names[i], b->names[i]);
		ck_assert_msg(!memcmp(a->data[i], b->data[i], n * 4),
			      "%s: %s differs", what, a->names[i]);
	}
	ck_assert_msg(a->step == b->step, "%s: step %llu vs %llu", what,
		      (unsigned long long)a->step,
		      (unsigned long long)b->step);
	ck_assert(a->lr0 == b->lr0 && a->lr1 == b->lr1);
}

static void run_steps(struct gpo_optim *opt, float *const *grads, int n)
{
	size_t bytes = gpo_optim_numel(opt) * 4;
	int i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, grads[i],
						 bytes), 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	}
}

/*
 * Save after some steps; go on RESUME_STEPS steps. Then perturb
 * everything, restore and take the same steps: the bytes must be those of
 * the uninterrupted run. Also into a fresh optimizer.
 */
static void round_trip(struct gpo_device *dev, const struct kind_case *kc,
		       uint64_t n, uint64_t *rng)
{
	struct gpo_optim *opt = make_opt(dev, kc, n), *fresh;
	float *grads[RESUME_STEPS + 8];
	struct snap want, got;
	char path[256];
	size_t numel = gpo_optim_numel(opt);
	int i;

	path_of(path, sizeof(path), "rt.safetensors");
	for (i = 0; i < RESUME_STEPS + kc->steps_before; i++) {
		grads[i] = malloc(numel * 4);
		tu_fill(grads[i], numel, rng, -1, 1);
	}
	cu_write_random(opt, "param", rng);
	run_steps(opt, grads, kc->steps_before);
	ck_assert_msg(!gpo_optim_save(opt, path, 0), "save on %s: %s",
		      tu_device_id(dev), gpo_errmsg());
	run_steps(opt, grads + kc->steps_before, RESUME_STEPS);
	take_snap(opt, &want);

	cu_write_random(opt, "param", rng);
	ck_assert_int_eq(gpo_optim_set(opt, -1, "lr", 0.5), 0);
	ck_assert_int_eq(gpo_optim_set_step(opt, 999), 0);
	ck_assert_msg(!gpo_optim_restore(opt, path, 0), "restore on %s: %s",
		      tu_device_id(dev), gpo_errmsg());
	run_steps(opt, grads + kc->steps_before, RESUME_STEPS);
	take_snap(opt, &got);
	assert_snap_eq(&want, &got, numel, gpo_optim_kind_name(kc->kind));
	free_snap(&got);

	fresh = make_opt(dev, kc, n);
	ck_assert_int_eq(gpo_optim_configure(fresh, -1, "lr=0.3"), 0);
	ck_assert_msg(!gpo_optim_restore(fresh, path, 0), "restore: %s",
		      gpo_errmsg());
	run_steps(fresh, grads + kc->steps_before, RESUME_STEPS);
	take_snap(fresh, &got);
	assert_snap_eq(&want, &got, numel, "fresh");
	free_snap(&got);
	free_snap(&want);
	gpo_optim_free(fresh);
	gpo_optim_free(opt);
	for (i = 0; i < RESUME_STEPS + kc->steps_before; i++)
		free(grads[i]);
}

START_TEST(test_ckpt_round_trip_then_steps_match_uninterrupted_every_device)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t rng = tu_rng("ckpt_round_trip");
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	size_t k;

	make_dir();
	for (d = 0; d < nd; d++)
		for (k = 0; k < ARRAY_SIZE(kinds); k++)
			round_trip(devs[d], &kinds[k], tu_quick() ? 500 : 20011,
				   &rng);
	remove_dir();
}
END_TEST

/* Saved on one device, restored on another: the same bytes. */
START_TEST(test_ckpt_restore_across_devices_is_byte_identical)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t rng = tu_rng("ckpt_cross");
	int nd = tu_devices(devs, TU_MAX_DEVICES), i, j;
	struct snap want, got;
	char path[256];

	make_dir();
	path_of(path, sizeof(path), "x.safetensors");
	for (i = 0; i < nd; i++) {
		struct gpo_optim *src = make_opt(devs[i], &kinds[0], 3001);
		float *g[2];
		size_t n = gpo_optim_numel(src);

		g[0] = malloc(n * 4);
		g[1] = malloc(n * 4);
		tu_fill(g[0], n, &rng, -1, 1);
		tu_fill(g[1], n, &rng, -1, 1);
		cu_write_random(src, "param", &rng);
		run_steps(src, g, 2);
		ck_assert_int_eq(gpo_optim_save(src, path, 0), 0);
		take_snap(src, &want);
		for (j = 0; j < nd; j++) {
			struct gpo_optim *dst = make_opt(devs[j], &kinds[0], 3001);

			ck_assert_msg(!gpo_optim_restore(dst, path, 0),
				      "%s -> %s: %s", tu_device_id(devs[i]),
				      tu_device_id(devs[j]), gpo_errmsg());
			take_snap(dst, &got);
			assert_snap_eq(&want, &got, n, tu_device_id(devs[j]));
			free_snap(&got);
			gpo_optim_free(dst);
		}
		free_snap(&want);
		free(g[0]);
		free(g[1]);
		gpo_optim_free(src);
	}
	remove_dir();
}
END_TEST

static struct gpo_device *cpu_dev(void)
{
	struct gpo_device *dev;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	return dev;
}

/* The file read back by hand: layout, names, values, metadata. */
START_TEST(test_ckpt_file_layout_is_safetensors_with_metadata)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 1000);
	uint64_t rng = tu_rng("ckpt_layout"), hlen = 0, begin, end;
	json_t *root, *meta, *e;
	json_error_t err;
	char path[256];
	size_t len, n = gpo_optim_numel(opt);
	float *w = malloc(n * 4);
	char *file;
	int i;

	make_dir();
	path_of(path, sizeof(path), "l.safetensors");
	cu_write_random(opt, "param", &rng);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	file = cu_slurp(path, &len);
	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | (unsigned char)file[i];
	ck_assert_uint_eq((8 + hlen) % 4096, 0);
	root = json_loadb(file + 8, hlen, 0, &err);
	ck_assert_ptr_nonnull(root);
	meta = json_object_get(root, "__metadata__");
	ck_assert_str_eq(json_string_value(json_object_get(meta, "format")), "pt");
	ck_assert_str_eq(json_string_value(json_object_get(meta,
					"gpuopt.optimizer")), "adamw");
	ck_assert_str_eq(json_string_value(json_object_get(meta,
					"gpuopt.step")), "0");
	/* param/b's bytes are where data_offsets say, equal to the device's */
	e = json_object_get(root, "param/b");
	ck_assert_str_eq(json_string_value(json_object_get(e, "dtype")), "F32");
	begin = json_integer_value(json_array_get(json_object_get(e,
						"data_offsets"), 0));
	end = json_integer_value(json_array_get(json_object_get(e,
						"data_offsets"), 1));
	ck_assert_uint_eq(end - begin, 12);
	ck_assert_int_eq(gpo_optim_read(opt, "param", "b", w, 12), 0);
	ck_assert(!memcmp(file + 8 + hlen + begin, w, 12));
	ck_assert_uint_eq(json_object_size(root), 1 + 3 * 4);
	json_decref(root);
	free(file);
	free(w);
	gpo_optim_free(opt);
	remove_dir();
}
END_TEST

static void save_tuned(struct gpo_optim *opt, const char *name,
		       unsigned int flags, struct ckpt_tuning tune,
		       char **file, size_t *len)
{
	char path[256];

	path_of(path, sizeof(path), name);
	gpo__ckpt_tune = tune;
	ck_assert_msg(!gpo_optim_save(opt, path, flags), "%s: %s", name,
		      gpo_errmsg());
	ck_assert_msg(!gpo_optim_restore(opt, path, flags), "%s: %s", name,
		      gpo_errmsg());
	memset(&gpo__ckpt_tune, 0, sizeof(gpo__ckpt_tune));
	*file = cu_slurp(path, len);
}

/*
 * O_DIRECT or not, many small chunks or one, registered buffers or not,
 * io_uring or the synchronous fallback: the same bytes.
 */
START_TEST(test_ckpt_io_paths_write_identical_files)
{
	static const struct ckpt_tuning tunes[] = {
		{ .chunk = 4096, .nbuf = 4 },
		{ .chunk = 8192, .nbuf = 1 },
		{ .chunk = 4096, .nbuf = 16, .no_fixed = 1 },
		{ .no_ring = 1 },
		{ .chunk = 4096, .nbuf = 3, .no_ring = 1 },
		{ .no_prealloc = 1 },
	};
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 30000);
	uint64_t rng = tu_rng("ckpt_io_paths");
	struct snap want, got;
	size_t len0, len;
	char *f0, *f;
	size_t i;

	make_dir();
	cu_write_random(opt, "param", &rng);
	cu_write_random(opt, "exp_avg", &rng);
	take_snap(opt, &want);
	save_tuned(opt, "d.st", 0, (struct ckpt_tuning){ 0 }, &f0, &len0);
	save_tuned(opt, "b.st", GPO_CKPT_BUFFERED, (struct ckpt_tuning){ 0 },
		   &f, &len);
	ck_assert(len == len0 && !memcmp(f, f0, len));
	free(f);
	for (i = 0; i < ARRAY_SIZE(tunes); i++) {
		save_tuned(opt, "t.st", i & 1 ? GPO_CKPT_BUFFERED : 0, tunes[i],
			   &f, &len);
		ck_assert_msg(len == len0 && !memcmp(f, f0, len), "tuning %zu",
			      i);
		free(f);
	}
	take_snap(opt, &got);
	assert_snap_eq(&want, &got, gpo_optim_numel(opt), "io paths");
	ck_assert_int_eq(count_files(), 3);
	free_snap(&want);
	free_snap(&got);
	free(f0);
	gpo_optim_free(opt);
	remove_dir();
}
END_TEST

static void flip_byte(const char *path, uint64_t off)
{
	unsigned char c;
	int fd = open(path, O_RDWR);

	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

START_TEST(test_ckpt_inspect_lists_and_verify_finds_the_bad_tensor)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 5000);
	uint64_t rng = tu_rng("ckpt_inspect");
	struct gpo_ckpt_tensor t;
	struct gpo_ckpt_info info;
	struct gpo_ckpt *ck;
	const char *k, *v;
	char path[256];
	int i, bad = -1;

	make_dir();
	path_of(path, sizeof(path), "i.st");
	cu_write_random(opt, "param", &rng);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	ck_assert_int_eq(gpo_ckpt_open(path, 0, &ck), 0);
	ck_assert_int_eq(gpo_ckpt_info(ck, &info), 0);
	ck_assert_int_eq(info.tensors, 12);
	ck_assert_int_eq(info.gpuopt, 1);
	ck_assert_uint_eq(info.data_offset % 4096, 0);
	ck_assert_int_eq(gpo_ckpt_metadata(ck, 0, &k, &v), 0);
	ck_assert_str_eq(k, "format");
	ck_assert_int_eq(gpo_ckpt_metadata(ck, info.metadata, &k, &v), -ENOENT);
	ck_assert_int_eq(gpo_ckpt_tensor(ck, 12, &t), -ENOENT);
	ck_assert_int_eq(gpo_ckpt_verify(ck), 0);
	for (i = 0; i < info.tensors; i++) {
		ck_assert_int_eq(gpo_ckpt_tensor(ck, i, &t), 0);
		ck_assert_int_eq(t.verified, 1);
		if (!strcmp(t.name, "state/v/exp_avg"))
			bad = i;
	}
	ck_assert_int_eq(gpo_ckpt_tensor(ck, 0, &t), 0);
	ck_assert_str_eq(t.name, "param/w");
	ck_assert_str_eq(t.dtype, "F32");
	ck_assert_int_eq(t.ndim, 2);
	ck_assert_uint_eq(t.shape[1], 37);
	gpo_ckpt_close(ck);

	ck_assert_int_ge(bad, 0);
	ck_assert_int_eq(gpo_ckpt_open(path, 0, &ck), 0);
	ck_assert_int_eq(gpo_ckpt_tensor(ck, bad, &t), 0);
	flip_byte(path, t.offset + t.bytes / 2);
	ck_assert_int_eq(gpo_ckpt_verify(ck), -EBADE);
	tu_check_errmsg("gpo_ckpt_verify");
	for (i = 0; i < info.tensors; i++) {
		ck_assert_int_eq(gpo_ckpt_tensor(ck, i, &t), 0);
		ck_assert_int_eq(t.verified, i == bad ? -EBADE : 1);
	}
	gpo_ckpt_close(ck);
	gpo_optim_free(opt);
	remove_dir();
}
END_TEST

START_TEST(test_ckpt_save_errors_leave_nothing_behind)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 100), *empty;
	char path[256];

	make_dir();
	path_of(path, sizeof(path), "no/such/dir/x.st");
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), -ENOENT);
	tu_check_errmsg("save into a missing directory");
	ck_assert_int_eq(gpo_optim_save(opt, dir, 0), -EISDIR);
	path_of(path, sizeof(path), "");
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), -EINVAL);
	path_of(path, sizeof(path), "ok.st");
	ck_assert_int_eq(gpo_optim_save(NULL, path, 0), -EINVAL);
	ck_assert_int_eq(gpo_optim_save(opt, NULL, 0), -EINVAL);
	ck_assert_int_eq(gpo_optim_save(opt, path, GPO_CKPT_FOREIGN), -EINVAL);
	ck_assert_int_eq(gpo_optim_new(cpu_dev(), GPO_SGD, &empty), 0);
	ck_assert_int_eq(gpo_optim_save(empty, path, 0), -EINVAL);
	gpo_optim_free(empty);
	ck_assert_int_eq(count_files(), 0);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	ck_assert_int_eq(count_files(), 1);
	ck_assert_int_eq(gpo_optim_restore(opt, dir, 0), -EISDIR);
	path_of(path, sizeof(path), "missing.st");
	ck_assert_int_eq(gpo_optim_restore(opt, path, 0), -ENOENT);
	ck_assert_int_eq(gpo_optim_restore(opt, path, 1u << 7), -EINVAL);
	gpo_optim_free(opt);
	remove_dir();
}
END_TEST

static void expect_mismatch(const char *path, const struct kind_case *kc,
			    uint64_t n, int add_group, int err)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), kc, n);
	uint64_t rng = tu_rng("ckpt_mismatch"), s[1] = { 9 };
	struct snap before, after;

	if (add_group)
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "extra", 1, s, 1), 0);
	cu_write_random(opt, "param", &rng);
	take_snap(opt, &before);
	ck_assert_int_eq(gpo_optim_restore(opt, path, 0), err);
	tu_check_errmsg("gpo_optim_restore");
	take_snap(opt, &after);
	assert_snap_eq(&before, &after, gpo_optim_numel(opt), "unchanged");
	free_snap(&before);
	free_snap(&after);
	gpo_optim_free(opt);
}

/* A sound file that does not fit: -EINVAL, and nothing changes. */
START_TEST(test_ckpt_restore_into_another_optimizer_is_einval)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 1000);
	struct kind_case other = kinds[0];
	char path[256];

	make_dir();
	path_of(path, sizeof(path), "m.st");
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	gpo_optim_free(opt);
	expect_mismatch(path, &kinds[2], 1000, 0, -EINVAL);	/* kind */
	expect_mismatch(path, &kinds[0], 2000, 0, -EINVAL);	/* shape */
	expect_mismatch(path, &kinds[0], 1000, 1, -EINVAL);	/* tensors */
	other.kind = GPO_ADAM;
	expect_mismatch(path, &other, 1000, 0, -EINVAL);
	remove_dir();
}
END_TEST

/* The schedule's state travels with the checkpoint, when there is one. */
START_TEST(test_ckpt_schedule_state_round_trips)
{
	struct gpo_optim *opt = make_opt(cpu_dev(), &kinds[0], 500), *fresh;
	uint64_t rng = tu_rng("ckpt_sched");
	struct gpo_sched *s1, *s2;
	float *g[6];
	struct snap want, got;
	char path[256];
	int i;

	if (gpo_sched_new("step", &s1) == -ENOSYS) {
		gpo_optim_free(opt);
		return;		/* schedules are not there yet */
	}
	ck_assert_int_eq(gpo_sched_configure(s1, "step_size=2 gamma=0.5"), 0);
	ck_assert_int_eq(gpo_sched_new("step", &s2), 0);
	ck_assert_int_eq(gpo_sched_configure(s2, "step_size=2 gamma=0.5"), 0);
	ck_assert_int_eq(gpo_optim_attach_sched(opt, s1), 0);
	for (i = 0; i < 6; i++) {
		g[i] = malloc(gpo_optim_numel(opt) * 4);
		tu_fill(g[i], gpo_optim_numel(opt), &rng, -1, 1);
	}
	make_dir();
	path_of(path, sizeof(path), "s.st");
	run_steps(opt, g, 3);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	run_steps(opt, g + 3, 3);
	take_snap(opt, &want);
	fresh = make_opt(cpu_dev(), &kinds[0], 500);
	ck_assert_int_eq(gpo_optim_attach_sched(fresh, s2), 0);
	ck_assert_msg(!gpo_optim_restore(fresh, path, 0), "%s", gpo_errmsg());
	ck_assert_uint_eq(gpo_sched_last_epoch(s2), 3);
	run_steps(fresh, g + 3, 3);
	take_snap(fresh, &got);
	assert_snap_eq(&want, &got, gpo_optim_numel(opt), "schedule");
	free_snap(&want);
	free_snap(&got);
	for (i = 0; i < 6; i++)
		free(g[i]);
	gpo_optim_free(fresh);
	gpo_optim_free(opt);
	gpo_sched_free(s1);
	gpo_sched_free(s2);
	remove_dir();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ckpt");
	TCase *tc = tcase_create("ckpt");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_ckpt_round_trip_then_steps_match_uninterrupted_every_device);
	tcase_add_test(tc, test_ckpt_restore_across_devices_is_byte_identical);
	tcase_add_test(tc, test_ckpt_file_layout_is_safetensors_with_metadata);
	tcase_add_test(tc, test_ckpt_io_paths_write_identical_files);
	tcase_add_test(tc, test_ckpt_inspect_lists_and_verify_finds_the_bad_tensor);
	tcase_add_test(tc, test_ckpt_save_errors_leave_nothing_behind);
	tcase_add_test(tc, test_ckpt_restore_into_another_optimizer_is_einval);
	tcase_add_test(tc, test_ckpt_schedule_state_round_trips);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
