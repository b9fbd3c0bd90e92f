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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"
#include "optim/optim_i.h"

const char *const gpo__optim_slot_names[SL_COUNT] = {
	[SL_MOMENTUM] = "momentum_buffer",
	[SL_EXP_AVG] = "exp_avg",
	[SL_EXP_AVG_SQ] = "exp_avg_sq",
	[SL_MAX_EXP_AVG_SQ] = "max_exp_avg_sq",
	[SL_SQUARE_AVG] = "square_avg",
	[SL_GRAD_AVG] = "grad_avg",
	[SL_SUM] = "sum",
};

static const char *const kind_names[GPO_OPTIM_KINDS] = {
	[GPO_SGD] = "sgd", [GPO_ADAM] = "adam", [GPO_ADAMW] = "adamw",
	[GPO_RMSPROP] = "rmsprop", [GPO_ADAGRAD] = "adagrad",
	[GPO_LAMB] = "lamb", [GPO_LION] = "lion",
};

int gpo_optim_kind_parse(const char *name)
{
	int i;

	if (!name)
		return gpo__err(-EINVAL, "NULL optimizer name");
	for (i = 0; i < GPO_OPTIM_KINDS; i++)
		if (!strcmp(name, kind_names[i]))
			return i;
	return gpo__err(-EINVAL,
		       "unknown optimizer '%s' (sgd adam adamw rmsprop adagrad lamb lion)",
		       name);
}

const char *gpo_optim_kind_name(enum gpo_optim_kind kind)
{
	if ((unsigned int)kind >= GPO_OPTIM_KINDS)
		return "unknown";
	return kind_names[kind];
}

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
	opt->ngroups = 1;
	opt->metric = NAN;
	gpo__hparams_defaults(kind, &opt->groups[0].hp);
	*out = opt;
	return 0;
}

static void free_buffers(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	int i;

	gpo__pool_free(dev, &opt->param);
	gpo__pool_free(dev, &opt->grad);
	for (i = 0; i < SL_COUNT; i++)
		gpo__pool_free(dev, &opt->slot[i]);
	gpo__pool_free(dev, &opt->scal);
	gpo__pool_free(dev, &opt->partials);
	gpo__pool_free(dev, &opt->blocks);
	gpo__pool_free(dev, &opt->tensor_blocks);
	gpo__pool_free(dev, &opt->lamb_partials);
	gpo__pool_free(dev, &opt->trust);
	opt->allocated = 0;
}

void gpo_optim_free(struct gpo_optim *opt)
{
	if (!opt)
		return;
	free_buffers(opt);
	free(opt->groups);
	free(opt->tensors);
	free(opt);
}

int gpo_optim_add_group(struct gpo_optim *opt)
{
	struct optim_group *groups;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	if (opt->allocated)
		return gpo__err(-EBUSY, "groups cannot be added after the first use");
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

	tensors = realloc(opt->tensors, (opt->ntensors + 1) * sizeof(*tensors));
	if (!tensors)
		return gpo__err(-ENOMEM, "out of memory");
	opt->tensors = tensors;
	t = &tensors[opt->ntensors];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	t->group = group;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof(*shape));
	t->numel = numel;
	opt->ntensors++;
	ret = layout(opt);
	if (ret) {
		opt->ntensors--;
		layout(opt);
		return gpo__err(ret, "%s: the flat state would reach 2^32 elements",
			       name);
	}
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
	for (i = 0; i < opt->ntensors; i++)
		if (!strcmp(opt->tensors[i].name, name))
			return i;
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
				gpo__err(ret, "group %d: %s", g, gpo_errmsg());
			goto out_free;
		}
	}
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
	snprintf(text, sizeof(text), "%s=%.17g", key, value);
	return gpo_optim_configure(opt, group, text);
}

int gpo_optim_get(struct gpo_optim *opt, int group, const char *key,
		  double *value)
{
	if (!opt || !key || !value)
		return gpo__err(-EINVAL, "NULL argument");
	if (group == -1)
		group = 0;
	if (group < 0 || group >= opt->ngroups)
		return gpo__err(-ENOENT, "no group %d", group);
	return gpo__hparams_get(opt->kind, &opt->groups[group].hp, key, value);
}

