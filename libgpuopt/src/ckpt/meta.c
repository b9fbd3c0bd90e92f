// SPDX-License-Identifier: MIT
/*
 * meta.c - gpuopt's metadata in a safetensors header: the version, the
 * optimizer and its groups' hyperparameters, the step and schedule, a
 * checksum per tensor and one over the header itself; and the checkpoint
 * reader that checks a whole file (safetensors.c's format, then this)
 * before anything reads tensor data.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* header-only: no libxxhash at run time on machines that lack it */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "ckpt/ckpt_i.h"

static int nomem(void)
{
	return gpo__err(-ENOMEM, "out of memory");
}

static const char *need_meta(const struct ckpt *ck, const char *key)
{
	const char *v = gpo__ckpt_find_meta(ck, key);

	if (!v)
		gpo__err(-ENODATA, "metadata '%s' is missing", key);
	return v;
}

static json_t *load_meta_json(const struct ckpt *ck, const char *key,
			      const char *text, int *ret)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);

	*ret = 0;
	if (!j)
		*ret = gpo__err(-EPROTO, "metadata '%s' is not JSON: %s", key,
			       e.text);
	return j;
}

/* One hyperparameter from JSON into @hp, through hparam.c's parser. */
static int set_hparam(const struct ckpt *ck, int g, struct hparams *hp,
		      const char *key, json_t *v)
{
	char text[64];
	int global;

	if (json_is_integer(v))
		snprintf(text, sizeof(text), "%lld",
			 (long long)json_integer_value(v));
	else if (json_is_real(v))
		gpo__snprintf(text, sizeof(text), "%.17g", json_real_value(v));
	else
		return gpo__err(-EPROTO, "group %d: hparam '%.64s' is not a number",
			       g, key);
	if (!strcmp(key, "betas") ||
	    gpo__hparams_set(ck->kind, hp, key, text, &global))
		return gpo__err(-EPROTO, "group %d: %.64s=%s: not a %s hyperparameter",
			       g, key, text, gpo_optim_kind_name(ck->kind));
	return 0;
}

static int parse_group_tensors(struct ckpt_group *grp, int g, json_t *v)
{
	size_t i;

	if (!json_is_array(v))
		return gpo__err(-EPROTO, "group %d: tensors is not an array", g);
	grp->tensors = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!grp->tensors)
		return nomem();
	for (i = 0; i < json_array_size(v); i++) {
		const char *s = json_string_value(json_array_get(v, i));

		if (!s)
			return gpo__err(-EPROTO, "group %d: tensors[%zu] is not a string",
				       g, i);
		grp->tensors[i] = strdup(s);
		if (!grp->tensors[i])
			return nomem();
		grp->ntensors++;
	}
	return 0;
}

static int parse_group(struct ckpt *ck, int g, json_t *v)
{
	struct ckpt_group *grp = &ck->groups[g];
	json_t *hp, *tensors, *ms, *x;
	const char *key;
	int ret;

	hp = json_object_get(v, "hparams");
	tensors = json_object_get(v, "tensors");
	ms = json_object_get(v, "momentum_started");
	if (!json_is_object(v) || !json_is_object(hp) || !tensors ||
	    !json_is_boolean(ms) || json_object_size(v) != 3)
		return gpo__err(-EPROTO,
			       "group %d must have exactly hparams, tensors and momentum_started",
			       g);
	grp->momentum_started = json_is_true(ms);
	gpo__hparams_defaults(ck->kind, &grp->hp);
	json_object_foreach(hp, key, x) {
		ret = set_hparam(ck, g, &grp->hp, key, x);
		if (ret)
			return ret;
	}
	if (gpo__hparams_validate(ck->kind, &grp->hp))
		return gpo__err_prefix(-EPROTO, "group %d", g);
	return parse_group_tensors(grp, g, tensors);
}

