/* SPDX-License-Identifier: MIT */
/*
 * gpuopt/data.h - datasets for training: Fashion-MNIST-style IDX files
 * (plain or gzip) and safetensors files, loaded whole into host memory as
 * f32 samples and int32 labels. Included by gpuopt.h.
 */
#ifndef GPUOPT_DATA_H
#define GPUOPT_DATA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An opened dataset: its training and evaluation samples. */
struct gpo_dataset;

/* the most classes a dataset may have (labels 0 .. GPO_DATASET_MAX_CLASSES-1) */
#define GPO_DATASET_MAX_CLASSES (1u << 24)

struct gpo_dataset_info {
	uint64_t train_samples;
	uint64_t eval_samples;
	uint32_t features;		/* a sample's values: 784 for 28x28 */
	uint32_t classes;		/* the largest label + 1 */
	int eval_held_out;		/* 1: evaluation is the last
					 * floor(N / 10) samples of the
					 * training file, kept out of training */
	const char *source;		/* the training data's file(s) */
	const char *eval_source;	/* the evaluation data's; both valid
					 * until gpo_dataset_free() */
	uint64_t host_bytes;		/* host memory the samples hold */
	int bytes;			/* a GPO_DATASET_BYTES dataset: the
					 * samples are bytes (features 1,
					 * classes 256) */
};

/*
 * gpo_dataset_open - load a dataset into host memory
 * @path:  one of
 *         - a directory holding train-images-idx3-ubyte and
 *           train-labels-idx1-ubyte (each plain or gzip, with or without
 *           ".gz"), and optionally t10k-images-idx3-ubyte and
 *           t10k-labels-idx1-ubyte, as Debian's dataset-fashion-mnist
 *           installs them in /usr/share/datasets/fashion-mnist;
 *         - "IMAGES,LABELS", a pair of IDX files (plain or gzip);
 *         - a safetensors file with tensors x (F32, or U8) [N, ...] and
 *           y (U8, I32 or I64) [N], and optionally x_test and y_test.
 * @flags: 0, or GPO_DATASET_BYTES: @path is any regular file, read as
 *         bytes (as they are: a gzip file is not decoded) for a
 *         byte-level language model (gpt models): its samples are the
 *         bytes, the last floor(N / 10) held out for evaluation
 *         (gpo_dataset_bytes()); an empty file is -EINVAL
 * @out:   set to the dataset on success
 *
 * Gzip is recognised by its magic bytes, not by the name. Images become
 * f32, row-major [samples, features] (the dimensions after the first
 * multiplied together); U8 values are divided by 255, nothing else is
 * done to them. Evaluation uses the test set (t10k files, x_test/y_test);
 * without one, the last floor(N / 10) samples of the file (none below 10
 * samples) are held out for it and the first N - floor(N / 10) train.
 *
 * Returns 0, or: -ENOENT a file is missing; -EACCES a file may not be
 * read; -EINVAL @path or @flags is invalid, a file is not a regular file,
 * or is truncated or corrupt (IDX magic, dimensions, counts that differ,
 * bytes after the end, a damaged gzip stream, a safetensors header,
 * dtype or shape, a negative or too large label, a non-finite f32
 * value); -ENOMEM out of memory; -EIO and other read errors. gpo_errmsg()
 * names the file and what is wrong with it.
 */
int gpo_dataset_open(const char *path, unsigned int flags,
		     struct gpo_dataset **out);

/*
 * gpo_dataset_open_limited - gpo_dataset_open() with a cap on the host
 * memory the samples may take
 * @max_bytes: the most bytes of samples and labels to hold (0: no cap)
 *
 * The sizes the files declare are checked against the files and against
 * @max_bytes before any memory of that size is allocated. Returns what
 * gpo_dataset_open() returns, and -EFBIG when the dataset needs more than
 * @max_bytes.
 */
int gpo_dataset_open_limited(const char *path, unsigned int flags,
			     uint64_t max_bytes, struct gpo_dataset **out);

/* gpo_dataset_free - free a dataset; NULL is ok */
void gpo_dataset_free(struct gpo_dataset *ds);

/* gpo_dataset_info - sizes and sources of a dataset; 0 or -EINVAL */
int gpo_dataset_info(const struct gpo_dataset *ds,
		     struct gpo_dataset_info *info);

/* gpo_dataset_open() flags */
#define GPO_DATASET_BYTES	(1u << 0)

/*
 * gpo_dataset_bytes - the bytes of one part of a GPO_DATASET_BYTES
 * dataset (@part as below): *@bytes and *@n (either may be NULL); valid
 * until gpo_dataset_free().
 * Returns 0, or -EINVAL (a NULL @ds, an unknown part, not a bytes
 * dataset).
 */
int gpo_dataset_bytes(const struct gpo_dataset *ds, int part,
		      const uint8_t **bytes, uint64_t *n);

/* the parts of a dataset, for gpo_dataset_samples() */
#define GPO_DATASET_TRAIN	0
#define GPO_DATASET_EVAL	1

/*
 * gpo_dataset_samples - the samples of one part of @ds, in host memory
 * @part: GPO_DATASET_TRAIN or GPO_DATASET_EVAL
 * @x:    set to the samples, f32 [n, features] row-major
 * @y:    set to the labels, [n], each in 0 .. classes - 1
 * @n:    set to the number of samples (0: an empty evaluation part)
 *
 * The arrays are the dataset's own, valid until gpo_dataset_free(); a
 * program copies batches out of them (gpo_tensor_write()). Any of @x, @y
 * and @n may be NULL. Returns 0, or -EINVAL for a NULL @ds, an unknown
 * @part or a bytes dataset (gpo_dataset_bytes()).
 */
int gpo_dataset_samples(const struct gpo_dataset *ds, int part,
			const float **x, const int32_t **y, uint64_t *n);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPT_DATA_H */