int gpo_optim_describe(struct gpo_optim *opt, int group, char *buf,
		       size_t len)
{
	if (!opt || (!buf && len))
		return gpo__err(-EINVAL, "NULL argument");
	if (group == -1)
		group = 0;
	if (group < 0 || group >= opt->ngroups)
		return gpo__err(-ENOENT, "no group %d", group);
	return gpo__hparams_describe(opt->kind, &opt->groups[group].hp, buf, len);
}

/* ---- buffers ------------------------------------------------------------ */

int gpo__optim_slot_possible(enum gpo_optim_kind kind, int s)
{
	switch (kind) {
	case GPO_SGD:
		return s == SL_MOMENTUM;
	case GPO_ADAM:
	case GPO_ADAMW:
		return s == SL_EXP_AVG || s == SL_EXP_AVG_SQ ||
		       s == SL_MAX_EXP_AVG_SQ;
	case GPO_RMSPROP:
		return s == SL_SQUARE_AVG || s == SL_MOMENTUM ||
		       s == SL_GRAD_AVG;
	case GPO_ADAGRAD:
		return s == SL_SUM;
	case GPO_LAMB:
		return s == SL_EXP_AVG || s == SL_EXP_AVG_SQ;
	case GPO_LION:
		return s == SL_EXP_AVG;
	default:
		return 0;
	}
}

int gpo__optim_slot_needed(enum gpo_optim_kind kind, const struct hparams *hp,
		      int s)
{
	switch (kind) {
	case GPO_SGD:
		return s == SL_MOMENTUM && hp->momentum != 0;
	case GPO_ADAM:
	case GPO_ADAMW:
		return s == SL_EXP_AVG || s == SL_EXP_AVG_SQ ||
		       (s == SL_MAX_EXP_AVG_SQ && hp->amsgrad);
	case GPO_RMSPROP:
		return s == SL_SQUARE_AVG ||
		       (s == SL_MOMENTUM && hp->momentum > 0) ||
		       (s == SL_GRAD_AVG && hp->centered);
	default:
		return gpo__optim_slot_possible(kind, s);
	}
}

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
	struct kernel_args a = { 0 };

	a.buf[0] = *buf;
	a.n = n;
	a.s[0] = value;
	return opt->dev->ops->launch(opt->dev, K_FILL, &a);
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
		    dt != GPO_F16 && dt != GPO_BF16)
			return gpo__err(-ENOSYS,
				       "%s: sum in %s: no conversion of initial_accumulator_value %g to %s yet",
				       gpo_optim_kind_name(opt->kind),
				       gpo_dtype_name(dt),
				       opt->groups[g].hp.initial_accumulator_value,
				       gpo_dtype_name(dt));
	ret = zero_bytes(opt, &opt->slot[s]);
	for (g = 0; s == SL_SUM && g < opt->ngroups && !ret; g++) {
		const struct optim_group *grp = &opt->groups[g];

		if (grp->numel && grp->hp.initial_accumulator_value != 0)
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
	if (ret)
		gpo__pool_free(opt->dev, &opt->slot[s]);
	return ret;
}

static int ensure_slots(struct gpo_optim *opt)
{
	int s, ret;

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

/* LAMB: cut each tensor into blocks and upload the tables. */
static int build_lamb_tables(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	uint32_t *blocks = NULL, *tb = NULL, nb = 0, b;
	int t, g, ret;

	for (t = 0; t < opt->ntensors; t++)
		nb += div_up(opt->tensors[t].numel, LAMB_BLOCK);
	blocks = calloc(nb ? nb : 1, 16);
	tb = calloc(opt->ntensors ? opt->ntensors : 1, 8);
	if (!blocks || !tb) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	/* blocks in flat order: by group, then tensor */
	b = 0;
	for (g = 0; g < opt->ngroups; g++) {
		opt->groups[g].first_block = b;
		for (t = 0; t < opt->ntensors; t++) {
			const struct optim_tensor *ten = &opt->tensors[t];
			uint64_t done;

			if (ten->group != g)
				continue;
			tb[2 * t] = b;
			tb[2 * t + 1] = div_up(ten->numel, LAMB_BLOCK);
			for (done = 0; done < ten->numel; done += LAMB_BLOCK) {
				uint64_t left = ten->numel - done;

				blocks[4 * b] = t;
				blocks[4 * b + 1] = (uint32_t)(ten->offset + done);
				blocks[4 * b + 2] = left < LAMB_BLOCK ?
						    (uint32_t)left : LAMB_BLOCK;
				b++;
			}
		}
		opt->groups[g].nblocks = b - opt->groups[g].first_block;
	}
	opt->nblocks = nb;
	ret = gpo__pool_alloc(dev, (uint64_t)(nb ? nb : 1) * 16, &opt->blocks);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(opt->ntensors ? opt->ntensors :
					     1) * 8, &opt->tensor_blocks);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(nb ? nb : 1) * 8,
				 &opt->lamb_partials);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(opt->ntensors ? opt->ntensors :
					     1) * 4, &opt->trust);
	if (!ret && nb)
		ret = dev->ops->write(dev, &opt->blocks, 0, blocks,
				      (uint64_t)nb * 16);
	if (!ret && opt->ntensors)
		ret = dev->ops->write(dev, &opt->tensor_blocks, 0, tb,
				      (uint64_t)opt->ntensors * 8);