static int parse_groups(struct ckpt *ck, const char *text)
{
	json_t *j;
	size_t i;
	int ret;

	j = load_meta_json(ck, CKPT_META_GROUPS, text, &ret);
	if (!j)
		return ret;
	if (!json_is_array(j) || json_array_size(j) < 1 ||
	    json_array_size(j) > 1u << 16) {
		ret = gpo__err(-EPROTO, "metadata '%s' is not an array of 1..65536 groups",
			      CKPT_META_GROUPS);
		goto out_put;
	}
	ck->groups = calloc(json_array_size(j), sizeof(*ck->groups));
	if (!ck->groups) {
		ret = nomem();
		goto out_put;
	}
	for (i = 0; i < json_array_size(j) && !ret; i++) {
		ck->ngroups++;
		ret = parse_group(ck, (int)i, json_array_get(j, i));
	}
out_put:
	json_decref(j);
	return ret;
}

/*
 * Checksums name their tensors: look them up in an index sorted by name,
 * so a header of n tensors costs n log n, not n^2 (120 000 tensors took
 * 35 s with a linear search each).
 */
struct name_index {
	const struct ckpt *ck;
	int *order;
};

static int cmp_names(const void *a, const void *b, void *arg)
{
	const struct ckpt *ck = arg;

	return strcmp(ck->t[*(const int *)a].name, ck->t[*(const int *)b].name);
}

static int index_names(const struct ckpt *ck, struct name_index *ix)
{
	int i;

	ix->ck = ck;
	ix->order = malloc((ck->ntensors ? ck->ntensors : 1) * sizeof(int));
	if (!ix->order)
		return nomem();
	for (i = 0; i < ck->ntensors; i++)
		ix->order[i] = i;
	/* ck->t stays in offset order: sort indices, not the tensors */
	qsort_r(ix->order, ck->ntensors, sizeof(int), cmp_names, (void *)ck);
	return 0;
}

