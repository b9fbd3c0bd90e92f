// SPDX-License-Identifier: MIT
/*
 * optim.c - optimizer objects over flat device state, and the step
 * pipeline: (unscale + non-finite check) -> (global-norm clip) -> update.
 *
 * Layout: tensors of a group are contiguous; each group starts at a
 * multiple of GROUP_ALIGN elements so that a group's view of a buffer is
 * float4-aligned and a valid Vulkan descriptor offset. The padding between
 * groups is zero in every buffer and no kernel writes it.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "optim/family_i.h"
#include "abi/mem.h"
#include "abi/norm.h"
#include "abi/objective.h"

/* half-precision parameters (their block is before the step's) */
static int check_param(struct gpo_optim *opt, const char *what, int slots);
static int alloc_master(struct gpo_optim *opt);
static int master_sync(struct gpo_optim *opt, const char *slot,
		       const char *tensor, const void *src, size_t bytes);

/* norm groups per run of the partial-sum pass (launch_norm) */
#define NORM_RUN	32
/*
 * up to this many elements the norm pass is one launch of one group
 * (norm_small): a dispatch and a barrier fewer, which is most of a small
 * step's norm pass on a GPU
 */
#define NORM_SMALL_MAX	16384

const char *const gpo__optim_slot_names[SL_COUNT] = {
	[SL_MOMENTUM] = "momentum_buffer",
	[SL_EXP_AVG] = "exp_avg",
	[SL_EXP_AVG_SQ] = "exp_avg_sq",
	[SL_MAX_EXP_AVG_SQ] = "max_exp_avg_sq",
	[SL_SQUARE_AVG] = "square_avg",
	[SL_GRAD_AVG] = "grad_avg",
	[SL_SUM] = "sum",
};

int gpo_optim_new(struct gpo_device *dev, enum gpo_optim_kind kind,
		  struct gpo_optim **out)
{
	struct gpo_optim *opt;

	if (!dev || !out || (unsigned int)kind >= GPO_OPTIM_KINDS)
		return gpo__err(-EINVAL, "gpo_optim_new: bad arguments");
	opt = calloc(1, sizeof(*opt));
	if (!opt)
		return gpo__err(-ENOMEM, "out of memory");
	opt->groups = calloc(1, sizeof(*opt->groups));
	if (!opt->groups) {
		free(opt);
		return gpo__err(-ENOMEM, "out of memory");
	}
	opt->dev = dev;
	opt->kind = kind;
	opt->fam = gpo__optim_family(kind);
	opt->ngroups = 1;
	opt->metric = NAN;
	opt->last.grad_norm = NAN;
	gpo__hparams_defaults(kind, &opt->groups[0].hp);
	*out = opt;
	return 0;
}

static int layout(struct gpo_optim *opt);

/* a bound buffer is the caller's: only its view goes */
static void free_flat(struct gpo_optim *opt, int which, struct dev_buf *buf)
{
	if (opt->ext[which])
		memset(buf, 0, sizeof(*buf));
	else
		gpo__pool_free(opt->dev, buf);
}

static void free_buffers(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	int i;

	if (opt->graph)
		dev->ops->graph_free(dev, opt->graph);
	opt->graph = NULL;
	opt->scal_host = NULL;
	free_flat(opt, 0, &opt->param);
	free_flat(opt, 1, &opt->grad);
	gpo__pool_free(dev, &opt->master);
	for (i = 0; i < SL_COUNT; i++) {
		gpo__pool_free(dev, &opt->slot[i]);
		gpo__pool_free(dev, &opt->absmax[i]);
	}
	gpo__pool_free(dev, &opt->scal);
	gpo__pool_free(dev, &opt->partials);
	gpo__pool_free(dev, &opt->blocks);
	gpo__pool_free(dev, &opt->tensor_blocks);
	gpo__pool_free(dev, &opt->lamb_partials);
	gpo__pool_free(dev, &opt->trust);
	opt->allocated = 0;
}

/* give the caller's bound buffers back */
static void unbind_all(struct gpo_optim *opt)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (!opt->ext[i])
			continue;
		opt->dev->ops->release(opt->dev, opt->ext[i]);
		opt->ext[i] = NULL;
	}
}

void gpo_optim_free(struct gpo_optim *opt)
{
	if (!opt)
		return;
	free_buffers(opt);
	unbind_all(opt);
	free(opt->groups);
	free(opt->tensors);
	free(opt->name_idx);
	free(opt);
}

void gpo__optim_drop_tensors(struct gpo_optim *opt)
{
	free_buffers(opt);
	unbind_all(opt);
	free(opt->tensors);
	free(opt->name_idx);
	opt->tensors = NULL;
	opt->name_idx = NULL;
	opt->name_cap = 0;
	opt->tcap = 0;
	opt->ntensors = 0;
	opt->numel = 0;
	layout(opt);
}

int gpo_optim_add_group(struct gpo_optim *opt)
{
	struct optim_group *groups;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	if (opt->allocated)
		return gpo__err(-EBUSY, "groups cannot be added after the first use");
	if (opt->ext[0] || opt->ext[1])
		return gpo__err(-EBUSY, "groups cannot be added once a buffer is bound");
	groups = realloc(opt->groups, (opt->ngroups + 1) * sizeof(*groups));
	if (!groups)
		return gpo__err(-ENOMEM, "out of memory");
	opt->groups = groups;
	memset(&groups[opt->ngroups], 0, sizeof(*groups));
	groups[opt->ngroups].hp = groups[0].hp;
	return opt->ngroups++;
}

static int valid_name(const char *name)
{
	size_t n = 0;

	for (; name[n]; n++) {
		unsigned char c = name[n];

		if (!isalnum(c) && c != '_' && c != '.' && c != ':' && c != '-')
			return 0;
	}
	return n >= 1 && n <= NAME_MAX_LEN;
}

/* Recompute every offset: groups in order, tensors in order of addition. */
static int layout(struct gpo_optim *opt)
{
	uint64_t pos = 0;
	int g, t;

	for (g = 0; g < opt->ngroups; g++) {
		struct optim_group *grp = &opt->groups[g];

		pos = (pos + GROUP_ALIGN - 1) / GROUP_ALIGN * GROUP_ALIGN;
		grp->start = pos;
		grp->numel = 0;
		for (t = 0; t < opt->ntensors; t++) {
			if (opt->tensors[t].group != g)
				continue;
			opt->tensors[t].offset = pos;
			pos += opt->tensors[t].numel;
			grp->numel += opt->tensors[t].numel;
		}
	}
	/* a whole float4 at the end keeps vector loads inside the buffer */
	opt->total = (pos + 3) / 4 * 4;
	if (opt->total >= (1ull << 32) - GROUP_ALIGN)
		return -EOVERFLOW;
	return 0;
}

/*
 * place_new - the offsets after the last tensor was added: at the end of
 * the last group nothing before it moves, so it goes at the end; else
 * everything is laid out again
 */
static int place_new(struct gpo_optim *opt)
{
	struct optim_tensor *t = &opt->tensors[opt->ntensors - 1];
	struct optim_group *grp = &opt->groups[t->group];
	uint64_t end;

	/* a group's first tensor: its start is not known yet */
	if (t->group != opt->ngroups - 1 || !grp->numel)
		return layout(opt);
	t->offset = grp->start + grp->numel;
	end = t->offset + t->numel;
	if ((end + 3) / 4 * 4 >= (1ull << 32) - GROUP_ALIGN)
		return -EOVERFLOW;
	grp->numel += t->numel;
	opt->total = (end + 3) / 4 * 4;
	return 0;
}

/*
 * The name index: each name's slot found from its FNV-1a hash by linear
 * probing, so adding and finding tensors stays linear in their number
 * (an optimizer of 120k tensors is built in a blink, not minutes).
 */
static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

/* the slot of @name: where it is, or the empty one where it would go */
static uint32_t name_slot(const struct gpo_optim *opt, const char *name)
{
	uint32_t m = opt->name_cap - 1, i = name_hash(name) & m;

	while (opt->name_idx[i] &&
	       strcmp(opt->tensors[opt->name_idx[i] - 1].name, name))
		i = (i + 1) & m;
	return i;
}

/* room in the index for @n names, at most half full */
static int name_reserve(struct gpo_optim *opt, uint32_t n)
{
	uint32_t cap = opt->name_cap ? opt->name_cap : 64, *old = opt->name_idx;
	uint32_t oldcap = opt->name_cap, i;

	while (cap < 2 * n)
		cap *= 2;
	if (cap == opt->name_cap)
		return 0;
	opt->name_idx = calloc(cap, sizeof(*opt->name_idx));
	if (!opt->name_idx) {
		opt->name_idx = old;
		return -ENOMEM;
	}
	opt->name_cap = cap;
	for (i = 0; i < oldcap; i++)
		if (old[i])
			opt->name_idx[name_slot(opt,
				opt->tensors[old[i] - 1].name)] = old[i];
	free(old);
	return 0;
}