out_free:
	free(blocks);
	free(tb);
	return ret;
}

/* First use: allocate and initialise every buffer. Device lock held. */
int gpo__optim_ensure_allocated(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	int ret;

	if (opt->allocated)
		return ensure_slots(opt);
	if (!opt->ntensors)
		return gpo__err(-EINVAL, "the optimizer has no tensors");

	opt->norm_groups = div_up(opt->total, 4096);
	if (opt->norm_groups > NORM_MAX_GROUPS)
		opt->norm_groups = NORM_MAX_GROUPS;
	opt->norm_chunk = div_up(opt->total, opt->norm_groups);
	opt->norm_chunk = (opt->norm_chunk + 3) / 4 * 4;

	ret = gpo__pool_alloc(dev, opt->total * gpo_dtype_size(opt->param_dtype),
			      &opt->param);
	if (!ret)
		ret = gpo__pool_alloc(dev,
				      opt->total * gpo_dtype_size(opt->grad_dtype),
				      &opt->grad);
	if (!ret)
		ret = gpo__pool_alloc(dev, 16, &opt->scal);
	if (!ret)
		ret = gpo__pool_alloc(dev, 8ull * opt->norm_groups, &opt->partials);
	if (!ret && opt->kind == GPO_LAMB)
		ret = build_lamb_tables(opt);
	if (ret)
		goto out_free;
	ret = zero_bytes(opt, &opt->param);
	if (!ret)
		ret = zero_bytes(opt, &opt->grad);
	if (ret)
		goto out_free;
	opt->allocated = 1;
	ret = ensure_slots(opt);
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
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	return transfer(opt, 1, slot, tensor, (void *)src, bytes);
}

int gpo_optim_read(struct gpo_optim *opt, const char *slot,
		   const char *tensor, void *dst, size_t bytes)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	return transfer(opt, 0, slot, tensor, dst, bytes);
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
	if (opt->allocated)
		return gpo__err(-EBUSY, "%s: the dtype cannot change after the first use",
			       buffer);
	*field = dt;
	return 0;
}

int gpo_optim_dtype(struct gpo_optim *opt, const char *buffer)
{
	enum gpo_dtype *field;

	if (!opt || !buffer)
		return gpo__err(-EINVAL, "gpo_optim_dtype: NULL argument");
	field = dtype_field(opt, buffer);
	return field ? (int)*field : -ENOENT;
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
	int s;

	if (opt->param_dtype != GPO_F32)
		return no_kernel(what, "param", opt->param_dtype);
	if (opt->grad_dtype != GPO_F32)
		return no_kernel(what, "grad", opt->grad_dtype);
	for (s = 0; slots && s < SL_COUNT; s++)
		if (opt->slot_dtype[s] != GPO_F32 && slot_needed(opt, s))
			return no_kernel(what, gpo__optim_slot_names[s],
					 opt->slot_dtype[s]);
	return 0;
}

/* ---- the step ------------------------------------------------------------ */

static struct dev_buf group_view(const struct dev_buf *buf,
				 const struct optim_group *grp)
{
	struct dev_buf v = *buf;

	if (!v.mem)
		return v;
	v.off += grp->start * 4;
	v.size = grp->numel * 4;
	return v;
}

static double group_lr(const struct gpo_optim *opt,
		       const struct optim_group *grp)
{
	if (opt->sched)
		return gpo__sched_lr_for(opt->sched, grp->hp.lr);
	return grp->hp.lr;
}

