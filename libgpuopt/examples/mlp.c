// SPDX-License-Identifier: MIT
/*
 * mlp.c - train a 784x256x10 MLP on Fashion-MNIST with the tensor API:
 * the model is written once as expressions, gpo_graph_backward() derives
 * its gradients, and each step writes a batch, runs the graph and steps
 * an SGD optimizer. Prints the training loss and accuracy as it goes and
 * the evaluation set's after each epoch.
 *
 *   mlp [-d DEVICE] [-e EPOCHS] [-s STEPS] [-b BATCH] [-l LR] [-p EVERY]
 *       [DATASET]
 *
 * DATASET defaults to /usr/share/datasets/fashion-mnist; DEVICE to
 * "best"; STEPS (0) caps the steps of the whole run.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gpuopt.h>

#define HIDDEN	256

static int fail(const char *what, int err)
{
	fprintf(stderr, "mlp: %s: %s (%s)\n", what, gpo_errmsg(),
		strerror(-err));
	return 1;
}

/* xorshift64*: the shuffles and the initial weights */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* torch.nn.Linear's initialisation: U(-1/sqrt(in), 1/sqrt(in)) */
static int init_param(struct gpo_optim *opt, const char *name, uint64_t n,
		      uint32_t fan_in, uint64_t *rng)
{
	float *v = malloc(n * sizeof(*v)), b = 1.0f / sqrtf((float)fan_in);
	uint64_t i;
	int ret;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		v[i] = b * (2.0f * (float)(rnd(rng) >> 40) / (1 << 24) - 1.0f);
	ret = gpo_optim_write(opt, "param", name, v, n * sizeof(*v));
	free(v);
	return ret;
}