int gpo_optim_add_tensor(struct gpo_optim *opt, const char *name, int ndim,
			 const uint64_t *shape, int group)
{
	struct optim_tensor *tensors, *t;
	uint64_t numel = 1;
	int i, ret;

	if (!opt || !name || !shape)
		return gpo__err(-EINVAL, "gpo_optim_add_tensor: NULL argument");
	if (opt->allocated)
		return gpo__err(-EBUSY, "tensors cannot be added after the first use");
	if (opt->ext[0] || opt->ext[1])
		return gpo__err(-EBUSY, "tensors cannot be added once a buffer is bound");
	if (!valid_name(name))
		return gpo__err(-EINVAL,
			       "bad tensor name '%.80s': 1-%d of A-Z a-z 0-9 _ . : -",
			       name, NAME_MAX_LEN);
	if (ndim < 1 || ndim > MAX_DIMS)
		return gpo__err(-EINVAL, "%s: %d dimensions (1..%d)", name, ndim,
			       MAX_DIMS);
	if (group < 0 || group >= opt->ngroups)
		return gpo__err(-EINVAL, "%s: no group %d", name, group);
	for (i = 0; i < ndim; i++) {
		if (!shape[i])
			return gpo__err(-EINVAL, "%s: dimension %d is 0", name, i);
		if (shape[i] > (1ull << 32) || numel > (1ull << 32) / shape[i])
			return gpo__err(-EOVERFLOW, "%s: too many elements", name);
		numel *= shape[i];
	}
	if (gpo_optim_find_tensor(opt, name) >= 0)
		return gpo__err(-EEXIST, "tensor '%s' exists", name);
	gpo__err_clear();

	if (name_reserve(opt, opt->ntensors + 1))
		return gpo__err(-ENOMEM, "out of memory");
	if (opt->ntensors == opt->tcap) {
		int cap = opt->tcap ? 2 * opt->tcap : 16;

		tensors = realloc(opt->tensors, cap * sizeof(*tensors));
		if (!tensors)
			return gpo__err(-ENOMEM, "out of memory");
		opt->tensors = tensors;
		opt->tcap = cap;
	}
	t = &opt->tensors[opt->ntensors];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	t->group = group;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof(*shape));
	t->numel = numel;
	opt->ntensors++;
	ret = place_new(opt);
	if (ret) {
		opt->ntensors--;
		layout(opt);
		return gpo__err(ret, "%s: the flat state would reach 2^32 elements",
			       name);
	}
	opt->name_idx[name_slot(opt, name)] = (uint32_t)opt->ntensors;
	opt->numel += numel;
	return opt->ntensors - 1;
}

int gpo_optim_tensor_count(struct gpo_optim *opt)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	return opt->ntensors;
}

uint64_t gpo_optim_numel(struct gpo_optim *opt)
{
	return opt ? opt->numel : 0;
}

int gpo_optim_tensor_info(struct gpo_optim *opt, int index,
			  struct gpo_tensor_info *info)
{
	const struct optim_tensor *t;

	if (!opt || !info)
		return gpo__err(-EINVAL, "NULL argument");
	if (index < 0 || index >= opt->ntensors)
		return gpo__err(-ENOENT, "no tensor %d", index);
	t = &opt->tensors[index];
	memset(info, 0, sizeof(*info));
	strcpy(info->name, t->name);
	info->group = t->group;
	info->ndim = t->ndim;
	memcpy(info->shape, t->shape, sizeof(t->shape));
	info->numel = t->numel;
	info->offset = t->offset;
	info->dtype = opt->param_dtype;
	return 0;
}

int gpo_optim_find_tensor(struct gpo_optim *opt, const char *name)
{
	int i;

	if (!opt || !name)
		return gpo__err(-EINVAL, "NULL argument");
	if (opt->name_cap) {
		i = (int)opt->name_idx[name_slot(opt, name)];
		if (i)
			return i - 1;
	}
	return gpo__err(-ENOENT, "no tensor '%s'", name);
}

/* ---- hyperparameters ---------------------------------------------------- */

/*
 * Apply @text to a copy of the groups, validate all of them, then commit.
 * Optimizer-wide keys go to every group so that group 0 always holds them.
 */
int gpo_optim_configure(struct gpo_optim *opt, int group, const char *text)
{
	struct optim_group *copy;
	char key[64], value[128];
	const char *pos = text;
	int g, ret, global;

	if (!opt || !text)
		return gpo__err(-EINVAL, "NULL argument");
	if (group < -1 || group >= opt->ngroups)
		return gpo__err(-ENOENT, "no group %d", group);
	copy = malloc(opt->ngroups * sizeof(*copy));
	if (!copy)
		return gpo__err(-ENOMEM, "out of memory");
	memcpy(copy, opt->groups, opt->ngroups * sizeof(*copy));

	while ((ret = gpo__kv_next(&pos, key, sizeof(key), value,
			      sizeof(value))) > 0) {
		for (g = 0; g < opt->ngroups; g++) {
			if (group >= 0 && g != group)
				continue;
			ret = gpo__hparams_set(opt->kind, &copy[g].hp, key, value,
					  &global);
			if (ret)
				goto out_free;
		}
		/* optimizer-wide: every group holds the same value */
		for (g = 0; global && g < opt->ngroups; g++)
			gpo__hparams_set(opt->kind, &copy[g].hp, key, value, &global);
	}
	if (ret < 0)
		goto out_free;
	for (g = 0; g < opt->ngroups; g++) {
		ret = gpo__hparams_validate(opt->kind, &copy[g].hp);
		if (ret) {
			if (opt->ngroups > 1)
				gpo__err_prefix(ret, "group %d", g);
			goto out_free;
		}
	}
	/* a new loss scale setting starts its device state afresh */
	if (copy[0].hp.loss_scale != opt->groups[0].hp.loss_scale ||
	    copy[0].hp.init_scale != opt->groups[0].hp.init_scale)
		opt->ls_reset = 1;
	memcpy(opt->groups, copy, opt->ngroups * sizeof(*copy));
	ret = 0;
out_free:
	free(copy);
	return ret;
}

int gpo_optim_set(struct gpo_optim *opt, int group, const char *key,
		  double value)
{
	char text[128];

	if (!opt || !key)
		return gpo__err(-EINVAL, "NULL argument");
	if (strpbrk(key, "= \t\n;") || strlen(key) > 63)
		return gpo__err(-EINVAL, "bad option name '%.64s'", key);
	if (!isfinite(value))
		return gpo__err(-EINVAL, "%s: value must be finite", key);
	gpo__snprintf(text, sizeof(text), "%s=%.17g", key, value);
	return gpo_optim_configure(opt, group, text);
}

/* Group -1 reads as gpo_optim_set() writes: the value every group holds. */
int gpo_optim_get(struct gpo_optim *opt, int group, const char *key,
		  double *value)
{
	double v, other;
	int g, ret;

	if (!opt || !key || !value)
		return gpo__err(-EINVAL, "NULL argument");
	if (group < -1 || group >= opt->ngroups)
		return gpo__err(-ENOENT, "no group %d", group);
	if (group >= 0)
		return gpo__hparams_get(opt->kind, &opt->groups[group].hp, key,
					value);
	ret = gpo__hparams_get(opt->kind, &opt->groups[0].hp, key, &v);
	if (ret)
		return ret;
	for (g = 1; g < opt->ngroups; g++) {
		gpo__hparams_get(opt->kind, &opt->groups[g].hp, key, &other);
		if (other != v)
			return gpo__err(-EINVAL, "%s: groups differ; name one",
				       key);
	}
	*value = v;
	return 0;
}

/* Is @line ("key=value\n") one of the lines of @text? */
static int has_line(const char *text, const char *line, size_t n)
{
	for (; *text; text = strchr(text, '\n') + 1)
		if (!strncmp(text, line, n))
			return 1;
	return 0;
}

/* Group -1: the lines every group has alike, in group 0's order. */
static int describe_common(struct gpo_optim *opt, char *buf, size_t len)
{
	char *text[2] = { NULL, NULL }, *line, *next, *end;
	int g, n;

	for (g = 0; g < opt->ngroups; g++) {
		char **t = &text[g > 0];

		n = gpo__hparams_describe(opt->kind, &opt->groups[g].hp, NULL, 0);
		if (n < 0)
			goto out_free;
		free(*t);
		*t = malloc((size_t)n + 1);
		if (!*t) {
			n = gpo__err(-ENOMEM, "out of memory");
			goto out_free;
		}
		gpo__hparams_describe(opt->kind, &opt->groups[g].hp, *t,
				      (size_t)n + 1);
		if (!g)
			continue;
		/* drop from text[0] the lines group g does not share */
		for (line = end = text[0]; *line; line = next) {
			size_t k;

			next = strchr(line, '\n') + 1;
			k = next - line;
			if (has_line(text[1], line, k)) {
				memmove(end, line, k);
				end += k;
			}
		}
		*end = '\0';
	}
	n = snprintf(buf, len, "%s", text[0]);
out_free:
	free(text[0]);
	free(text[1]);
	return n;
}

int gpo_optim_describe(struct gpo_optim *opt, int group, char *buf,
		       size_t len)
{
	if (!opt || (!buf && len))
		return gpo__err(-EINVAL, "NULL argument");
	if (group < -1 || group >= opt->ngroups)
		return gpo__err(-ENOENT, "no group %d", group);
	if (group == -1)
		return describe_common(opt, buf, len);
	return gpo__hparams_describe(opt->kind, &opt->groups[group].hp, buf, len);
}

/* ---- buffers ------------------------------------------------------------ */

/* Is slot @s used by the configuration of any group now? */
static int slot_needed(const struct gpo_optim *opt, enum slot_id s)
{
	int g;

	for (g = 0; g < opt->ngroups; g++)
		if (gpo__optim_slot_needed(opt->kind, &opt->groups[g].hp, s))
			return 1;
	return 0;
}

static int launch_fill(struct gpo_optim *opt, const struct dev_buf *buf,
		       uint32_t n, float value)
{
	struct gpo_mem_args a = { .n = n, .value = value };
	struct op_call call = {
		.op = OP_FILL, .dtype = GPO_F32, .work = n, .args = &a,
	};

	call.buf[0] = *buf;
	return gpo__launch(opt->dev, &call);
}