/* Fill @a for the element-wise update of @grp at step @t (1-based). */
static enum kernel_id update_args(struct gpo_optim *opt,
				  struct optim_group *grp, uint64_t t,
				  struct kernel_args *a)
{
	const struct hparams *hp = &grp->hp;
	double lr = group_lr(opt, grp);
	enum kernel_id k;

	a->n = (uint32_t)grp->numel;
	a->flags |= hp->maximize ? KF_MAXIMIZE : 0;
	a->buf[0] = group_view(&opt->param, grp);
	a->buf[1] = group_view(&opt->grad, grp);

	switch (opt->kind) {
	case GPO_SGD:
		k = K_SGD;
		a->buf[2] = group_view(&opt->slot[SL_MOMENTUM], grp);
		a->buf[3] = opt->scal;
		a->s[0] = (float)lr;
		a->s[1] = (float)hp->weight_decay;
		a->s[2] = (float)hp->momentum;
		a->s[3] = (float)hp->dampening;
		/*
		 * 1 - x in double, as torch's Python floats: 1 - (float)x
		 * is off by up to 1.3e-5 relative for x = 0.999
		 */
		a->s[4] = (float)(1.0 - hp->dampening);
		if (hp->momentum != 0)
			a->flags |= KF_MOMENTUM |
				    (grp->momentum_started ? 0 : KF_FIRST);
		a->flags |= hp->nesterov ? KF_NESTEROV : 0;
		break;
	case GPO_ADAM:
	case GPO_ADAMW: {
		double bc1 = 1.0 - pow(hp->beta1, (double)t);
		double bc2 = 1.0 - pow(hp->beta2, (double)t);

		k = K_ADAM;
		a->buf[2] = group_view(&opt->slot[SL_EXP_AVG], grp);
		a->buf[3] = group_view(&opt->slot[SL_EXP_AVG_SQ], grp);
		if (hp->amsgrad) {
			a->buf[4] = group_view(&opt->slot[SL_MAX_EXP_AVG_SQ],
					       grp);
			a->flags |= KF_AMSGRAD;
		}
		a->buf[5] = opt->scal;
		a->s[0] = (float)lr;
		a->s[1] = (float)hp->beta1;
		a->s[2] = (float)hp->beta2;
		a->s[3] = (float)hp->eps;
		a->s[4] = (float)hp->weight_decay;
		a->s[5] = (float)(lr / bc1);
		a->s[6] = (float)sqrt(bc2);
		a->s[7] = (float)(1.0 - lr * hp->weight_decay);
		a->s[8] = (float)(1.0 - hp->beta1);
		a->s[9] = (float)(1.0 - hp->beta2);
		if (opt->kind == GPO_ADAMW)
			a->flags |= KF_DECOUPLED;
		break;
	}
	case GPO_RMSPROP:
		k = K_RMSPROP;
		a->buf[2] = group_view(&opt->slot[SL_SQUARE_AVG], grp);
		if (hp->momentum > 0) {
			a->buf[3] = group_view(&opt->slot[SL_MOMENTUM], grp);
			a->flags |= KF_MOMENTUM;
		}
		if (hp->centered) {
			a->buf[4] = group_view(&opt->slot[SL_GRAD_AVG], grp);
			a->flags |= KF_CENTERED;
		}
		a->buf[5] = opt->scal;
		a->s[0] = (float)lr;
		a->s[1] = (float)hp->alpha;
		a->s[2] = (float)hp->eps;
		a->s[3] = (float)hp->weight_decay;
		a->s[4] = (float)hp->momentum;
		a->s[5] = (float)(1.0 - hp->alpha);
		break;
	case GPO_ADAGRAD:
		k = K_ADAGRAD;
		a->buf[2] = group_view(&opt->slot[SL_SUM], grp);
		a->buf[3] = opt->scal;
		a->s[0] = (float)(lr / (1.0 + (double)(t - 1) * hp->lr_decay));
		a->s[1] = (float)hp->weight_decay;
		a->s[2] = (float)hp->eps;
		break;
	case GPO_LION:
	default:
		k = K_LION;
		a->buf[2] = group_view(&opt->slot[SL_EXP_AVG], grp);
		a->buf[3] = opt->scal;
		a->s[0] = (float)lr;
		a->s[1] = (float)hp->beta1;
		a->s[2] = (float)hp->beta2;
		a->s[3] = (float)(1.0 - lr * hp->weight_decay);
		a->s[4] = (float)(1.0 - hp->beta1);
		a->s[5] = (float)(1.0 - hp->beta2);
		break;
	}
	return k;
}

