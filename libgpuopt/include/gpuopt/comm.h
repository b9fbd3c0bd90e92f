/* SPDX-License-Identifier: MIT */
/*
 * gpuopt/comm.h - data-parallel training over MPI (libgpuopt-mpi, built
 * with `make MPI=1`; not included by gpuopt.h: the plain library never
 * links MPI)
 *
 *	MPI_Init(&argc, &argv);
 *	gpo_comm_new(NULL, "shards=4", &c);
 *	gpo_comm_device(c, ctx, "cpu", &dev);	(rank modulo local devices)
 *	... gpo_optim_new(dev, ...), gpo_model_new(), gpo_train_new()
 *	gpo_comm_train_attach(c, t);
 *	gpo_train_step(t, &res);		(same bits on every rank)
 *
 * Deterministic reduction (deterministic=1, the default): the global
 * batch of B rows is cut into S micro-shards of B / S rows (S = shards=,
 * default the rank count; a multiple of it). Rank r of N runs shards
 * [r S / N, (r + 1) S / N) one after another, forward and backward each,
 * and keeps each shard's gradient (the mean over its rows) in pinned host
 * memory. The flat gradient is then reduced in buckets of bucket_bytes=:
 * each rank owns a slice of every bucket's elements; an all-to-all gives
 * it the slice of all S shard gradients, it sums them in f32 in shard
 * order 0, 1, ..., S - 1 and divides by S, and an all-gather gives every
 * rank the whole bucket, which is written back to the optimizer's
 * gradient. One process with the same S does exactly the same float
 * operations, so N ranks give the same bits as one. The batch's loss and
 * accuracy are the shards' summed in shard order, over S.
 *
 * A rank with two or more shards sends each one before its last to the
 * slices' owners (an MPI_Ialltoallv) while the next one computes, tested
 * by a progress thread where MPI was initialised with
 * MPI_THREAD_SERIALIZED or more; the sums and the bits are the same.
 * With overlap=1 (the default) the last shard's backward runs in
 * segments, each ending where backward has finished the gradients of one
 * or more buckets, and those buckets are read back and their collectives
 * posted while the device computes the next segment (the last layer's
 * buckets first); the bits are the same again.
 */
#ifndef GPUOPT_COMM_H
#define GPUOPT_COMM_H

#include <gpuopt.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpo_comm;
struct gpo_train;

/*
 * gpo_comm_new - a communicator over the ranks of an MPI communicator
 * @mpi_comm: a pointer to an MPI_Comm (duplicated), NULL: MPI_COMM_WORLD;
 *            MPI must be initialised (MPI_THREAD_FUNNELED at least)
 * @opts:     key=value words, or NULL: shards=S (the rank count),
 *            deterministic=0|1 (1; 0: each rank sums its shards and
 *            MPI_Iallreduce(MPI_SUM) adds the ranks' sums, in an order
 *            MPI chooses), bucket_bytes=N (4194304: 4096..1073741824, a
 *            multiple of 4), max_ranks=N (1024), timeout=SECONDS (300;
 *            0: none): the longest wait on the other ranks in a
 *            reduction, after which it fails with -ETIMEDOUT (a rank
 *            died or hangs); after any failure of a reduction the
 *            communicator is unusable and the caller should MPI_Abort(),
 *            zero=0|1 (0; 1: ZeRO-1, below),
 *            overlap=0|1 (1; 0: the last shard's backward in one piece,
 *            its buckets reduced after it)
 * Collective. Returns 0; -EINVAL (a bad key or value; S not a multiple
 * of the rank count; more ranks than max_ranks), -ENOMEM, -EIO (MPI).
 */
int gpo_comm_new(const void *mpi_comm, const char *opts,
		 struct gpo_comm **out);

/* gpo_comm_free - free @c (collective); NULL: nothing */
void gpo_comm_free(struct gpo_comm *c);

int gpo_comm_rank(const struct gpo_comm *c);
int gpo_comm_size(const struct gpo_comm *c);

/*
 * gpo_comm_device - this rank's device
 * @spec: "a,b,c": rank r takes item r modulo the count; a backend name
 *        ("cpu", "opencl", "vulkan"): its device number (local rank
 *        modulo its devices), the local rank being the rank among those
 *        on the same host; anything else as gpo_device_select() takes it
 * Returns 0 or gpo_device_select()'s errors.
 */
