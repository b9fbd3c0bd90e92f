/* SPDX-License-Identifier: MIT */
/*
 * gpuopt/train.h - models from a spec, and training them on a dataset
 * entirely on the device (included by gpuopt.h)
 *
 *	gpo_optim_new(dev, GPO_ADAMW, &opt);
 *	gpo_model_new(opt, "mlp:784x256x10", "activation=relu seed=1", &m);
 *	gpo_dataset_open("/usr/share/datasets/fashion-mnist", 0, &ds);
 *	gpo_train_new(m, ds, "batch_size=64", &t);
 *	for (i = 0; i < steps; i++)
 *		gpo_train_step(t, i % 100 ? NULL : &res);
 *	gpo_train_eval(t, &res);
 *
 * A step loads its batch on the device (the dataset is copied there
 * once), runs forward, loss, backward and the optimizer, and waits for
 * nothing unless its result is asked for. The data position is the
 * optimizer's step count (done plus skipped), so a checkpoint restored
 * with gpo_optim_restore() resumes the data where it was.
 */
#ifndef GPUOPT_TRAIN_H
#define GPUOPT_TRAIN_H

#ifdef __cplusplus
extern "C" {
#endif

struct gpo_model;
struct gpo_train;

/*
 * gpo_model_new - a model whose parameters become tensors of @opt
 * @opt:  an optimizer with no tensors yet, on the device to train on
 * @spec: "mlp:IN[xHIDDEN...]xOUT", e.g. "mlp:784x256x10", or
 *        "gpt:layers=L,heads=H,dim=D,ctx=T": a byte-level GPT-2 (below)
 * @opts: space-separated key=value settings, or NULL:
 *        activation=relu|gelu|gelu_tanh|tanh|sigmoid (relu; mlp)
 *        loss=xent|mse (xent; mse compares the outputs with one-hot
 *        labels; mlp)
 *        dropout=P (0; gpt): dropout after the embeddings, on the
 *        attention weights and on each residual branch, as GPT-2
 *        seed=N (0): the initial parameters' random numbers (and the
 *        dropout masks')
 *
 * The parameters are fc0.weight [H, IN], fc0.bias [H], fc1.weight, ... in
 * torch.nn.Linear's layout and initialisation (uniform in +-1/sqrt(IN)),
 * drawn from (seed, tensor, element).
 *
 * A gpt model is GPT-2's architecture over a vocabulary of the 256 byte
 * values: token and position embeddings wte.weight [256, D] and
 * wpe.weight [T, D]; L pre-LN blocks h.<l>. of ln_1 (.weight, .bias [D]),
 * causal self-attention with H heads (attn.c_attn.weight [D, 3D],
 * .bias [3D], attn.c_proj.weight [D, D], .bias [D]), ln_2, and an MLP
 * (mlp.c_fc.weight [D, 4D], .bias [4D], GELU in its tanh form,
 * mlp.c_proj.weight [4D, D], .bias [D]); then ln_f and the output head,
 * tied to wte. Weights are in GPT-2's (Conv1D) layout [in, out] and
 * initialisation: normal(0, 0.02), the c_proj weights normal(0, 0.02 /
 * sqrt(2L)), biases 0, layer norms 1 and 0. D must be a multiple of H.
 * Its input is [B, T] i32 bytes, its output [B * T, 256] logits.
 *
 * Their memory is taken from the pool
 * before anything is written. Returns 0; -EINVAL (a bad spec or setting,
 * @opt has tensors), -ENOMEM (the pool), -ENOSYS (an optimizer that is
 * not f32).
 */
int gpo_model_new(struct gpo_optim *opt, const char *spec, const char *opts,
		  struct gpo_model **out);

/* gpo_model_free - free @m (not its optimizer); NULL: nothing */
void gpo_model_free(struct gpo_model *m);

struct gpo_model_info {
	uint32_t inputs;	/* features a sample has (gpt: ctx) */
	uint32_t outputs;	/* classes (gpt: 256) */
	uint32_t layers;
	uint64_t params;	/* parameters in all */
	uint32_t ctx;		/* gpt: the context length T; mlp: 0 */
	uint32_t heads;		/* gpt: H; mlp: 0 */
	uint32_t dim;		/* gpt: D; mlp: 0 */
};

int gpo_model_info(const struct gpo_model *m, struct gpo_model_info *info);

/*
 * gpo_model_forward - the model's outputs for input @x in graph @g, for C
 * programs that build on a model: mlp: x [rows, inputs] f32 gives
 * [rows, outputs]; gpt: x [B, S] i32, S <= ctx, gives [B * S, 256]
 * (with the model's dropout: the training form)
 */
struct gpo_tensor *gpo_model_forward(struct gpo_model *m, struct gpo_graph *g,
				     struct gpo_tensor *x);

/*
 * gpo_model_sample - generate @n bytes after @prompt with a gpt model
 * @prompt: @len bytes to continue (len 0: from a single '\n'); each byte
 *          is predicted from the last ctx bytes of the prompt and of
 *          what was generated so far
 * @temperature: 0 picks the likeliest byte each time (greedy, the first
 *          on ties); above 0 draws byte i from softmax(logits /
 *          temperature) with (@seed, i)
 * @out:    @n bytes
 * The first call builds and plans a graph of one sequence (no dropout),
 * kept with the model; calls on one model must not run concurrently.
 * Returns 0; -EINVAL (not a gpt model, a bad argument), -ENOMEM, or the
 * device's errors.
 */
int gpo_model_sample(struct gpo_model *m, const void *prompt, size_t len,
		     double temperature, uint64_t seed, void *out, size_t n);

/*
 * gpo_train_new - train @m on @ds
 * @opts: space-separated key=value settings, or NULL:
 *        batch_size=N (64), shuffle=0|1 (1: a new order each epoch from
 *        (seed, epoch); 0: batch k is samples [kB, (k+1)B), the last
 *        partial batch dropped), seed=N (0), eval_batch=N (1000; gpt:
 *        batch_size), matmul=f32|f16 (f32; f16: every product of the
 *        model's graphs one of binary16 operands summed in f32, on
 *        tensor cores where the device has them:
 *        gpo_graph_set_matmul_f16())
 *
 * A gpt model trains on a bytes dataset (GPO_DATASET_BYTES), and only a
 * gpt does: its samples are the windows of T + 1 bytes (T = ctx)
 * starting at multiples of T (window s: inputs bytes [s T, s T + T),
 * targets one byte later), ordered per epoch as above. With shuffle=1
 * the windows also shift by a phase 0..P drawn from (seed, epoch), P =
 * min(T - 1, N - 1 - T) for N training bytes; there are
 * floor((N - 1 - P) / T) windows (P = 0 with shuffle=0), so that every
 * phase has them all. The evaluation part is the held-out tail, in
 * windows from its start (none when it is shorter than T + 1 bytes:
 * gpo_train_eval() says -ENODATA). Loss and accuracy are per byte.
 *
 * The dataset is copied to the device (x in f32, labels in i32; a gpt's
 * bytes as i32) when it fits the pool, else each batch is copied from
 * host memory.
 * Returns 0; -EINVAL (a bad setting; the dataset's width differs from the
 * model's inputs; a label the model has no output for; batch_size 0 or
 * more than the training samples or windows; a gpt and a dataset that is
 * not bytes, or the other way round; fewer than ctx + 1 training bytes),
 * -ENOMEM, -ENOSYS.
 */
int gpo_train_new(struct gpo_model *m, struct gpo_dataset *ds,
		  const char *opts, struct gpo_train **out);

/* gpo_train_free - free @t (not its model or dataset); NULL: nothing */
void gpo_train_free(struct gpo_train *t);

struct gpo_train_result {
	double loss;		/* the batch's mean loss (eval: the set's) */
	double accuracy;	/* fraction correct, 0..1 */
	uint64_t step;		/* optimizer steps done */
	uint64_t epoch;		/* the epoch the next batch is from */
	uint64_t samples;	/* samples trained on so far (eval: in the set) */
	double grad_norm;	/* the gradient norm when clipping; else NaN */
	double lr;
	int skipped;		/* the step had non-finite gradients */
	uint64_t tokens;	/* gpt: bytes predicted so far (eval: in
				 * the set); mlp: 0 */
	double loss_scale;	/* the loss scale after the step (1: off) */
};

/*
 * gpo_train_step - one step on the next batch
 * @res: NULL to queue the step and return at once; else the step's loss
 *       and accuracy are read back (which waits for it)
 * Returns 0 or -errno (the device's errors).
 */
int gpo_train_step(struct gpo_train *t, struct gpo_train_result *res);

/*
 * gpo_train_eval - the mean loss and accuracy over the evaluation part
 * (the test set, or the held-out tail). Returns 0, -ENODATA (the dataset
 * has none), or -errno.
 */
int gpo_train_eval(struct gpo_train *t, struct gpo_train_result *res);

/* gpo_train_steps_per_epoch - full batches in the training part */
uint64_t gpo_train_steps_per_epoch(const struct gpo_train *t);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPT_TRAIN_H */