static void lamb_scalars(const struct gpo_optim *opt,
			 const struct optim_group *grp, uint64_t t,
			 struct kernel_args *a)
{
	const struct hparams *hp = &grp->hp;

	a->s[0] = (float)hp->beta1;
	a->s[1] = (float)hp->beta2;
	a->s[2] = (float)hp->eps;
	a->s[3] = (float)hp->weight_decay;
	a->s[4] = (float)(1.0 - pow(hp->beta1, (double)t));
	a->s[5] = (float)(1.0 - pow(hp->beta2, (double)t));
	a->s[6] = (float)(1.0 - hp->beta1);
	a->s[7] = (float)(1.0 - hp->beta2);
	a->aux0 = grp->nblocks;
	a->aux1 = grp->first_block;
	a->flags |= hp->maximize ? KF_MAXIMIZE : 0;
}

/* K_LAMB_PREP or K_LAMB_APPLY for every group that has blocks. */
static int launch_lamb_groups(struct gpo_optim *opt, uint64_t t,
			      uint32_t flags, enum kernel_id k)
{
	struct kernel_args a;
	int g, ret;

	for (g = 0; g < opt->ngroups; g++) {
		struct optim_group *grp = &opt->groups[g];
		int i = 0;

		if (!grp->nblocks)
			continue;
		memset(&a, 0, sizeof(a));
		a.flags = flags;
		lamb_scalars(opt, grp, t, &a);
		a.n = (uint32_t)opt->total;
		a.buf[i++] = opt->param;
		if (k == K_LAMB_PREP)
			a.buf[i++] = opt->grad;
		else
			a.s[0] = (float)group_lr(opt, grp);
		a.buf[i++] = opt->slot[SL_EXP_AVG];
		a.buf[i++] = opt->slot[SL_EXP_AVG_SQ];
		a.buf[i++] = opt->blocks;
		a.buf[i++] = k == K_LAMB_PREP ? opt->lamb_partials : opt->trust;
		a.buf[i++] = opt->scal;
		ret = opt->dev->ops->launch(opt->dev, k, &a);
		if (ret)
			return ret;
	}
	return 0;
}

/* LAMB: moments and norms per block, trust per tensor, then the update. */
static int launch_lamb(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct kernel_args a = { 0 };
	int ret;

	ret = launch_lamb_groups(opt, t, flags, K_LAMB_PREP);
	if (ret)
		return ret;
	a.flags = flags;
	a.n = (uint32_t)opt->ntensors;
	a.buf[0] = opt->tensor_blocks;
	a.buf[1] = opt->lamb_partials;
	a.buf[2] = opt->trust;
	a.buf[3] = opt->scal;
	ret = opt->dev->ops->launch(opt->dev, K_LAMB_TRUST, &a);
	if (ret)
		return ret;
	return launch_lamb_groups(opt, t, flags, K_LAMB_APPLY);
}

/* Queue the norm reduction; the update kernels then read scal. */
static int launch_norm(struct gpo_optim *opt, const struct hparams *hp)
{
	const struct backend_ops *ops = opt->dev->ops;
	struct kernel_args a = { 0 };
	int ret;

	a.n = (uint32_t)opt->total;
	a.aux0 = opt->norm_groups;
	a.aux1 = opt->norm_chunk;
	a.buf[0] = opt->grad;
	a.buf[1] = opt->partials;
	ret = ops->launch(opt->dev, K_NORM_PARTIAL, &a);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.aux0 = opt->norm_groups;
	a.buf[0] = opt->partials;
	a.buf[1] = opt->scal;
	a.s[0] = (float)(1.0 / hp->grad_scale);
	a.s[1] = (float)hp->clip_norm;
	if (hp->check_finite || hp->grad_scale != 1.0)
		a.flags |= KF_CHECK_FINITE;
	return ops->launch(opt->dev, K_NORM_FINAL, &a);
}

static int launch_step(struct gpo_optim *opt, uint64_t t, int use_norm)
{
	struct kernel_args a;
	uint32_t flags = use_norm ? KF_USE_SCAL : 0;
	enum kernel_id k;
	int g, ret;

	if (use_norm) {
		ret = launch_norm(opt, &opt->groups[0].hp);
		if (ret)
			return ret;
	}
	if (opt->kind == GPO_LAMB)
		return launch_lamb(opt, t, flags);
	for (g = 0; g < opt->ngroups; g++) {
		struct optim_group *grp = &opt->groups[g];

		if (!grp->numel)
			continue;
		memset(&a, 0, sizeof(a));
		a.flags = flags;
		k = update_args(opt, grp, t, &a);
		ret = opt->dev->ops->launch(opt->dev, k, &a);
		if (ret)
			return ret;
	}
	return 0;
}