int gpo_comm_device(struct gpo_comm *c, struct gpo_ctx *ctx, const char *spec,
		    struct gpo_device **out);

/*
 * gpo_comm_train_attach - make @t's steps data-parallel over @c
 * @t's batch_size is the global batch: it must be a multiple of shards.
 * Every later gpo_train_step() is collective: each rank runs its shards,
 * the gradient is reduced as above, and the optimizer steps with the
 * same gradient on every rank. @c must outlive @t's steps.
 * Returns 0; -EINVAL (batch_size not a multiple of shards, an optimizer
 * whose grad buffer is not f32 or is bound), -ENOMEM.
 */
int gpo_comm_train_attach(struct gpo_comm *c, struct gpo_train *t);

/*
 * gpo_comm_optim_attach, gpo_comm_shard_done, gpo_comm_reduce - the same
 * reduction for a program that computes its own gradients in @opt's grad
 * buffer (gpo_comm_train_attach() attaches the model's optimizer so):
 * for each of this rank's shards (gpo_comm_shards(): [lo, hi) of
 * shards), in order, write the shard's gradient and call
 * gpo_comm_shard_done() (copied at once, or for the last one during the
 * reduction, so leave it until then); then gpo_comm_reduce() (collective)
 * leaves the mean of all shards' gradients in every rank's grad buffer.
 * Returns 0; -EINVAL (not attached, a shard not this rank's, an
 * optimizer without tensors or whose grad is not its own f32 buffer),
 * -ENOMEM, a device error.
 */
int gpo_comm_optim_attach(struct gpo_comm *c, struct gpo_optim *opt);
int gpo_comm_shard_done(struct gpo_comm *c, uint32_t shard);
int gpo_comm_reduce(struct gpo_comm *c);
int gpo_comm_shards(const struct gpo_comm *c, uint32_t *shards, uint32_t *lo,
		    uint32_t *hi);

/*
 * ZeRO-1 (zero=1, deterministic=1, attached with gpo_comm_train_attach()):
 * rank q owns a contiguous range of about 1/N of the flat parameters; it
 * sums only those elements of each bucket and steps them in an optimizer
 * of its own (the model's kind and hyperparameters, its param and grad
 * views of the model optimizer's, its state copied from the model's when
 * attached), and an all-gather gives every rank all the parameters: the
 * same bits as plain data parallel for the elementwise optimizers.
 * -ENOSYS: more than one group, a schedule, lamb, clip_norm, grad_scale
 * or check_finite. The model optimizer's state slots are freed (a rank
 * keeps 1/N of the state on its device): gpo_comm_sync_state()
 * (collective) allocates them again and gathers the ranks' state into
 * them, before a checkpoint is saved (any rank count restores it); the
 * next step frees them again. A save without it, and a restore into the
 * model's optimizer once attached, fail with -EBUSY.
 */
int gpo_comm_sync_state(struct gpo_comm *c);

struct gpo_comm_stats {
	uint64_t reductions;	/* gradient reductions done */
	uint64_t bytes;		/* gradient bytes reduced (per reduction:
				 * the flat gradient) */
	uint64_t d2h_ns;	/* device to host copies of shard gradients */
	uint64_t reduce_ns;	/* the whole reduction (stages overlapped) */
	uint64_t wait_ns;	/* of which waiting on MPI */
	/*
	 * the step's communication: the time the training thread spent in
	 * it (shard gradients to the host, packing, the reduction) plus
	 * @hidden_ns, the time collectives were in flight while it computed
	 * (a rank's shards before its last are sent while the next one
	 * computes, when it runs two or more)
	 */
	uint64_t comm_ns;
	uint64_t hidden_ns;
	/*
	 * overlap=1: the segments the last shard's backward ran in (each
	 * ends where it has finished buckets), and the buckets whose
	 * reduction started before that backward ended; their collectives'
	 * time while it computed counts in @hidden_ns
	 */
	uint64_t segments;
	uint64_t early_buckets;
};

/* gpo_comm_stats - what @c did so far */
int gpo_comm_stats(const struct gpo_comm *c, struct gpo_comm_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPT_COMM_H */
