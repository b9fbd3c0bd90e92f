// SPDX-License-Identifier: MIT
/*
 * gpt.c - train a byte-level GPT-2 on a text file and print what it
 * writes: the model from a spec (gpo_model_new), the file as bytes
 * (GPO_DATASET_BYTES, its last tenth held out), each step on the device
 * (gpo_train_step), the held-out loss now and then (gpo_train_eval), and
 * a sample at the end (gpo_model_sample).
 *
 *   gpt [-d DEVICE] [-m SPEC] [-s STEPS] [-b BATCH] [-l LR] [-r DROPOUT]
 *       [-p EVERY] [-n BYTES] [-t TEMPERATURE] [-P PROMPT] [TEXT]
 *
 * TEXT defaults to /usr/share/common-licenses/GPL-3, DEVICE to "best",
 * SPEC to gpt:layers=2,heads=4,dim=64,ctx=64; the other defaults (1500
 * steps of 16 windows, AdamW at 3e-3, no dropout) train in about two
 * minutes on cpu:0 to a held-out loss near 2.1 nats a byte (a model of byte
 * frequencies alone sits near 3). TEMPERATURE 0 samples greedily.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gpuopt.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "gpt: %s: %s (%s)\n", what, gpo_errmsg(),
		strerror(-err));
	return 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* @n bytes of @s, the unprintable ones as '.' (a line break stays) */
static void print_text(const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		putchar(s[i] == '\n' || (s[i] >= 32 && s[i] < 127) ? s[i] :
			'.');
	putchar('\n');
}

int main(int argc, char **argv)
{
	const char *path = "/usr/share/common-licenses/GPL-3", *device = NULL;
	const char *spec = "gpt:layers=2,heads=4,dim=64,ctx=64";
	const char *prompt = "";
	uint64_t steps = 1500, batch = 16, every = 100, nsample = 300, i;
	double lr = 3e-3, dropout = 0, temperature = 0.8, t0;
	struct gpo_train_result res, ev;
	struct gpo_model_info mi;
	struct gpo_device_info di;
	struct gpo_dataset *ds = NULL;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL;
	struct gpo_model *m = NULL;
	struct gpo_train *t = NULL;
	struct gpo_ctx *ctx;
	unsigned char *text = NULL;
	char cfg[128];
	int c, ret, status = 1;

	while ((c = getopt(argc, argv, "d:m:s:b:l:r:p:n:t:P:h")) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'm': spec = optarg; break;
		case 's': steps = strtoull(optarg, NULL, 10); break;
		case 'b': batch = strtoull(optarg, NULL, 10); break;
		case 'l': lr = strtod(optarg, NULL); break;
		case 'r': dropout = strtod(optarg, NULL); break;
		case 'p': every = strtoull(optarg, NULL, 10); break;
		case 'n': nsample = strtoull(optarg, NULL, 10); break;
		case 't': temperature = strtod(optarg, NULL); break;
		case 'P': prompt = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-m SPEC] [-s STEPS] [-b BATCH] [-l LR] [-r DROPOUT] [-p EVERY] [-n BYTES] [-t TEMPERATURE] [-P PROMPT] [TEXT]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		path = argv[optind];
	if (!batch || !every || !(lr > 0)) {
		fprintf(stderr, "gpt: the batch, -p and the learning rate must be positive\n");
		return 2;
	}

	ret = gpo_dataset_open(path, GPO_DATASET_BYTES, &ds);
	if (ret)
		return fail(path, ret);
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

	/* the model's parameters live in its optimizer */
	snprintf(cfg, sizeof(cfg), "lr=%g weight_decay=0.01", lr);
	ret = gpo_optim_new(dev, GPO_ADAMW, &opt);
	if (!ret)
		ret = gpo_optim_configure(opt, 0, cfg);
	if (ret) {
		fail("optimizer", ret);
		goto out_ctx;
	}
	snprintf(cfg, sizeof(cfg), "dropout=%g seed=1", dropout);
	ret = gpo_model_new(opt, spec, cfg, &m);
	if (ret) {
		fail(spec, ret);
		goto out_opt;
	}
	snprintf(cfg, sizeof(cfg), "batch_size=%llu seed=1",
		 (unsigned long long)batch);
	ret = gpo_train_new(m, ds, cfg, &t);
	if (ret) {
		fail("trainer", ret);
		goto out_model;
	}
	gpo_model_info(m, &mi);
	gpo_device_info(ctx, gpo_device_index(dev), &di);
	printf("%s on %s: %llu parameters, %llu steps of %llu windows of %u bytes\n",
	       spec, di.id, (unsigned long long)mi.params,
	       (unsigned long long)steps, (unsigned long long)batch, mi.ctx);
	fflush(stdout);

	t0 = now();
	for (i = 1; i <= steps; i++) {
		int report = i % every == 0 || i == steps;

		ret = gpo_train_step(t, report ? &res : NULL);
		if (ret) {
			fail("training step", ret);
			goto out_train;
		}
		if (!report)
			continue;
		printf("step %llu loss %.4f acc %.4f tokens/s %.0f",
		       (unsigned long long)i, res.loss, res.accuracy,
		       res.tokens / (now() - t0));
		ret = gpo_train_eval(t, &ev);
		if (!ret)
			printf(" eval_loss %.4f eval_acc %.4f", ev.loss,
			       ev.accuracy);
		else if (ret != -ENODATA) {
			printf("\n");
			fail("evaluation", ret);
			goto out_train;
		}
		printf("\n");
		fflush(stdout);
	}

	text = malloc(nsample ? nsample : 1);
	if (!text) {
		fprintf(stderr, "gpt: out of memory\n");
		goto out_train;
	}
	ret = gpo_model_sample(m, prompt, strlen(prompt), temperature, 1,
			       text, nsample);
	if (ret) {
		fail("sampling", ret);
		goto out_train;
	}
	printf("sample (temperature %g):\n%s", temperature, prompt);
	print_text(text, nsample);
	status = 0;

out_train:
	free(text);
	gpo_train_free(t);
out_model:
	gpo_model_free(m);
out_opt:
	gpo_optim_free(opt);
out_ctx:
	gpo_ctx_free(ctx);
out_ds:
	gpo_dataset_free(ds);
	return status;
}