int gpo_optim_step(struct gpo_optim *opt, struct gpo_step_info *info)
{
	struct gpo_device *dev;
	const struct hparams *hp;
	float scal[4] = { 1.0f, 0.0f, NAN, 0.0f };
	uint64_t ns = 0;
	int use_norm, skipped, g, ret;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	ret = check_f32(opt, gpo_optim_kind_name(opt->kind), 1);
	if (ret)
		return ret;
	dev = opt->dev;
	hp = &opt->groups[0].hp;
	use_norm = hp->clip_norm > 0 || hp->grad_scale != 1.0 ||
		   hp->check_finite;

	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	if (ret)
		goto out_unlock;
	ret = launch_step(opt, opt->step + 1, use_norm);
	if (!ret && use_norm)
		ret = dev->ops->read(dev, &opt->scal, 0, scal, sizeof(scal));
	if (!ret)
		ret = dev->ops->wait(dev, &ns);
	if (ret)
		goto out_unlock;

	skipped = use_norm && scal[1] != 0.0f;
	if (skipped) {
		opt->skipped++;
	} else {
		opt->step++;
		for (g = 0; g < opt->ngroups; g++)
			if (opt->groups[g].hp.momentum != 0)
				opt->groups[g].momentum_started = 1;
	}
	if (info) {
		info->step = opt->step;
		info->skipped_total = opt->skipped;
		info->lr = group_lr(opt, &opt->groups[0]);
		info->grad_norm = use_norm ? scal[2] : NAN;
		info->skipped = skipped;
		info->device_ns = ns;
	}
	/*
	 * The step is done whatever the schedule says: past onecycle's
	 * total_steps (-ERANGE) the lr stays; a plateau without a metric
	 * (-EINVAL) does not count the step.
	 */
	if (!skipped && opt->sched)
		gpo_sched_step(opt->sched, opt->metric);
	gpo__err_clear();
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_optim_objective(struct gpo_optim *opt, const char *name,
			double *loss)
{
	struct kernel_args a = { 0 };
	struct gpo_device *dev;
	float *part = NULL;
	enum kernel_id k;
	double sum = 0;
	uint32_t i;
	int ret;

	if (!opt || !name || !loss)
		return gpo__err(-EINVAL, "NULL argument");
	if (!strcmp(name, "quadratic"))
		k = K_OBJ_QUADRATIC;
	else if (!strcmp(name, "rosenbrock"))
		k = K_OBJ_ROSENBROCK;
	else
		return gpo__err(-EINVAL, "unknown objective '%s' (quadratic, rosenbrock)",
			       name);
	if (opt->ngroups != 1)
		return gpo__err(-EINVAL, "objectives need a single parameter group");
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
	a.aux0 = opt->norm_groups;
	a.aux1 = opt->norm_chunk;
	a.buf[0] = opt->param;
	a.buf[1] = opt->grad;
	a.buf[2] = opt->partials;
	ret = dev->ops->launch(dev, k, &a);
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

uint64_t gpo_optim_steps_done(struct gpo_optim *opt)
{
	return opt ? opt->step : 0;
}

uint64_t gpo_optim_steps_skipped(struct gpo_optim *opt)
{
	return opt ? opt->skipped : 0;
}

int gpo_optim_set_step(struct gpo_optim *opt, uint64_t step)
{
	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	opt->step = step;
	return 0;
}

int gpo_optim_reset(struct gpo_optim *opt)
{
	struct gpo_device *dev;
	int s, g, ret = 0;

	if (!opt)
		return gpo__err(-EINVAL, "NULL optimizer");
	dev = opt->dev;
	pthread_mutex_lock(&dev->lock);
	if (opt->allocated) {
		for (s = 0; s < SL_COUNT && !ret; s++)
			if (opt->slot[s].mem)
				ret = init_slot(opt, s);
		if (!ret)
			ret = dev->ops->wait(dev, NULL);
	}
	if (!ret) {
		opt->step = 0;
		opt->skipped = 0;
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