static int find_tensor(const struct name_index *ix, const char *name)
{
	int lo = 0, hi = ix->ck->ntensors, mid, c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(ix->ck->t[ix->order[mid]].name, name);
		if (!c)
			return ix->order[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int parse_hex64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	if (s[16])
		return -1;
	*out = v;
	return 0;
}

static int parse_checksums(struct ckpt *ck, const char *text)
{
	struct name_index ix = { 0 };
	const char *key;
	json_t *j, *v;
	int i, ret;

	j = load_meta_json(ck, CKPT_META_XXH64, text, &ret);
	if (!j)
		return ret;
	ret = index_names(ck, &ix);
	if (ret)
		goto out_put;
	if (!json_is_object(j)) {
		ret = gpo__err(-EPROTO, "metadata '%s' is not an object",
			      CKPT_META_XXH64);
		goto out_put;
	}
	json_object_foreach(j, key, v) {
		const char *s = json_string_value(v);

		i = find_tensor(&ix, key);
		if (i < 0) {
			ret = gpo__err(-EPROTO, "checksum for '%.200s', which is no tensor",
				      key);
			goto out_put;
		}
		if (!s || parse_hex64(s, &ck->t[i].sum)) {
			ret = gpo__err(-EPROTO,
				      "checksum of '%.200s' is not 16 lower-case hex digits",
				      key);
			goto out_put;
		}
		ck->t[i].has_sum = 1;
	}
out_put:
	free(ix.order);
	json_decref(j);
	return ret;
}

static int parse_count(const char *key, const char *text, uint64_t *out)
{
	if (gpo__parse_u64(text, out))
		return gpo__err(-EPROTO, "metadata '%s' = '%.40s' is not a count",
			       key, text);
	return 0;
}

/* ---- precision and loss scale ------------------------------------------ */

/* the buffer names of ckpt.prec[]: param, grad, then the slots */
static const char *prec_name(int i)
{
	return i == 0 ? "param" : i == 1 ? "grad" :
	       gpo__optim_slot_names[i - 2];
}

static int opt_dtype(const struct gpo_optim *opt, int i)
{
	return i == 0 ? (int)opt->param_dtype : i == 1 ?
	       (int)opt->grad_dtype : (int)opt->slot_dtype[i - 2];
}

/* does some group of @opt use slot @s? */
static int slot_used(const struct gpo_optim *opt, int s)
{
	int g;

	for (g = 0; g < opt->ngroups; g++)
		if (gpo__optim_slot_needed(opt->kind, &opt->groups[g].hp, s))
			return 1;
	return 0;
}

int gpo__ckpt_meta_precision(const struct gpo_optim *opt, json_t *meta)
{
	json_t *prec = json_object();
	char num[32], *text;
	int i, bad = !prec;

	for (i = 0; i < 2 + SL_COUNT && !bad; i++) {
		if (i >= 2 && !slot_used(opt, i - 2))
			continue;
		bad = json_object_set_new(prec, prec_name(i),
				json_string(gpo_dtype_name(opt_dtype(opt, i))));
	}
	text = bad ? NULL : json_dumps(prec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(prec);
	if (!text || json_object_set_new(meta, CKPT_META_PRECISION,
					 json_string(text))) {
		free(text);
		return -ENOMEM;
	}
	free(text);
	/* as a float prints back exactly: 9 digits */
	snprintf(num, sizeof(num), "%.9g", opt->ls_saved);
	if (json_object_set_new(meta, CKPT_META_LOSS_SCALE, json_string(num)))
		return -ENOMEM;
	snprintf(num, sizeof(num), "%" PRIu64, opt->ls_saved_good);
	if (json_object_set_new(meta, CKPT_META_LOSS_GOOD, json_string(num)))
		return -ENOMEM;
	return 0;
}

/* the optional loss scale: both keys or neither, a float > 0, a count */
static int parse_loss(struct ckpt *ck)
{
	const char *s = gpo__ckpt_find_meta(ck, CKPT_META_LOSS_SCALE);
	const char *g = gpo__ckpt_find_meta(ck, CKPT_META_LOSS_GOOD);
	const struct hparams *hp = &ck->groups[0].hp;
	double v;
	int ret;

	if (!s && !g)
		return 0;
	if (!s || !g)
		return gpo__err(-EPROTO, "metadata '%s' without '%s'",
				s ? CKPT_META_LOSS_SCALE : CKPT_META_LOSS_GOOD,
				s ? CKPT_META_LOSS_GOOD : CKPT_META_LOSS_SCALE);
	if (gpo__parse_double(s, &v) || !(v > 0) || !isfinite((float)v) ||
	    (double)(float)v != v)
		return gpo__err(-EPROTO, "metadata '%s' = '%.40s' is not a positive float",
				CKPT_META_LOSS_SCALE, s);
	ret = parse_count(CKPT_META_LOSS_GOOD, g, &ck->loss_good);
	if (ret)
		return ret;
	/* the counter stays below growth_interval and exact in a float */
	if (ck->loss_good >= (uint64_t)hp->growth_interval &&
	    hp->loss_scale == 0)
		return gpo__err(-EPROTO, "metadata '%s' = %s: not below growth_interval %g",
				CKPT_META_LOSS_GOOD, g, hp->growth_interval);
	if (ck->loss_good > (1u << 24))
		return gpo__err(-EPROTO, "metadata '%s' = %s: too large",
				CKPT_META_LOSS_GOOD, g);
	ck->has_loss = 1;
	ck->loss_scale = (float)v;
	return 0;
}

/* the optional precision mode: an object of known buffers and dtypes */
static int parse_precision(struct ckpt *ck)
{
	const char *text = gpo__ckpt_find_meta(ck, CKPT_META_PRECISION);
	const char *key;
	json_t *j, *x;
	int i, dt, ret;

	if (!text)
		return 0;
	j = load_meta_json(ck, CKPT_META_PRECISION, text, &ret);
	if (!j)
		return ret;
	if (!json_is_object(j)) {
		ret = gpo__err(-EPROTO, "metadata '%s' is not an object",
			       CKPT_META_PRECISION);
		goto out_put;
	}
	for (i = 0; i < 2 + SL_COUNT; i++)
		ck->prec[i] = -1;
	json_object_foreach(j, key, x) {
		for (i = 0; i < 2 + SL_COUNT; i++)
			if (!strcmp(key, prec_name(i)))
				break;
		dt = json_is_string(x) ? gpo_dtype_parse(json_string_value(x)) :
		     -1;
		if (i == 2 + SL_COUNT || dt < 0) {
			ret = gpo__err(-EPROTO, "metadata '%s': '%.40s' is not a buffer and a dtype",
				       CKPT_META_PRECISION, key);
			goto out_put;
		}
		ck->prec[i] = dt;
	}
	ck->has_prec = 1;
out_put:
	json_decref(j);
	return ret;
}

int gpo__ckpt_check_precision(const struct ckpt *ck,
			      const struct gpo_optim *opt)
{
	int i;

	if (!ck->has_prec)
		return 0;
	for (i = 0; i < 2 + SL_COUNT; i++) {
		if (ck->prec[i] < 0 || (i >= 2 && !slot_used(opt, i - 2)))
			continue;
		if (ck->prec[i] != opt_dtype(opt, i))
			return gpo__err(-EINVAL, "the checkpoint's %s is %s, the optimizer's %s: set its dtype to restore it",
					prec_name(i),
					gpo_dtype_name(ck->prec[i]),
					gpo_dtype_name(opt_dtype(opt, i)));
	}
	return 0;
}

int gpo__ckpt_apply_loss(const struct ckpt *ck, struct gpo_optim *opt)
{
	if (!ck->has_loss) {
		/* an older file: the restored setting starts afresh */
		opt->ls_reset = 1;
		return gpo__optim_ensure_allocated(opt);
	}
	return gpo__optim_set_loss_state(opt, ck->loss_scale, ck->loss_good);
}

static int parse_gpuopt(struct ckpt *ck)
{
	const char *v, *kind, *groups, *step, *skipped, *sums;
	int k, ret;

	v = gpo__ckpt_find_meta(ck, CKPT_META_VERSION);
	if (strcmp(v, CKPT_FORMAT_VERSION))
		return gpo__err(-EPROTONOSUPPORT,
			       "gpuopt checkpoint format '%.20s' (this library reads '%s')",
			       v, CKPT_FORMAT_VERSION);
	if (!(kind = need_meta(ck, CKPT_META_KIND)) ||
	    !(groups = need_meta(ck, CKPT_META_GROUPS)) ||
	    !(step = need_meta(ck, CKPT_META_STEP)) ||
	    !(skipped = need_meta(ck, CKPT_META_SKIPPED)) ||
	    !(sums = need_meta(ck, CKPT_META_XXH64)))
		return -ENODATA;
	k = gpo_optim_kind_parse(kind);
	if (k < 0)
		return gpo__err(-EPROTO, "metadata '%s': unknown optimizer '%.20s'",
			       CKPT_META_KIND, kind);
	ck->kind = k;
	ck->gpuopt = 1;
	ret = parse_count(CKPT_META_STEP, step, &ck->step);
	/* as gpo_optim_set_step(): the next step, step + 1, must exist */
	if (!ret && ck->step == UINT64_MAX)
		ret = gpo__err(-EOVERFLOW, "metadata '%s' = %s: no step can follow it",
			       CKPT_META_STEP, step);
	if (!ret)
		ret = parse_count(CKPT_META_SKIPPED, skipped, &ck->skipped);
	if (!ret)
		ret = parse_groups(ck, groups);
	if (!ret)
		ret = parse_checksums(ck, sums);
	if (ret)
		return ret;
	v = gpo__ckpt_find_meta(ck, CKPT_META_SCHED);
	if (v && !(ck->sched = strdup(v)))
		return nomem();
	ret = parse_loss(ck);
	return ret ? ret : parse_precision(ck);
}

/* Strict mode: gpuopt metadata and every checksum must be there. */
static int check_complete(const struct ckpt *ck, unsigned int flags)
{
	int i;

	if (flags & GPO_CKPT_FOREIGN)
		return 0;
	if (!ck->gpuopt)
		return gpo__err(-ENODATA,
			       "no gpuopt metadata (not written by gpuopt; GPO_CKPT_FOREIGN reads it)");
	for (i = 0; i < ck->ntensors; i++)
		if (!ck->t[i].has_sum)
			return gpo__err(-ENODATA, "tensor '%.200s' has no checksum",
				       ck->t[i].name);
	return 0;
}

/*
 * Strict mode: only the dtypes gpuopt writes. A foreign file may hold any
 * (gpo_ckpt_open() lists them); restore then refuses what fits no buffer.
 */
static int check_dtypes(const struct ckpt *ck, unsigned int flags)
{
	int i, d;

	if (flags & GPO_CKPT_FOREIGN)
		return 0;
	for (i = 0; i < ck->ntensors; i++) {
		for (d = 0; d < GPO_DTYPES; d++)
			if (ck->t[i].dtype == gpo__ckpt_file_dtype[d])
				break;
		if (d == GPO_DTYPES)
			return gpo__err(-EPROTO,
				       "tensor '%.200s' is %s, not a dtype gpuopt writes (F32 F16 BF16 U8 I32 I64)",
				       ck->t[i].name,
				       gpo__ckpt_dtype_names[ck->t[i].dtype]);
	}
	return 0;
}

/* ---- the header's own checksum ------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of @obj but @skip, sorted; NULL on no memory. */
static const char **sorted_keys(json_t *obj, const char *skip, size_t *n)
{
	const char **keys, *key;
	json_t *v;

	*n = 0;
	keys = malloc((json_object_size(obj) + 1) * sizeof(char *));
	if (!keys)
		return NULL;
	json_object_foreach(obj, key, v)
		if (strcmp(key, skip))
			keys[(*n)++] = key;
	qsort(keys, *n, sizeof(char *), cmp_str);
	return keys;
}

/* NULL (a value of the wrong type: not in a checked header) hashes as "" */
static void hash_str(XXH64_state_t *st, const char *s)
{
	if (!s)
		s = "";
	XXH64_update(st, s, strlen(s) + 1);
}

static void hash_tensor(XXH64_state_t *st, const char *name, json_t *t)
{
	json_t *shape = json_object_get(t, "shape");
	char num[32];
	size_t i;

	hash_str(st, name);
	hash_str(st, json_string_value(json_object_get(t, "dtype")));
	for (i = 0; i < json_array_size(shape); i++) {
		json_int_t d = json_integer_value(json_array_get(shape, i));

		snprintf(num, sizeof(num), i ? ",%lld" : "%lld", (long long)d);
		XXH64_update(st, num, strlen(num));
	}
	XXH64_update(st, "", 1);
}

int gpo__ckpt_header_sum(json_t *root, uint64_t *sum)
{
	json_t *meta = json_object_get(root, "__metadata__");
	const char **keys;
	XXH64_state_t st;
	size_t i, n;

	XXH64_reset(&st, 0);
	if (meta) {
		keys = sorted_keys(meta, CKPT_META_HDR_XXH64, &n);
		if (!keys)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			hash_str(&st, keys[i]);
			hash_str(&st, json_string_value(json_object_get(meta,
								keys[i])));
		}
		free(keys);
	}
	keys = sorted_keys(root, "__metadata__", &n);
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		hash_tensor(&st, keys[i], json_object_get(root, keys[i]));
	free(keys);
	*sum = XXH64_digest(&st);
	return 0;
}


/* A gpuopt header must carry its checksum (a foreign one may). */
static int check_header_sum(const struct ckpt *ck, json_t *root,
			    unsigned int flags)
{
	const char *v = gpo__ckpt_find_meta(ck, CKPT_META_HDR_XXH64);
	uint64_t want, got;

	if (flags & CKPT_NO_HEADER_SUM)
		return 0;
	if (!v && (flags & GPO_CKPT_FOREIGN || !gpo__ckpt_find_meta(ck,
							CKPT_META_VERSION)))
		return 0;
	if (!v)
		return gpo__err(-ENODATA, "metadata '%s' is missing",
			       CKPT_META_HDR_XXH64);
	if (parse_hex64(v, &want))
		return gpo__err(-EPROTO, "metadata '%s' is not 16 hex digits",
			       CKPT_META_HDR_XXH64);
	if (gpo__ckpt_header_sum(root, &got))
		return nomem();
	if (got != want)
		return gpo__err(-EBADE, "the header does not match its checksum "
			       "(%016" PRIx64 ", stored %016" PRIx64 ")", got, want);
	return 0;
}
/* ---- the checkpoint reader --------------------------------------------- */

static int parse_root(struct ckpt *ck, const char *json, uint64_t hlen,
		      unsigned int flags)
{
	json_t *root;
	int ret;

	ret = gpo__st_parse(ck, json, hlen, &root);
	if (ret)
		return ret;
	ret = check_header_sum(ck, root, flags);
	json_decref(root);
	if (!ret && gpo__ckpt_find_meta(ck, CKPT_META_VERSION))
		ret = parse_gpuopt(ck);
	if (!ret)
		ret = check_complete(ck, flags);
	if (!ret)
		ret = check_dtypes(ck, flags);
	return ret;
}

int gpo__ckpt_parse(const char *json, uint64_t hlen, uint64_t file_size,
	       unsigned int flags, struct ckpt **out)
{
	struct ckpt *ck;
	int ret;

	if (hlen < 2 || hlen > CKPT_MAX_HEADER || file_size < 8 + hlen)
		return gpo__err(-EBADMSG, "bad header length %" PRIu64, hlen);
	ck = calloc(1, sizeof(*ck));
	if (!ck)
		return nomem();
	ck->file_size = file_size;
	ck->header_len = hlen;
	ck->data_start = 8 + hlen;
	ck->data_len = file_size - ck->data_start;
	ret = parse_root(ck, json, hlen, flags);
	if (ret) {
		gpo__ckpt_free(ck);
		return ret;
	}
	*out = ck;
	return 0;
}

int gpo__ckpt_check_mem(const void *file, size_t len, unsigned int flags,
		   struct ckpt **out)
{
	const char *base = file;
	struct ckpt *ck;
	uint64_t hlen, sum;
	int i, ret;

	if (len < 8)
		return gpo__err(-EBADMSG, "%zu bytes: shorter than the 8-byte header length",
			       len);
	ret = gpo__ckpt_parse_len(base, len, &hlen);
	if (!ret)
		ret = gpo__ckpt_parse(base + 8, hlen, len, flags, &ck);
	if (ret)
		return ret;
	for (i = 0; i < ck->ntensors; i++) {
		struct ckpt_tensor *t = &ck->t[i];

		if (!t->has_sum)
			continue;
		sum = XXH64(base + ck->data_start + t->begin,
			    t->end - t->begin, 0);
		t->verified = sum == t->sum ? 1 : -EBADE;
		if (t->verified < 0 && !ret)
			ret = gpo__err(-EBADE, "tensor '%.200s': checksum mismatch",
				      t->name);
	}
	if (out && !ret)
		*out = ck;
	else
		gpo__ckpt_free(ck);
	return ret;
}