/* Zero every byte of @buf: 0.0f is four zero bytes, zero in every dtype. */
static int zero_bytes(struct gpo_optim *opt, const struct dev_buf *buf)
{
	const uint64_t piece = 1ull << 30;	/* words; 4 GiB per launch */
	uint64_t words = buf->size / 4, done, n;
	int ret = 0;

	for (done = 0; done < words && !ret; done += n) {
		struct dev_buf v = *buf;

		n = words - done < piece ? words - done : piece;
		v.off += done * 4;
		v.size = n * 4;
		ret = launch_fill(opt, &v, (uint32_t)n, 0.0f);
	}
	return ret;
}

/*
 * Elements [@first, @first + @n) of a 16-bit float buffer set to @value
 * from the host, in bounded pieces (the fill kernel writes float32s).
 */
static int fill_host16(struct gpo_optim *opt, const struct dev_buf *buf,
		       enum gpo_dtype dt, uint64_t first, uint64_t n,
		       double value)
{
	enum { PIECE = 16384 };			/* elements: 32 KiB */
	uint16_t *piece, h;
	uint64_t done, m;
	int i, ret = 0;

	h = dt == GPO_F16 ? gpo__f32_to_f16((float)value) :
			    gpo__f32_to_bf16((float)value);
	piece = malloc(PIECE * sizeof(*piece));
	if (!piece)
		return gpo__err(-ENOMEM, "out of memory");
	for (i = 0; i < PIECE; i++)
		piece[i] = h;
	for (done = 0; done < n && !ret; done += m) {
		m = n - done < PIECE ? n - done : PIECE;
		ret = opt->dev->ops->write(opt->dev, buf, (first + done) * 2,
					   piece, m * 2);
	}
	free(piece);
	return ret;
}

/* ---- u8 state: blockwise absmax (core/quant_i.h) ---------------------- */

unsigned int gpo__optim_u8_groups = 4096;

uint64_t gpo__optim_u8_first(const struct gpo_optim *opt, int g)
{
	uint64_t n = 0;
	int h;

	for (h = 0; h < g && h < opt->ngroups; h++)
		n += (opt->groups[h].numel + GPO_QBLOCK - 1) / GPO_QBLOCK;
	return n;
}

uint64_t gpo__optim_u8_blocks(const struct gpo_optim *opt)
{
	return gpo__optim_u8_first(opt, opt->ngroups);
}

/*
 * Slot @s's absmax, allocated if missing, all 0: with every code's
 * value times 0, the state starts at 0 as torch's zeros_like does
 */
static int u8_init_absmax(struct gpo_optim *opt, enum slot_id s)
{
	uint64_t blocks = gpo__optim_u8_blocks(opt);
	uint64_t words = (blocks + 3) / 4 * 4;
	int ret;

	if (!blocks)
		return 0;
	if (!opt->absmax[s].mem) {
		ret = gpo__pool_alloc(opt->dev, words * 4, &opt->absmax[s]);
		if (ret)
			return ret;
	}
	return zero_bytes(opt, &opt->absmax[s]);
}

/*
 * Group @g of u8 slot @s all @value (adagrad's initial sum): each block's
 * absmax the value as float, each code quant8(value, absmax), which is
 * the code of 1.0: the value comes back exactly
 */
static int u8_fill_value(struct gpo_optim *opt, enum slot_id s, int g,
			 double value)
{
	enum { PIECE = 16384 };
	const struct optim_group *grp = &opt->groups[g];
	uint64_t first = gpo__optim_u8_first(opt, g), done, m;
	uint64_t blocks = (grp->numel + GPO_QBLOCK - 1) / GPO_QBLOCK;
	float v = (float)value, *absmax;
	unsigned char *codes;
	int ret = 0;

	codes = malloc(PIECE);
	absmax = malloc(PIECE * sizeof(*absmax));
	if (!codes || !absmax) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	memset(codes, gpo__quant8(v, v, s != SL_EXP_AVG_SQ), PIECE);
	for (done = 0; done < PIECE; done++)
		absmax[done] = v;
	for (done = 0; done < grp->numel && !ret; done += m) {
		m = grp->numel - done < PIECE ? grp->numel - done : PIECE;
		ret = opt->dev->ops->write(opt->dev, &opt->slot[s],
					   grp->start + done, codes, m);
	}
	for (done = 0; done < blocks && !ret; done += m) {
		m = blocks - done < PIECE ? blocks - done : PIECE;
		ret = opt->dev->ops->write(opt->dev, &opt->absmax[s],
					   (first + done) * sizeof(float),
					   absmax, m * sizeof(float));
	}
out_free:
	free(codes);
	free(absmax);
	return ret;
}

/*
 * A slot of another dtype than f32: zero bytes, then adagrad's initial
 * value, converted on the host as torch.full_like() would.
 */
static int init_slot_other(struct gpo_optim *opt, enum slot_id s)
{
	enum gpo_dtype dt = opt->slot_dtype[s];
	int g, ret;

	for (g = 0; s == SL_SUM && g < opt->ngroups; g++)
		if (opt->groups[g].hp.initial_accumulator_value != 0 &&
		    dt != GPO_F16 && dt != GPO_BF16 && dt != GPO_U8)
			return gpo__err(-ENOSYS,
				       "%s: sum in %s: no conversion of initial_accumulator_value %g to %s yet",
				       gpo_optim_kind_name(opt->kind),
				       gpo_dtype_name(dt),
				       opt->groups[g].hp.initial_accumulator_value,
				       gpo_dtype_name(dt));
	ret = zero_bytes(opt, &opt->slot[s]);
	if (!ret && dt == GPO_U8)
		ret = u8_init_absmax(opt, s);
	for (g = 0; s == SL_SUM && g < opt->ngroups && !ret; g++) {
		const struct optim_group *grp = &opt->groups[g];

		if (grp->numel && grp->hp.initial_accumulator_value != 0 &&
		    dt == GPO_U8)
			ret = u8_fill_value(opt, s, g,
					    grp->hp.initial_accumulator_value);
		else if (grp->numel && grp->hp.initial_accumulator_value != 0)
			ret = fill_host16(opt, &opt->slot[s], dt, grp->start,
					  grp->numel,
					  grp->hp.initial_accumulator_value);
	}
	return ret;
}

/* Fill the state of @s: padding 0, each group its initial value. */
static int init_slot(struct gpo_optim *opt, enum slot_id s)
{
	struct dev_buf *buf = &opt->slot[s];
	int g, ret;

	if (opt->slot_dtype[s] != GPO_F32)
		return init_slot_other(opt, s);
	ret = launch_fill(opt, buf, opt->total, 0.0f);
	if (ret || s != SL_SUM)
		return ret;
	for (g = 0; g < opt->ngroups && !ret; g++) {
		struct optim_group *grp = &opt->groups[g];
		struct dev_buf view = *buf;

		if (!grp->numel || grp->hp.initial_accumulator_value == 0)
			continue;
		view.off += grp->start * 4;
		view.size = grp->numel * 4;
		ret = launch_fill(opt, &view, grp->numel,
				  (float)grp->hp.initial_accumulator_value);
	}
	return ret;
}

/* Allocate slot @s if it is missing, with its initial contents. */
static int ensure_slot(struct gpo_optim *opt, enum slot_id s)
{
	int ret;

	if (opt->slot[s].mem)
		return 0;
	ret = gpo__pool_alloc(opt->dev,
			      opt->total * gpo_dtype_size(opt->slot_dtype[s]),
			      &opt->slot[s]);
	if (ret)
		return ret;
	ret = init_slot(opt, s);
	if (ret) {
		gpo__pool_free(opt->dev, &opt->slot[s]);
		gpo__pool_free(opt->dev, &opt->absmax[s]);
	}
	return ret;
}

