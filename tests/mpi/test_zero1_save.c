// SPDX-License-Identifier: MIT
/*
 * test_zero1_save.c - ZeRO-1's state around a checkpoint, through the C
 * API, under mpirun -np N (N >= 2): once attached with zero=1 the model's
 * optimizer keeps no state, so a save is refused (-EBUSY, naming
 * gpo_comm_sync_state()) and so is a restore (the shard optimizers took
 * the state); gpo_comm_sync_state() brings the slots back (the pool holds
 * more), rank 0's save then works and holds every rank's state, which a
 * restore into a plain optimizer reads back, bit for bit what the ranks'
 * shard optimizers hold; the next step frees the slots again.
 *
 *   mpirun -np N test_zero1_save DEVICE DATA.safetensors CKPT_PATH
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <gpuopt.h>
#include <gpuopt/comm.h>

static int rank;

static int bad(const char *what)
{
	fprintf(stderr, "test_zero1_save: rank %d: %s (%s)\n", rank, what,
		gpo_errmsg());
	return 1;
}

static uint64_t used(struct gpo_device *dev)
{
	struct gpo_pool_stats ps;

	return gpo_pool_stats(dev, &ps) ? 0 : ps.used_bytes;
}

static int run(const char *devid, const char *data, const char *path)
{
	struct gpo_ctx *ctx = NULL;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL, *plain = NULL;
	struct gpo_model *m = NULL, *pm = NULL;
	struct gpo_dataset *ds = NULL;
	struct gpo_train *t = NULL;
	struct gpo_comm *c = NULL;
	struct gpo_train_result res;
	uint64_t u_attached, u_synced, u_after, n, i;
	float *a = NULL, *b = NULL;
	int ret, err = 1, s;
	static const char *const slots[] = { "exp_avg", "exp_avg_sq" };

	if (gpo_ctx_new(&ctx, 0))
		return bad("context");
	if (gpo_comm_new(NULL, "shards=6 zero=1 bucket_bytes=4096", &c))
		return bad("gpo_comm_new");
	if (gpo_comm_device(c, ctx, devid, &dev))
		goto out;
	if (gpo_dataset_open(data, 0, &ds) ||
	    gpo_optim_new(dev, GPO_ADAMW, &opt) ||
	    gpo_model_new(opt, "mlp:37x64x7", "seed=3", &m) ||
	    gpo_optim_configure(opt, -1, "lr=0.01 weight_decay=0.01") ||
	    gpo_train_new(m, ds, "batch_size=48", &t) ||
	    gpo_comm_train_attach(c, t)) {
		bad("setup");
		goto out;
	}
	u_attached = used(dev);
	for (i = 0; i < 3; i++)
		if (gpo_train_step(t, &res)) {
			bad("a step");
			goto out;
		}
	ret = gpo_optim_save(opt, path, 0);
	if (ret != -EBUSY || !strstr(gpo_errmsg(), "gpo_comm_sync_state")) {
		fprintf(stderr, "test_zero1_save: rank %d: a save without the state: %d (%s), want -EBUSY\n",
			rank, ret, gpo_errmsg());
		goto out;
	}
	if (gpo_comm_sync_state(c)) {
		bad("gpo_comm_sync_state");
		goto out;
	}
	u_synced = used(dev);
	if (u_synced <= u_attached) {
		fprintf(stderr, "test_zero1_save: rank %d: the pool holds %" PRIu64 " bytes with the state back, %" PRIu64 " without\n",
			rank, u_synced, u_attached);
		goto out;
	}
	if (rank == 0 && gpo_optim_save(opt, path, 0)) {
		bad("the save after gpo_comm_sync_state()");
		goto out;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	ret = gpo_optim_restore(opt, path, 0);
	if (ret != -EBUSY) {
		fprintf(stderr, "test_zero1_save: rank %d: a restore while attached: %d (%s), want -EBUSY\n",
			rank, ret, gpo_errmsg());
		goto out;
	}
	/* the file's state is what the model's slots hold now: all ranks' */
	n = 0;
	for (i = 0; (int)i < gpo_optim_tensor_count(opt); i++) {
		struct gpo_tensor_info ti;

		if (!gpo_optim_tensor_info(opt, (int)i, &ti))
			n += ti.numel;
	}
	a = malloc(n * 4);
	b = malloc(n * 4);
	if (!a || !b || gpo_optim_new(dev, GPO_ADAMW, &plain) ||
	    gpo_model_new(plain, "mlp:37x64x7", "seed=9", &pm) ||
	    gpo_optim_restore(plain, path, 0)) {
		bad("a plain optimizer restoring the save");
		goto out;
	}
	for (s = 0; s < 2; s++) {
		memset(a, 0xa5, n * 4);
		memset(b, 0x5a, n * 4);
		if (gpo_optim_read(opt, slots[s], NULL, a, n * 4) ||
		    gpo_optim_read(plain, slots[s], NULL, b, n * 4)) {
			bad(slots[s]);
			goto out;
		}
		if (memcmp(a, b, n * 4)) {
			fprintf(stderr, "test_zero1_save: rank %d: %s restored differs from the gathered state\n",
				rank, slots[s]);
			goto out;
		}
		for (i = 0; i < n && a[i] == 0; i++)
			;
		if (i == n) {
			fprintf(stderr, "test_zero1_save: rank %d: %s is all zeros after 3 steps\n",
				rank, slots[s]);
			goto out;
		}
	}
	/* (the plain optimizer's buffers are in the same pool) */
	gpo_model_free(pm);
	gpo_optim_free(plain);
	pm = NULL;
	plain = NULL;
	if (gpo_train_step(t, &res)) {
		bad("the step after the save");
		goto out;
	}
	u_after = used(dev);
	if (u_after >= u_synced) {
		fprintf(stderr, "test_zero1_save: rank %d: the pool holds %" PRIu64 " bytes after the next step, %" PRIu64 " with the state back\n",
			rank, u_after, u_synced);
		goto out;
	}
	if (gpo_optim_save(opt, path, 0) != -EBUSY) {
		fprintf(stderr, "test_zero1_save: rank %d: a save after the next step was not refused\n",
			rank);
		goto out;
	}
	printf("pool bytes: %" PRIu64 " attached, %" PRIu64 " with the state gathered, %" PRIu64 " after the next step\n",
	       u_attached, u_synced, u_after);
	err = 0;
out:
	free(a);
	free(b);
	gpo_model_free(pm);
	gpo_optim_free(plain);
	gpo_train_free(t);
	gpo_model_free(m);
	gpo_optim_free(opt);
	gpo_dataset_free(ds);
	gpo_comm_free(c);
	gpo_ctx_free(ctx);
	return err;
}

int main(int argc, char **argv)
{
	int provided, err, any = 0;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc != 4) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np N test_zero1_save DEVICE DATA CKPT\n");
		MPI_Finalize();
		return 2;
	}
	err = run(argv[1], argv[2], argv[3]);
	MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Finalize();
	return any;
}