int main(int argc, char **argv)
{
	const char *path = "/usr/share/datasets/fashion-mnist", *device = NULL;
	uint64_t epochs = 1, max_steps = 0, every = 100, batch = 100, step = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull, ntrain, neval, e, i, j, k;
	double lr = 0.1, sum_loss = 0, sum_acc = 0;
	struct gpo_tensor *x, *y, *w1, *b1, *w2, *b2, *logits, *loss, *acc;
	struct gpo_dataset_info info;
	struct gpo_dataset *ds = NULL;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL;
	struct gpo_graph *g = NULL;
	struct gpo_ctx *ctx;
	const float *tx, *ex;
	const int32_t *ty, *ey;
	uint32_t *order = NULL;
	float *xb = NULL, l, a;
	int32_t *yb = NULL;
	char cfg[64];
	int c, ret, status = 1;

	while ((c = getopt(argc, argv, "d:e:s:b:l:p:h")) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'e': epochs = strtoull(optarg, NULL, 10); break;
		case 's': max_steps = strtoull(optarg, NULL, 10); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'l': lr = strtod(optarg, NULL); break;
		case 'p': every = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-e EPOCHS] [-s STEPS] [-b BATCH] [-l LR] [-p EVERY] [DATASET]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		path = argv[optind];
	if (!batch || !every || !(lr > 0)) {
		fprintf(stderr, "mlp: the batch, -p and the learning rate must be positive\n");
		return 2;
	}

	ret = gpo_dataset_open(path, 0, &ds);
	if (ret)
		return fail(path, ret);
	gpo_dataset_info(ds, &info);
	gpo_dataset_samples(ds, GPO_DATASET_TRAIN, &tx, &ty, &ntrain);
	gpo_dataset_samples(ds, GPO_DATASET_EVAL, &ex, &ey, &neval);
	if (ntrain < batch) {
		fprintf(stderr, "mlp: %s: %llu training samples, fewer than a batch\n",
			path, (unsigned long long)ntrain);
		goto out_ds;
	}
	ret = gpo_ctx_new(&ctx, 0);
	if (ret) {
		fail("gpo_ctx_new", ret);
		goto out_ds;
	}
	ret = gpo_device_select(ctx, device ? device : "best", &dev);
	if (ret) {
		fail(device ? device : "best", ret);
		goto out_ctx;
	}

	/* the parameters live in the optimizer */
	ret = gpo_optim_new(dev, GPO_SGD, &opt);
	if (!ret)
		ret = gpo_optim_add_tensor(opt, "w1", 2, (uint64_t[]){
			info.features, HIDDEN }, 0);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(opt, "b1", 1, (uint64_t[]){ HIDDEN },
					   0);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(opt, "w2", 2, (uint64_t[]){
			HIDDEN, info.classes }, 0);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(opt, "b2", 1, (uint64_t[]){
			info.classes }, 0);
	snprintf(cfg, sizeof(cfg), "lr=%g", lr);
	if (ret >= 0)
		ret = gpo_optim_configure(opt, 0, cfg);
	if (!ret)
		ret = init_param(opt, "w1", (uint64_t)info.features * HIDDEN,
				 info.features, &rng);
	if (!ret)
		ret = init_param(opt, "b1", HIDDEN, info.features, &rng);
	if (!ret)
		ret = init_param(opt, "w2", (uint64_t)HIDDEN * info.classes,
				 HIDDEN, &rng);
	if (!ret)
		ret = init_param(opt, "b2", info.classes, HIDDEN, &rng);
	if (ret) {
		fail("optimizer", ret);
		goto out_opt;
	}

	/* the model, its loss and accuracy; backward derives the gradients */
	ret = gpo_graph_new(dev, &g);
	if (ret) {
		fail("gpo_graph_new", ret);
		goto out_opt;
	}
	x = gpo_tensor_input(g, "x", GPO_F32, 2,
			     (uint64_t[]){ batch, info.features });
	y = gpo_tensor_input(g, "y", GPO_I32, 1, (uint64_t[]){ batch });
	w1 = gpo_tensor_param(g, opt, "w1");
	b1 = gpo_tensor_param(g, opt, "b1");
	w2 = gpo_tensor_param(g, opt, "w2");
	b2 = gpo_tensor_param(g, opt, "b2");
	logits = gpo_add(g, gpo_matmul(g, gpo_relu(g, gpo_add(g,
			 gpo_matmul(g, x, w1, 0), b1)), w2, 0), b2);
	loss = gpo_cross_entropy(g, logits, y);
	acc = gpo_accuracy(g, logits, y);
	ret = gpo_graph_backward(g, loss);
	if (ret) {
		fail("building the model", ret);
		goto out_graph;
	}

	xb = malloc(batch * info.features * sizeof(*xb));
	yb = malloc(batch * sizeof(*yb));
	order = malloc(ntrain * sizeof(*order));
	if (!xb || !yb || !order) {
		fprintf(stderr, "mlp: out of memory\n");
		goto out_graph;
	}
	for (i = 0; i < ntrain; i++)
		order[i] = (uint32_t)i;

	for (e = 1; e <= epochs && (!max_steps || step < max_steps); e++) {
		double el = 0, ea = 0, tl = 0, ta = 0;
		uint64_t nb = 0, nt = 0;

		for (i = ntrain - 1; i > 0; i--) {	/* shuffle */
			uint32_t t;

			j = rnd(&rng) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i + batch <= ntrain; i += batch) {
			if (max_steps && step >= max_steps)
				break;
			for (k = 0; k < batch; k++) {
				memcpy(xb + k * info.features,
				       tx + (uint64_t)order[i + k] * info.features,
				       info.features * sizeof(*xb));
				yb[k] = ty[order[i + k]];
			}
			ret = gpo_tensor_write(x, xb, batch * info.features * 4);
			if (!ret)
				ret = gpo_tensor_write(y, yb, batch * 4);
			if (!ret)
				ret = gpo_graph_run(g, GPO_RUN_FORWARD |
						    GPO_RUN_BACKWARD);
			if (!ret)
				ret = gpo_optim_step(opt, NULL);
			if (!ret)
				ret = gpo_tensor_read(loss, &l, sizeof(l));
			if (!ret)
				ret = gpo_tensor_read(acc, &a, sizeof(a));
			if (ret) {
				fail("training step", ret);
				goto out_graph;
			}
			step++;
			nt++;
			tl += l;
			ta += a;
			sum_loss += l;
			sum_acc += a;
			if (step % every == 0) {
				printf("step %llu loss %.4f acc %.4f\n",
				       (unsigned long long)step,
				       sum_loss / every, sum_acc / every);
				fflush(stdout);
				sum_loss = sum_acc = 0;
			}
		}

		/* the evaluation set, whole batches, forward only */
		for (i = 0; i + batch <= neval; i += batch, nb++) {
			ret = gpo_tensor_write(x, ex + i * info.features,
					       batch * info.features * 4);
			if (!ret)
				ret = gpo_tensor_write(y, ey + i, batch * 4);
			if (!ret)
				ret = gpo_graph_run(g, GPO_RUN_FORWARD);
			if (!ret)
				ret = gpo_tensor_read(loss, &l, sizeof(l));
			if (!ret)
				ret = gpo_tensor_read(acc, &a, sizeof(a));
			if (ret) {
				fail("evaluation", ret);
				goto out_graph;
			}
			el += l;
			ea += a;
		}
		printf("epoch %llu step %llu loss %.4f acc %.4f",
		       (unsigned long long)e, (unsigned long long)step,
		       nt ? tl / nt : NAN, nt ? ta / nt : NAN);
		if (nb)
			printf(" eval_loss %.4f eval_acc %.4f", el / nb,
			       ea / nb);
		printf("\n");
		fflush(stdout);
	}
	status = 0;

out_graph:
	free(order);
	free(xb);
	free(yb);
	gpo_graph_free(g);
out_opt:
	gpo_optim_free(opt);
out_ctx:
	gpo_ctx_free(ctx);
out_ds:
	gpo_dataset_free(ds);
	return status;
}