static int ensure_slots(struct gpo_optim *opt)
{
	int s, ret;

	if (opt->state_elsewhere == 1)
		return 0;
	for (s = 0; s < SL_COUNT; s++) {
		if (!slot_needed(opt, s))
			continue;
		ret = ensure_slot(opt, s);
		if (ret)
			return ret;
	}
	return 0;
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* param (@which 0) or grad (1): the caller's bound buffer or the pool's */
static int alloc_flat(struct gpo_optim *opt, int which, struct dev_buf *buf,
		      enum gpo_dtype dt)
{
	uint64_t bytes = opt->total * gpo_dtype_size(dt);

	if (!opt->ext[which])
		return gpo__pool_alloc(opt->dev, bytes, buf);
	buf->mem = opt->ext[which];
	buf->off = opt->ext_off[which];
	buf->size = bytes;
	return 0;
}

/*
 * A buffer of the pool starts as zeros; a bound one keeps the caller's
 * values but gets zeros in the padding between groups and at the end,
 * which the norm pass sums and the kernels run over.
 */
static int zero_flat(struct gpo_optim *opt, int which,
		     const struct dev_buf *buf, enum gpo_dtype dt)
{
	static const unsigned char zeros[(GROUP_ALIGN + 4) * 8];
	uint64_t es = gpo_dtype_size(dt), end = 0, next;
	int g, ret = 0;

	if (!opt->ext[which])
		return zero_bytes(opt, buf);
	for (g = 0; g <= opt->ngroups && !ret; g++) {
		next = g < opt->ngroups ? opt->groups[g].start : opt->total;
		if (next > end)
			ret = opt->dev->ops->write(opt->dev, buf, end * es,
						   zeros, (next - end) * es);
		if (g < opt->ngroups)
			end = opt->groups[g].start + opt->groups[g].numel;
	}
	return ret;
}

/* ---- loss scaling -------------------------------------------------------- */

/* is loss scaling on (fixed or dynamic)? */
static int ls_on(const struct hparams *hp)
{
	return hp->loss_scale != 1.0;
}

/*
 * write the loss scale's device state (abi.h GPO_SCAL_LS..): @scale, its
 * reciprocal rounded once from double as GradScaler's, @good. Ordered
 * after the steps queued before it.
 */
static int ls_write(struct gpo_optim *opt, float scale, uint64_t good)
{
	struct gpo_device *dev = opt->dev;
	float v[3];
	int ret;

	v[0] = scale;
	v[1] = (float)(1.0 / (double)scale);
	v[2] = (float)good;
	ret = dev->ops->write(dev, &opt->scal, GPO_SCAL_LS * sizeof(float), v,
			      sizeof(v));
	if (!ret)
		opt->ls_reset = 0;
	return ret;
}

/* a new setting's state: init_scale (dynamic), the scale (fixed) or 1 */
static int ls_apply(struct gpo_optim *opt)
{
	const struct hparams *hp = &opt->groups[0].hp;

	if (!opt->ls_reset)
		return 0;
	if (!ls_on(hp))
		return ls_write(opt, 1.0f, 0);
	return ls_write(opt, (float)(hp->loss_scale == 0 ? hp->init_scale :
				     hp->loss_scale), 0);
}

int gpo__optim_loss_state(struct gpo_optim *opt, double *scale,
			  uint64_t *good)
{
	struct gpo_device *dev = opt->dev;
	float v[3];
	int ret;

	ret = gpo__optim_ensure_allocated(opt);
	if (!ret)
		ret = dev->ops->read(dev, &opt->scal,
				     GPO_SCAL_LS * sizeof(float), v, sizeof(v));
	if (ret)
		return ret;
	*scale = opt->ls_saved = v[0];
	*good = opt->ls_saved_good = (uint64_t)v[2];
	return 0;
}

int gpo__optim_set_loss_state(struct gpo_optim *opt, double scale,
			      uint64_t good)
{
	const struct hparams *hp = &opt->groups[0].hp;
	int ret;

	if (!(scale > 0) || !isfinite((float)scale))
		return gpo__err(-EINVAL, "loss scale %g: must be a positive float",
				scale);
	if ((double)(float)good != (double)good ||
	    (hp->loss_scale == 0 && good >= hp->growth_interval))
		return gpo__err(-EINVAL, "loss scale counter %llu: must be below growth_interval %g",
				(unsigned long long)good, hp->growth_interval);
	ret = gpo__optim_ensure_allocated(opt);
	if (!ret)
		ret = ls_write(opt, (float)scale, good);
	return ret;
}

int gpo_optim_loss_scale(struct gpo_optim *opt, double *scale,
			 uint64_t *good_steps)
{
	uint64_t good;
	double s;
	int ret;

	if (!opt || !scale)
		return gpo__err(-EINVAL, "NULL argument");
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_settle(opt);
	if (!ret)
		ret = gpo__optim_loss_state(opt, &s, &good);
	pthread_mutex_unlock(&opt->dev->lock);
	if (ret)
		return ret;
	*scale = s;
	if (good_steps)
		*good_steps = good;
	gpo__err_clear();
	return 0;
}

/* First use: allocate and initialise every buffer. Device lock held. */
int gpo__optim_ensure_allocated(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	int ret;

	if (opt->allocated) {
		ret = ensure_slots(opt);
		return ret ? ret : ls_apply(opt);
	}
	if (!opt->ntensors)
		return gpo__err(-EINVAL, "the optimizer has no tensors");

	opt->norm_groups = div_up(opt->total, 4096);
	if (opt->norm_groups > GPO_NORM_MAX_GROUPS)
		opt->norm_groups = GPO_NORM_MAX_GROUPS;
	opt->norm_chunk = div_up(opt->total, opt->norm_groups);
	opt->norm_chunk = (opt->norm_chunk + 3) / 4 * 4;
	/* NORM_RUN groups must fit one binding (launch_norm): more groups */
	if (dev->max_binding &&
	    opt->norm_chunk > dev->max_binding / (4 * NORM_RUN) / 4 * 4 &&
	    dev->max_binding >= 16 * NORM_RUN) {
		opt->norm_chunk = dev->max_binding / (4 * NORM_RUN) / 4 * 4;
		opt->norm_groups = div_up(opt->total, opt->norm_chunk);
	}

	ret = alloc_flat(opt, 0, &opt->param, opt->param_dtype);
	if (!ret)
		ret = alloc_flat(opt, 1, &opt->grad, opt->grad_dtype);
	if (!ret)
		ret = gpo__pool_alloc(dev, GPO_SCAL_SIZE * sizeof(float),
				      &opt->scal);
	if (!ret)
		ret = gpo__pool_alloc(dev, 8ull * opt->norm_groups, &opt->partials);
	if (!ret && opt->fam->prepare)
		ret = opt->fam->prepare(opt);
	if (ret)
		goto out_free;
	ret = zero_flat(opt, 0, &opt->param, opt->param_dtype);
	if (!ret)
		ret = zero_flat(opt, 1, &opt->grad, opt->grad_dtype);
	if (!ret)
		ret = alloc_master(opt);
	if (ret)
		goto out_free;
	opt->allocated = 1;
	ret = ensure_slots(opt);
	opt->ls_reset = 1;
	if (!ret)
		ret = ls_apply(opt);
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	if (ret)
		goto out_free;
	return 0;

out_free:
	free_buffers(opt);
	return ret;
}

/* Resolve @slot and @tensor to a buffer, an element offset and a count. */
static int resolve(struct gpo_optim *opt, const char *slot, int create,
		   struct dev_buf **buf, enum slot_id *sid)
{
	int s;

	*sid = SL_COUNT;
	if (!strcmp(slot, "master")) {
		if (!opt->master.mem)
			return gpo__err(-ENOENT, "master: no master copy (f32 parameters, or master_weights=0)");
		*buf = &opt->master;
		return 0;
	}
	if (!strcmp(slot, "param")) {
		*buf = &opt->param;
		return 0;
	}
	if (!strcmp(slot, "grad")) {
		*buf = &opt->grad;
		return 0;
	}
	for (s = 0; s < SL_COUNT; s++) {
		if (strcmp(slot, gpo__optim_slot_names[s]) ||
		    !gpo__optim_slot_possible(opt->kind, s))
			continue;
		if (!opt->slot[s].mem && !create)
			return gpo__err(-ENOENT, "slot '%s' is not in use", slot);
		if (!opt->slot[s].mem) {
			int ret = ensure_slot(opt, s);

			if (ret)
				return ret;
		}
		*buf = &opt->slot[s];
		*sid = s;
		return 0;
	}
	return gpo__err(-ENOENT, "%s has no slot '%s'",
		       gpo_optim_kind_name(opt->kind), slot);
}

/* The dtype of buffer @name ("param", "grad", a slot of the kind), or NULL */
static enum gpo_dtype *dtype_field(struct gpo_optim *opt, const char *name)
{
	int s;

	if (!strcmp(name, "param"))
		return &opt->param_dtype;
	if (!strcmp(name, "grad"))
		return &opt->grad_dtype;
	if (!strcmp(name, "master"))
		return &opt->master_dtype;
	for (s = 0; s < SL_COUNT; s++)
		if (!strcmp(name, gpo__optim_slot_names[s]) &&
		    gpo__optim_slot_possible(opt->kind, s))
			return &opt->slot_dtype[s];
	gpo__err(-ENOENT, "%s has no slot '%s'", gpo_optim_kind_name(opt->kind),
		 name);
	return NULL;
}

static int transfer(struct gpo_optim *opt, int writing, const char *slot,
		    const char *tensor, void *host, size_t bytes)
{
	struct gpo_device *dev = opt->dev;
	struct dev_buf *buf = NULL;
	enum slot_id sid = SL_COUNT;
	enum gpo_dtype *dt;
	uint64_t done = 0, esize;
	int t = -1, g, ret;

	if (!slot || !host)
		return gpo__err(-EINVAL, "NULL argument");
	dt = dtype_field(opt, slot);
	if (!dt)
		return -ENOENT;
	esize = gpo_dtype_size(*dt);
	if (tensor) {
		t = gpo_optim_find_tensor(opt, tensor);
		if (t < 0)
			return t;
		if (bytes != opt->tensors[t].numel * esize)
			return gpo__err(-EINVAL, "%s of %s: %zu bytes, expected %llu (%llu elements of %s)",
				       slot, tensor, bytes,
				       (unsigned long long)(opt->tensors[t].numel * esize),
				       (unsigned long long)opt->tensors[t].numel,
				       gpo_dtype_name(*dt));
	} else if (bytes != opt->numel * esize) {
		return gpo__err(-EINVAL, "%s: %zu bytes, expected %llu for all %llu parameters in %s",
			       slot, bytes,
			       (unsigned long long)(opt->numel * esize),
			       (unsigned long long)opt->numel,
			       gpo_dtype_name(*dt));
	}

	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	if (ret)
		goto out_unlock;
	ret = resolve(opt, slot, writing, &buf, &sid);
	if (ret)
		goto out_unlock;
	if (t >= 0) {
		uint64_t off = opt->tensors[t].offset * esize;

		ret = writing ? dev->ops->write(dev, buf, off, host, bytes) :
				dev->ops->read(dev, buf, off, host, bytes);
		goto out_done;
	}
	for (g = 0; g < opt->ngroups && !ret; g++) {
		struct optim_group *grp = &opt->groups[g];
		char *p = (char *)host + done;

		if (!grp->numel)
			continue;
		ret = writing ? dev->ops->write(dev, buf, grp->start * esize, p,
						grp->numel * esize) :
				dev->ops->read(dev, buf, grp->start * esize, p,
					       grp->numel * esize);
		done += grp->numel * esize;
	}
out_done:
	/* a restored momentum buffer holds a value: no first-step copy */
	if (!ret && writing && sid == SL_MOMENTUM)
		for (g = 0; g < opt->ngroups; g++)
			opt->groups[g].momentum_started = 1;
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_write(struct gpo_optim *opt, const char *slot,
		    const char *tensor, const void *src, size_t bytes)
{
	int ret;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	ret = transfer(opt, 1, slot, tensor, (void *)src, bytes);
	if (!ret && opt->master.mem &&
	    (!strcmp(slot, "param") || !strcmp(slot, "master")))
		ret = master_sync(opt, slot, tensor, src, bytes);
	return ret;
}

int gpo_optim_read(struct gpo_optim *opt, const char *slot,
		   const char *tensor, void *dst, size_t bytes)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	return transfer(opt, 0, slot, tensor, dst, bytes);
}

int gpo_optim_read_absmax(struct gpo_optim *opt, const char *slot,
			  float *dst, size_t count)
{
	uint64_t blocks;
	int s, ret;

	if (!opt || !slot)
		return gpo__err(-EINVAL, "gpo_optim_read_absmax: NULL argument");
	for (s = 0; s < SL_COUNT; s++)
		if (!strcmp(slot, gpo__optim_slot_names[s]) &&
		    gpo__optim_slot_possible(opt->kind, s))
			break;
	if (s == SL_COUNT)
		return gpo__err(-ENOENT, "%s has no slot '%.64s'",
				gpo_optim_kind_name(opt->kind), slot);
	if (opt->slot_dtype[s] != GPO_U8)
		return gpo__err(-EINVAL, "%s is in %s: only u8 state has absmax blocks",
				slot, gpo_dtype_name(opt->slot_dtype[s]));
	pthread_mutex_lock(&opt->dev->lock);
	blocks = gpo__optim_u8_blocks(opt);
	if (!dst) {
		ret = (int)blocks;
		goto out_unlock;
	}
	if (!opt->absmax[s].mem) {
		ret = gpo__err(-ENOENT, "slot '%s' is not in use", slot);
		goto out_unlock;
	}
	if (count != blocks) {
		ret = gpo__err(-EINVAL, "%s: %llu absmax blocks, %zu asked for",
			       slot, (unsigned long long)blocks, count);
		goto out_unlock;
	}
	ret = gpo__optim_settle(opt);
	if (!ret)
		ret = opt->dev->ops->read(opt->dev, &opt->absmax[s], 0, dst,
					  blocks * sizeof(float));
out_unlock:
	pthread_mutex_unlock(&opt->dev->lock);
	return ret;
}

int gpo_optim_slot_count(struct gpo_optim *opt)
{
	int s, n = 0;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	for (s = 0; s < SL_COUNT; s++)
		n += opt->slot[s].mem != NULL;
	return n;
}

const char *gpo_optim_slot_name(struct gpo_optim *opt, int index)
{
	int s;

	if (!opt)
		return NULL;
	for (s = 0; s < SL_COUNT; s++)
		if (opt->slot[s].mem && index-- == 0)
			return gpo__optim_slot_names[s];
	return NULL;
}

int gpo_optim_set_dtype(struct gpo_optim *opt, const char *buffer,
			enum gpo_dtype dt)
{
	enum gpo_dtype *field;

	if (!opt || !buffer)
		return gpo__err(-EINVAL, "gpo_optim_set_dtype: NULL argument");
	if ((unsigned int)dt >= GPO_DTYPES)
		return gpo__err(-EINVAL, "%s: %d is not a dtype", buffer, (int)dt);
	field = dtype_field(opt, buffer);
	if (!field)
		return -ENOENT;
	if (field == &opt->master_dtype)
		return gpo__err(-EINVAL, "master: the master copy is f32 (gpo_optim_set_param_dtype())");
	if (opt->allocated)
		return gpo__err(-EBUSY, "%s: the dtype cannot change after the first use",
			       buffer);
	if ((field == &opt->param_dtype && opt->ext[0]) ||
	    (field == &opt->grad_dtype && opt->ext[1]))
		return gpo__err(-EBUSY, "%s: the dtype cannot change once bound",
			       buffer);
	*field = dt;
	return 0;
}

int gpo_optim_set_state_dtype(struct gpo_optim *opt, enum gpo_dtype dt)
{
	const char *kind;
	int s;

	if (!opt)
		return gpo__err(-EINVAL, "gpo_optim_set_state_dtype: NULL optimizer");
	kind = gpo_optim_kind_name(opt->kind);
	if ((unsigned int)dt >= GPO_DTYPES)
		return gpo__err(-EINVAL, "%s: %d is not a dtype", kind, (int)dt);
	if (dt != GPO_F32 && !(opt->fam->state_dtypes & DT(dt))) {
		return gpo__err(-EINVAL, "%s: no state in %s (its steps keep state in %s)",
				kind, gpo_dtype_name(dt),
				opt->fam->state_dtypes ? "f32, bf16 or u8" :
							 "f32");
	}
	if (opt->allocated)
		return gpo__err(-EBUSY, "%s: the state dtype cannot change after the first use",
				kind);
	for (s = 0; s < SL_COUNT; s++)
		if (gpo__optim_slot_possible(opt->kind, s))
			opt->slot_dtype[s] = dt;
	return 0;
}

uint64_t gpo_optim_buffer_bytes(struct gpo_optim *opt, const char *slot)
{
	enum gpo_dtype *field;

	if (!opt || !slot)
		return 0;
	field = dtype_field(opt, slot);
	return field ? opt->total * gpo_dtype_size(*field) : 0;
}

int gpo_optim_bind(struct gpo_optim *opt, const char *slot,
		   const struct gpo_extbuf *buf)
{
	struct gpo_device *dev;
	struct dev_mem *mem;
	enum gpo_dtype dt;
	uint64_t bytes;
	int which, ret;

	if (!opt || !slot || !buf)
		return gpo__err(-EINVAL, "gpo_optim_bind: NULL argument");
	if (!strcmp(slot, "param"))
		which = 0;
	else if (!strcmp(slot, "grad"))
		which = 1;
	else
		return gpo__err(-EINVAL, "%.64s: only \"param\" and \"grad\" can be bound",
			       slot);
	dev = opt->dev;
	bytes = gpo_optim_buffer_bytes(opt, slot);
	dt = which ? opt->grad_dtype : opt->param_dtype;
	if (buf->dtype != dt)
		return gpo__err(-EINVAL, "%s is %s, the buffer says %s", slot,
			       gpo_dtype_name(dt), gpo_dtype_name(buf->dtype));
	if (!opt->ntensors)
		return gpo__err(-EINVAL, "%s: add the tensors before binding", slot);
	if (buf->offset % 256)
		return gpo__err(-EINVAL, "%s: offset %llu is not a multiple of 256",
			       slot, (unsigned long long)buf->offset);
	if (buf->offset > buf->size || buf->size - buf->offset < bytes)
		return gpo__err(-EINVAL, "%s: the buffer holds %llu bytes from offset %llu, the optimizer needs %llu",
			       slot, (unsigned long long)(buf->offset > buf->size ? 0 :
					buf->size - buf->offset),
			       (unsigned long long)buf->offset,
			       (unsigned long long)bytes);
	pthread_mutex_lock(&dev->lock);
	if (opt->allocated) {
		ret = gpo__err(-EBUSY, "%s: buffers are bound before the first use",
			       slot);
		goto out_unlock;
	}
	if (opt->ext[which]) {
		ret = gpo__err(-EBUSY, "%s is already bound", slot);
		goto out_unlock;
	}
	if (!dev->ops->import) {
		ret = gpo__err(-EINVAL, "%s: the %s backend takes no buffers of the caller's",
			       dev->info.id, dev->info.backend);
		goto out_unlock;
	}
	ret = dev->ops->import(dev, buf, &mem);
	if (ret)
		goto out_unlock;
	opt->ext[which] = mem;
	opt->ext_off[which] = buf->offset;
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_dtype(struct gpo_optim *opt, const char *buffer)
{
	enum gpo_dtype *field;

	if (!opt || !buffer)
		return gpo__err(-EINVAL, "gpo_optim_dtype: NULL argument");
	field = dtype_field(opt, buffer);
	return field ? (int)*field : -ENOENT;
}

/*
 * The slots the 8-bit kernels keep (adam8, lion8, adagrad8, rmsprop8);
 * amsgrad's max_exp_avg_sq and RMSprop's momentum and centered slots
 * have none yet (nor have they in bitsandbytes)
 */
static int u8_has_kernel(int s)
{
	return s == SL_EXP_AVG || s == SL_EXP_AVG_SQ || s == SL_SQUARE_AVG ||
	       s == SL_SUM;
}

static int no_kernel(const char *what, const char *buffer, enum gpo_dtype dt)
{
	return gpo__err(-ENOSYS, "%s: %s in %s: no kernel for this dtype yet",
		       what, buffer, gpo_dtype_name(dt));
}

/*
 * The step's kernels are f32 only (half and 8-bit kernels come later):
 * refuse before anything runs rather than read other bytes as floats.
 * @slots: also the slots the configuration uses. The launch rework
 * replaces this by asking the backend's supports(op, dtype).
 */
static int check_f32(struct gpo_optim *opt, const char *what, int slots)
{
	int s, first = -1, ret;

	ret = check_param(opt, what, slots);
	if (ret)
		return ret;
	/*
	 * State in another dtype: the family's kernels take it when every
	 * slot the step uses has that one dtype (one flag says it)
	 */
	for (s = 0; slots && s < SL_COUNT; s++) {
		enum gpo_dtype dt = opt->slot_dtype[s];

		if (!slot_needed(opt, s))
			continue;
		if (dt != GPO_F32 && !(opt->fam->state_dtypes & DT(dt)))
			return no_kernel(what, gpo__optim_slot_names[s], dt);
		if (dt == GPO_U8 && !u8_has_kernel(s))
			return no_kernel(what, gpo__optim_slot_names[s], dt);
		if (first >= 0 && dt != opt->slot_dtype[first])
			return gpo__err(-ENOSYS, "%s: %s in %s but %s in %s: the state slots a step uses must share one dtype",
					what, gpo__optim_slot_names[first],
					gpo_dtype_name(opt->slot_dtype[first]),
					gpo__optim_slot_names[s],
					gpo_dtype_name(dt));
		first = s;
	}
	return 0;
}

/* ---- half-precision parameters ------------------------------------------ */

static int param_half(const struct gpo_optim *opt)
{
	return opt->param_dtype == GPO_F16 || opt->param_dtype == GPO_BF16;
}

/*
 * The step's parameter side: f32 parameters and gradients, or half ones
 * in one dtype with a master copy, or bf16 ones rounded stochastically.
 * The norm pass reads half gradients too (launch_norm).
 */
static int check_param(struct gpo_optim *opt, const char *what, int slots)
{
	const struct hparams *hp = &opt->groups[0].hp;

	if (opt->param_dtype == GPO_F32) {
		if (opt->grad_dtype != GPO_F32)
			return no_kernel(what, "grad", opt->grad_dtype);
		return 0;
	}
	if (!slots || !param_half(opt))
		return no_kernel(what, "param", opt->param_dtype);
	if (opt->grad_dtype != opt->param_dtype)
		return gpo__err(-ENOSYS, "%s: param in %s, grad in %s: the gradients must be in the parameters' dtype",
				what, gpo_dtype_name(opt->param_dtype),
				gpo_dtype_name(opt->grad_dtype));
	if (opt->allocated && !hp->master_weights != !opt->master_on)
		return gpo__err(-EBUSY, "%s: master_weights cannot change after the first use",
				what);
	if (!hp->master_weights && opt->param_dtype != GPO_BF16)
		return gpo__err(-EINVAL, "%s: %s parameters need master_weights=1 (stochastic rounding is for bf16)",
				what, gpo_dtype_name(opt->param_dtype));
	return 0;
}

/*
 * At allocation: the master copy of half parameters, unless
 * master_weights=0. It starts as the parameters widened exactly: zeros,
 * or a bound buffer's values.
 */
static int alloc_master(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	uint64_t n = opt->total, i;
	uint16_t *h = NULL;
	float *f = NULL;
	int ret;

	opt->master_on = gpo__optim_wants_master(opt);
	if (!opt->master_on)
		return 0;
	ret = gpo__pool_alloc(dev, n * sizeof(float), &opt->master);
	if (ret || !opt->ext[0])
		return ret ? ret : zero_bytes(opt, &opt->master);
	h = malloc(n * sizeof(*h));
	f = malloc(n * sizeof(*f));
	if (!h || !f) {
		ret = gpo__err(-ENOMEM, "master copy: out of memory");
		goto out_free;
	}
	ret = dev->ops->read(dev, &opt->param, 0, h, n * sizeof(*h));
	if (ret)
		goto out_free;
	for (i = 0; i < n; i++)
		f[i] = opt->param_dtype == GPO_F16 ? gpo__f16_to_f32(h[i]) :
						     gpo__bf16_to_f32(h[i]);
	ret = dev->ops->write(dev, &opt->master, 0, f, n * sizeof(*f));
out_free:
	free(h);
	free(f);
	return ret;
}

/*
 * After a write of "param" or "master" with a master copy: the other one
 * follows, so that the half parameters always are the master rounded to
 * nearest even (a written param is its own master, exactly).
 */
static int master_sync(struct gpo_optim *opt, const char *slot,
		       const char *tensor, const void *src, size_t bytes)
{
	int to_master = !strcmp(slot, "param"), f16;
	size_t n = bytes / (to_master ? 2 : 4), i;
	void *tmp;
	int ret;

	f16 = opt->param_dtype == GPO_F16;
	tmp = malloc(n ? n * (to_master ? 4 : 2) : 1);
	if (!tmp)
		return gpo__err(-ENOMEM, "master copy: out of memory");
	for (i = 0; i < n; i++) {
		if (to_master) {
			uint16_t h = ((const uint16_t *)src)[i];

			((float *)tmp)[i] = f16 ? gpo__f16_to_f32(h) :
						  gpo__bf16_to_f32(h);
		} else {
			float x = ((const float *)src)[i];

			((uint16_t *)tmp)[i] = f16 ? gpo__f32_to_f16(x) :
						     gpo__f32_to_bf16(x);
		}
	}
	ret = transfer(opt, 1, to_master ? "master" : "param", tensor, tmp,
		       n * (to_master ? 4 : 2));
	free(tmp);
	return ret;
}

/* @grp's part of half buffer @buf, n rounded up to 4 (the group's padding) */
static struct dev_buf half_view4(const struct dev_buf *buf,
				 const struct optim_group *grp)
{
	struct dev_buf v = optim_group_view(buf, GPO_BF16, grp);

	if (v.mem)
		v.size = ((grp->numel + 3) & ~3ull) * 2;
	return v;
}

void gpo__optim_param_call(const struct gpo_optim *opt,
			   const struct optim_group *grp, uint64_t t,
			   struct op_call *call, void *args)
{
	const struct gpo__op *op = &gpo__ops[call->op];
	uint32_t *w = args, bw = op->base_word;

	if (!bw)
		return;
	w[bw] = (uint32_t)grp->start;
	w[bw + 1] = (uint32_t)opt->sr_seed;
	w[bw + 2] = (uint32_t)(opt->sr_seed >> 32);
	w[bw + 3] = (uint32_t)t;
	w[bw + 4] = (uint32_t)(t >> 32);
	if (!param_half(opt))
		return;
	/*
	 * The kernels are f32 ones that load and store half words: built
	 * for the parameters' dtype where the backend has that (ops.c's
	 * DT_PARAM, Vulkan's 8-bit kernels), else f32 ones that the flags
	 * tell (which they always say)
	 */
	call->dtype = optim_param_dtype(opt, call->op);
	w[1] |= opt->param_dtype == GPO_F16 ? GPO_UPD_PARAM_F16 :
					      GPO_UPD_PARAM_BF16;
	call->buf[1] = half_view4(&opt->grad, grp);
	if (opt->master_on) {
		unsigned int b;

		/* ops.c: the half copy is the op's buffer "p_half" */
		call->buf[0] = optim_group_view(&opt->master, GPO_F32, grp);
		for (b = 0; b < op->nbuf; b++)
			if (op->buf[b].name && !strcmp(op->buf[b].name, "p_half"))
				call->buf[b] = half_view4(&opt->param, grp);
	} else {
		w[1] |= GPO_UPD_PARAM_SR;
		call->buf[0] = half_view4(&opt->param, grp);
	}
}

int gpo_optim_set_param_dtype(struct gpo_optim *opt, enum gpo_dtype dt,
			      int master_weights, uint64_t seed)
{
	const char *kind;
	int g;

	if (!opt)
		return gpo__err(-EINVAL, "gpo_optim_set_param_dtype: NULL optimizer");
	kind = gpo_optim_kind_name(opt->kind);
	if (dt != GPO_F32 && dt != GPO_F16 && dt != GPO_BF16)
		return gpo__err(-EINVAL, "%s: parameters in %s: only f32, f16 or bf16",
				kind, (unsigned int)dt < GPO_DTYPES ?
				gpo_dtype_name(dt) : "an unknown dtype");
	if (master_weights != 0 && master_weights != 1)
		return gpo__err(-EINVAL, "%s: master_weights %d: 0 or 1",
				kind, master_weights);
	if (dt == GPO_F16 && !master_weights)
		return gpo__err(-EINVAL, "%s: f16 parameters need master_weights=1 (stochastic rounding is for bf16)",
				kind);
	if (opt->allocated)
		return gpo__err(-EBUSY, "%s: the parameter dtype cannot change after the first use",
				kind);
	if (opt->ext[0] || opt->ext[1])
		return gpo__err(-EBUSY, "%s: the parameter dtype cannot change once param or grad is bound",
				kind);
	opt->param_dtype = dt;
	opt->grad_dtype = dt;
	opt->sr_seed = seed;
	for (g = 0; g < opt->ngroups; g++)
		opt->groups[g].hp.master_weights = master_weights;
	return 0;
}

/* ---- the step ------------------------------------------------------------ */

/*
 * Queue the norm reduction; the update kernels then read scal. The
 * partial sums run in as few launches as the device's binding range
 * allows: each a run of a multiple of NORM_RUN groups, so that the views
 * of the gradient (NORM_RUN * chunk floats, chunk a multiple of 4) and of
 * the partials (2 floats a group) start on 256 bytes, the largest
 * binding alignment Vulkan allows.
 *
 * Half gradients are read as such (GPO_NORM_HALF), summed in the one
 * order every backend follows (GPO_NORM_EXACT): the clip coefficient,
 * the skip and the loss scale, and so the update, are the same bits on
 * every device. (The f32 path keeps each backend's fastest order.)
 */
static int launch_norm(struct gpo_optim *opt, const struct hparams *hp)
{
	struct gpo_device *dev = opt->dev;
	uint64_t es = gpo_dtype_size(opt->grad_dtype);
	uint64_t chunk = opt->norm_chunk, run = opt->norm_groups, first;
	struct gpo_norm_args a = {
		.chunk = opt->norm_chunk,
		.inv_scale = (float)(1.0 / hp->grad_scale),
		.clip_norm = (float)hp->clip_norm,
	};
	struct op_call call = {
		.op = OP_NORM_PARTIAL, .dtype = GPO_F32, .args = &a,
	};
	int ret;

	if (hp->check_finite || hp->grad_scale != 1.0 || ls_on(hp))
		a.flags |= GPO_NORM_CHECK_FINITE;
	if (ls_on(hp))
		a.flags |= GPO_NORM_LOSS_SCALE;
	if (hp->loss_scale == 0) {
		a.flags |= GPO_NORM_DYNAMIC;
		a.growth_interval = (uint32_t)hp->growth_interval;
	}
	if (opt->grad_dtype == GPO_F16 || opt->grad_dtype == GPO_BF16)
		a.flags |= GPO_NORM_EXACT | GPO_NORM_HALF |
			   (opt->grad_dtype == GPO_BF16 ? GPO_NORM_BF16 : 0);
	if (opt->total <= NORM_SMALL_MAX &&
	    gpo__op_supported(dev, OP_NORM_SMALL, GPO_F32)) {
		a.n = (uint32_t)opt->total;
		a.groups = 1;
		call.op = OP_NORM_SMALL;
		call.work = 1;
		call.buf[0] = opt->grad;
		call.buf[1] = opt->scal;
		return gpo__launch(dev, &call);
	}
	if (dev->max_binding && chunk * es * run > dev->max_binding)
		run = dev->max_binding / (chunk * es) / NORM_RUN * NORM_RUN;
	if (!run)
		return gpo__err(-ENOSYS, "%s: %u norm groups of %llu floats exceed one binding (%llu bytes)",
				dev->info.id, NORM_RUN,
				(unsigned long long)chunk,
				(unsigned long long)dev->max_binding);
	for (first = 0; first < opt->norm_groups; first += run) {
		uint64_t groups = opt->norm_groups - first < run ?
				  opt->norm_groups - first : run;
		uint64_t lo = first * chunk, hi = (first + groups) * chunk;

		if (hi > opt->total)
			hi = opt->total;
		a.n = (uint32_t)(hi - lo);
		a.groups = (uint32_t)groups;
		call.work = groups;
		call.buf[0] = opt->grad;
		call.buf[0].off += lo * es;
		call.buf[0].size = (hi - lo) * es;
		call.buf[1] = opt->partials;
		call.buf[1].off += first * 2 * sizeof(float);
		call.buf[1].size = groups * 2 * sizeof(float);
		ret = gpo__launch(dev, &call);
		if (ret)
			return ret;
	}
	/* one workgroup sums the partials in a fixed order */
	a.n = (uint32_t)opt->total;
	a.groups = opt->norm_groups;
	call.op = OP_NORM_FINAL;
	call.work = 1;
	call.buf[0] = opt->partials;
	call.buf[1] = opt->scal;
	return gpo__launch(dev, &call);
}

static int launch_step(struct gpo_optim *opt, uint64_t t, int use_norm)
{
	int ret;

	if (use_norm) {
		ret = launch_norm(opt, &opt->groups[0].hp);
		if (ret)
			return ret;
	}
	return opt->fam->launch(opt, t, use_norm ? GPO_UPD_USE_SCAL : 0);
}

/*
 * launch_graph - the step's launches through the backend's recorded
 * steps: replayed and submitted (1, opt->scal_host then holds where its
 * scalars arrive) or, when they could not be recorded, queued in the
 * batch as launch_step() queues them (0); -errno on failure
 */
static int launch_graph(struct gpo_optim *opt, int use_norm)
{
	struct gpo_device *dev = opt->dev;
	const void *host = NULL;
	struct dev_buf rb;
	int ret, end;

	opt->scal_host = NULL;
	ret = dev->ops->graph_begin(dev, &opt->graph);
	if (ret)
		return ret;
	ret = launch_step(opt, opt->step + 1, use_norm);
	rb = opt->scal;
	rb.size = GPO_SCAL_SIZE * sizeof(float);
	end = dev->ops->graph_end(dev, opt->graph, ret != 0, &rb,
				  use_norm ? 1 : 0, &host);
	if (ret)
		return ret;
	if (end > 0)
		opt->scal_host = host;
	return end;
}

/* can a step of this configuration be skipped (non-finite gradients)? */
static int may_skip(const struct hparams *hp)
{
	return hp->check_finite || hp->grad_scale != 1.0 || ls_on(hp);
}

/*
 * count_step - what a step changes on the host once its outcome is
 * known. The step is done whatever the schedule says: past onecycle's
 * total_steps (-ERANGE) the lr stays; a plateau without a metric
 * (-EINVAL) does not count the step.
 */
static void count_step(struct gpo_optim *opt, int skipped, double metric)
{
	int g;

	if (skipped) {
		opt->skipped++;
		return;
	}
	opt->step++;
	for (g = 0; g < opt->ngroups; g++)
		if (opt->groups[g].hp.momentum != 0)
			opt->groups[g].momentum_started = 1;
	if (opt->sched)
		gpo_sched_step(opt->sched, metric);
}

/*
 * read the last step's scalars into opt->last: waits for the queued
 * steps. A replayed step copied them to host memory in its submission:
 * they are there after the wait, whose device time goes to *@ns.
 */
static int read_scal(struct gpo_optim *opt, float *scal, uint64_t *ns)
{
	struct gpo_device *dev = opt->dev;
	int ret;

	if (opt->scal_host) {
		ret = dev->ops->wait(dev, ns);
		if (!ret)
			memcpy(scal, opt->scal_host,
			       GPO_SCAL_SIZE * sizeof(float));
	} else {
		ret = dev->ops->read(dev, &opt->scal, 0, scal,
				     GPO_SCAL_SIZE * sizeof(float));
	}
	if (ret)
		return ret;
	opt->last.grad_norm = scal[GPO_SCAL_NORM];
	opt->last.skipped = scal[GPO_SCAL_SKIP] != 0.0f;
	opt->last.loss_scale = scal[GPO_SCAL_LS];
	return 0;
}

/* gpo__optim_settle(); the device time it waited for goes to *@ns */
static int settle(struct gpo_optim *opt, uint64_t *ns)
{
	float scal[GPO_SCAL_SIZE];
	int ret;

	if (!opt->unsettled)
		return 0;
	ret = read_scal(opt, scal, ns);
	if (ret)
		return ret;
	opt->unsettled = 0;
	count_step(opt, opt->last.skipped, opt->unsettled_metric);
	opt->last.step = opt->step;
	opt->last.skipped_total = opt->skipped;
	gpo__err_clear();
	return 0;
}

int gpo__optim_settle(struct gpo_optim *opt)
{
	return settle(opt, NULL);
}

int gpo_optim_step(struct gpo_optim *opt, struct gpo_step_info *info)
{
	return gpo__optim_step(opt, info, 1);
}

int gpo_optim_step_async(struct gpo_optim *opt)
{
	return gpo__optim_step(opt, NULL, GPO__STEP_ASYNC);
}

/*
 * An asynchronous step is submitted and not waited for. Its scalars (t,
 * lr) are those of the step that follows the ones before it, which the
 * host knows unless one of those may have been skipped: that one is
 * settled first (a wait), so queued steps give the bytes of synchronous
 * ones.
 */
static int step_async(struct gpo_optim *opt, int use_norm, double lr)
{
	struct gpo_device *dev = opt->dev;
	int ret = 0;

	/* a replayed step may be submitted already: then this costs nothing */
	if (dev->ops->submit)
		ret = dev->ops->submit(dev);
	if (ret)
		return ret;
	opt->queued++;
	opt->last_norm = use_norm;
	opt->last.lr = lr;
	opt->last.grad_norm = NAN;
	opt->last.skipped = 0;
	opt->last.loss_scale = ls_on(&opt->groups[0].hp) ? NAN : 1.0;
	if (use_norm && may_skip(&opt->groups[0].hp)) {
		opt->unsettled = 1;
		opt->unsettled_metric = opt->metric;
	} else {
		count_step(opt, 0, opt->metric);
	}
	opt->last.step = opt->step;
	opt->last.skipped_total = opt->skipped;
	return 0;
}

/*
 * gpo__optim_prepare_locked - under dev->lock, before a step's launches:
 * the state allocated, a queued step that may have been skipped settled
 * (which may read and wait), and what the step needs to know in @ps
 */
int gpo__optim_prepare_locked(struct gpo_optim *opt,
			      struct optim_pending *ps)
{
	const struct hparams *hp = &opt->groups[0].hp;
	int ret;

	ps->use_norm = hp->clip_norm > 0 || hp->grad_scale != 1.0 ||
		       hp->check_finite || ls_on(hp);
	ret = gpo__optim_ensure_allocated(opt);
	if (!ret)
		ret = gpo__optim_settle(opt);
	if (ret)
		return ret;
	ps->lr = optim_group_lr(opt, &opt->groups[0]);
	return 0;
}

/* gpo__optim_launch_locked - the prepared step's launches, queued */
int gpo__optim_launch_locked(struct gpo_optim *opt,
			     const struct optim_pending *ps)
{
	opt->scal_host = NULL;
	return launch_step(opt, opt->step + 1, ps->use_norm);
}

/*
 * gpo__optim_finish_locked - the host's side of a step that ran to the
 * end: @scal (GPO_SCAL_SIZE floats read back when ps->use_norm, else
 * unused and may be NULL) says whether
 * it was skipped, @ns its device time; the counters and the schedule
 * move on and *@info (may be NULL) gets what happened
 */
void gpo__optim_finish_locked(struct gpo_optim *opt,
			      const struct optim_pending *ps,
			      const float *scal, uint64_t ns,
			      struct gpo_step_info *info)
{
	/* what a step without the norm pass leaves in its scalars */
	static const float none[GPO_SCAL_SIZE] = { 1.0f, 0.0f, NAN, 0.0f,
						   1.0f };
	int use_norm = ps->use_norm, skipped;

	if (!use_norm || !scal)
		scal = none;
	skipped = use_norm && scal[GPO_SCAL_SKIP] != 0.0f;
	count_step(opt, skipped, opt->metric);
	opt->last.step = opt->step;
	opt->last.skipped_total = opt->skipped;
	opt->last.lr = ps->lr;
	opt->last.grad_norm = use_norm ? scal[GPO_SCAL_NORM] : NAN;
	opt->last.skipped = skipped;
	opt->last.loss_scale = scal[GPO_SCAL_LS];
	opt->last.device_ns = ns;
	opt->last_norm = 0;
	if (info)
		*info = opt->last;
	gpo__err_clear();
}

/* can @opt step at all (its dtypes have kernels)? */
int gpo__optim_check(struct gpo_optim *opt)
{
	return check_f32(opt, gpo_optim_kind_name(opt->kind), 1);
}

int gpo__optim_step(struct gpo_optim *opt, struct gpo_step_info *info,
		    int sync)
{
	struct gpo_device *dev;
	struct optim_pending ps;
	float scal[GPO_SCAL_SIZE];
	uint64_t ns = 0;
	int replayed = 0, ret;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	ret = gpo__optim_check(opt);
	if (ret)
		return ret;
	dev = opt->dev;

	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_prepare_locked(opt, &ps);
	if (ret)
		goto out_unlock;
	if (sync && dev->ops->graph_begin) {
		replayed = launch_graph(opt, ps.use_norm);
		ret = replayed < 0 ? replayed : 0;
	} else {
		ret = gpo__optim_launch_locked(opt, &ps);
	}
	if (!ret && sync == GPO__STEP_ASYNC) {
		ret = step_async(opt, ps.use_norm, ps.lr);
		if (!ret)
			gpo__err_clear();
		goto out_unlock;
	}
	/* without the norm pass no step is skipped: nothing to learn */
	if (!ret && replayed > 0) {
		ret = dev->ops->wait(dev, &ns);
		if (!ret && ps.use_norm)
			memcpy(scal, opt->scal_host, sizeof(scal));
	} else {
		if (!ret && ps.use_norm)
			ret = dev->ops->read(dev, &opt->scal, 0, scal,
					     sizeof(scal));
		if (!ret && (sync || ps.use_norm))
			ret = dev->ops->wait(dev, &ns);
	}
	if (ret)
		goto out_unlock;
	if (sync)
		opt->queued = 0;
	gpo__optim_finish_locked(opt, &ps, scal, ns, info);
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_wait(struct gpo_optim *opt, struct gpo_step_info *info)
{
	struct gpo_device *dev;
	float scal[GPO_SCAL_SIZE];
	uint64_t ns = 0, more = 0;
	int ret = 0;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	dev = opt->dev;
	pthread_mutex_lock(&dev->lock);
	if (opt->queued || opt->unsettled) {
		/* the last step's scalars come with the wait for it */
		if (opt->unsettled)
			ret = settle(opt, &ns);
		else if (opt->last_norm)
			ret = read_scal(opt, scal, &ns);
		if (!ret)
			ret = dev->ops->wait(dev, &more);
		ns += more;
		if (ret)
			goto out_unlock;
		opt->queued = 0;
		opt->last_norm = 0;
	}
	opt->last.device_ns = ns;
	if (info) {
		*info = opt->last;
		info->step = opt->step;
		info->skipped_total = opt->skipped;
	}
	gpo__err_clear();
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_objective(struct gpo_optim *opt, const char *name,
			double *loss)
{
	struct gpo_objective_args a = { 0 };
	struct op_call call = { .dtype = GPO_F32, .args = &a };
	struct gpo_device *dev;
	float *part = NULL;
	double sum = 0;
	uint32_t i;
	int ret;

	if (!opt || !name || !loss)
		return gpo__err(-EINVAL, "NULL argument");
	if (!strcmp(name, "quadratic"))
		call.op = OP_OBJ_QUADRATIC;
	else if (!strcmp(name, "rosenbrock"))
		call.op = OP_OBJ_ROSENBROCK;
	else
		return gpo__err(-EINVAL, "unknown objective '%s' (quadratic, rosenbrock)",
			       name);
	if (opt->ngroups != 1)
		return gpo__err(-EINVAL, "objectives need a single parameter group");
	/* its gradient is the loss's own: a loss scale would divide it */
	if (ls_on(&opt->groups[0].hp))
		return gpo__err(-EINVAL, "objectives compute unscaled gradients: set loss_scale=1");
	ret = check_f32(opt, name, 0);
	if (ret)
		return ret;
	dev = opt->dev;
	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	if (ret)
		goto out_unlock;
	part = malloc(8ull * opt->norm_groups);
	if (!part) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_unlock;
	}
	/* the padding at the end of the last group is not a parameter */
	a.n = (uint32_t)opt->numel;
	a.groups = opt->norm_groups;
	a.chunk = opt->norm_chunk;
	call.work = opt->norm_groups;
	call.buf[0] = opt->param;
	call.buf[1] = opt->grad;
	call.buf[2] = opt->partials;
	ret = gpo__launch(dev, &call);
	if (!ret)
		ret = dev->ops->read(dev, &opt->partials, 0, part,
				     8ull * opt->norm_groups);
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	if (ret)
		goto out_unlock;
	for (i = 0; i < opt->norm_groups; i++)
		sum += part[2 * i];
	*loss = sum;
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	free(part);
	return ret;
}

/*
 * the counters, settled: a queued step that may be skipped is waited for.
 * Without one they are read as before, without the device lock, so that
 * a status read never waits for a running step.
 */
static void settled_counts(struct gpo_optim *opt, uint64_t *step,
			   uint64_t *skipped)
{
	if (!__atomic_load_n(&opt->unsettled, __ATOMIC_ACQUIRE)) {
		*step = opt->step;
		*skipped = opt->skipped;
		return;
	}
	pthread_mutex_lock(&opt->dev->lock);
	gpo__optim_settle(opt);
	*step = opt->step;
	*skipped = opt->skipped;
	pthread_mutex_unlock(&opt->dev->lock);
}

uint64_t gpo_optim_steps_done(struct gpo_optim *opt)
{
	uint64_t step, skipped;

	if (!opt)
		return 0;
	settled_counts(opt, &step, &skipped);
	return step;
}

uint64_t gpo_optim_steps_skipped(struct gpo_optim *opt)
{
	uint64_t step, skipped;

	if (!opt)
		return 0;
	settled_counts(opt, &step, &skipped);
	return skipped;
}

int gpo_optim_set_step(struct gpo_optim *opt, uint64_t step)
{
	int ret;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	/* the next step runs as step + 1: 0 would divide by 1 - beta^0 */
	if (step == UINT64_MAX)
		return gpo__err(-EOVERFLOW, "step %" PRIu64 ": no step can follow it",
			       step);
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_settle(opt);
	if (!ret)
		opt->step = step;
	pthread_mutex_unlock(&opt->dev->lock);
	return ret;
}

int gpo_optim_reset(struct gpo_optim *opt)
{
	struct gpo_device *dev;
	int s, g, ret = 0;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	dev = opt->dev;
	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_settle(opt);
	if (opt->allocated) {
		for (s = 0; s < SL_COUNT && !ret; s++)
			if (opt->slot[s].mem)
				ret = init_slot(opt, s);
		if (!ret)
			ret = dev->ops->wait(dev, NULL);
	}
	if (!ret) {
		opt->queued = 0;
		opt->step = 0;
		opt->skipped = 0;
		/* the loss scale starts over with the state */
		opt->ls_reset = 1;
		for (g = 0; g < opt->ngroups; g++)
			opt->groups[g].momentum_started = 0;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_attach_sched(struct gpo_optim *opt, struct gpo_sched *s)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	/* an unconfigured schedule has no lr: refuse it now, not at a step */
	if (s && isnan(gpo_sched_lr(s, 1.0)))
		return gpo__err(-EINVAL,
			       "the schedule lacks a required setting");
	opt->sched = s;
	return 0;
}

int gpo_optim_set_metric(struct gpo_optim *opt, double metric)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	opt->metric = metric;
	return 0;
}

/*
 * ZeRO-1 (comm/): other optimizers keep this one's state, so its slots
 * are freed and not allocated again (@elsewhere 1); @elsewhere 0 brings
 * them back, initialised, for the caller to fill for a save (state 2:
 * the ranks still own the state, a restore is still refused).
 */
int gpo__optim_state_elsewhere(struct gpo_optim *opt, int elsewhere)
{
	int s, ret = 0;

	pthread_mutex_lock(&opt->dev->lock);
	if (elsewhere) {
		ret = gpo__optim_settle(opt);
		if (!ret)
			ret = opt->dev->ops->wait(opt->dev, NULL);
		for (s = 0; !ret && s < SL_COUNT; s++)
			gpo__pool_free(opt->dev, &opt->slot[s]);
		if (!ret)
			opt->state_elsewhere = 1;
	} else if (opt->state_elsewhere) {
		opt->state_elsewhere = 2;
		if (opt->allocated)
			ret = ensure_slots(opt);
		if (!ret)
			ret = opt->dev->ops->wait(opt->dev, NULL);
	}
	pthread_mutex_unlock(&opt->dev->lock);
	return ret;
}
