// SPDX-License-Identifier: MIT
/*
 * safetensors.c - the strict reader: a header is parsed and checked as a
 * whole (JSON, entries, dtypes, shapes, offsets, file length, gpuopt
 * metadata) before anything reads tensor data. Works from memory, so that
 * the fuzz harness runs exactly this code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* header-only: no libxxhash at run time on machines that lack it */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "ckpt/ckpt_i.h"

const char *const gpo__ckpt_dtype_names[DT_COUNT] = {
	[DT_BOOL] = "BOOL", [DT_U8] = "U8", [DT_I8] = "I8",
	[DT_F8_E5M2] = "F8_E5M2", [DT_F8_E4M3] = "F8_E4M3",
	[DT_I16] = "I16", [DT_U16] = "U16", [DT_F16] = "F16",
	[DT_BF16] = "BF16", [DT_I32] = "I32", [DT_U32] = "U32",
	[DT_F32] = "F32", [DT_I64] = "I64", [DT_U64] = "U64",
	[DT_F64] = "F64",
};

const enum ckpt_dtype gpo__ckpt_file_dtype[GPO_DTYPES] = {
	[GPO_F32] = DT_F32, [GPO_F16] = DT_F16, [GPO_BF16] = DT_BF16,
	[GPO_U8] = DT_U8, [GPO_I32] = DT_I32, [GPO_I64] = DT_I64,
};

static const unsigned int dtype_size[DT_COUNT] = {
	[DT_BOOL] = 1, [DT_U8] = 1, [DT_I8] = 1, [DT_F8_E5M2] = 1,
	[DT_F8_E4M3] = 1, [DT_I16] = 2, [DT_U16] = 2, [DT_F16] = 2,
	[DT_BF16] = 2, [DT_I32] = 4, [DT_U32] = 4, [DT_F32] = 4,
	[DT_I64] = 8, [DT_U64] = 8, [DT_F64] = 8,
};

int gpo__ckpt_parse_len(const void *le8, uint64_t file_size, uint64_t *hlen)
{
	const unsigned char *b = le8;
	uint64_t n = 0;
	int i;

	for (i = 7; i >= 0; i--)
		n = n << 8 | b[i];
	if (n > CKPT_MAX_HEADER)
		return gpo__err(-E2BIG, "header length %" PRIu64
			       " is over the limit of %llu bytes", n,
			       CKPT_MAX_HEADER);
	if (n < 2)
		return gpo__err(-EBADMSG, "header length %" PRIu64
			       " is too short for a JSON object", n);
	if (file_size < 8 || n > file_size - 8)
		return gpo__err(-EBADMSG, "header length %" PRIu64
			       " reaches past the end of the %" PRIu64
			       "-byte file (truncated?)", n, file_size);
	*hlen = n;
	return 0;
}

void gpo__ckpt_free(struct ckpt *ck)
{
	int i, j;

	if (!ck)
		return;
	for (i = 0; i < ck->ntensors; i++)
		free(ck->t[i].name);
	free(ck->t);
	for (i = 0; i < ck->nmeta; i++) {
		free(ck->meta_key[i]);
		free(ck->meta_val[i]);
	}
	free(ck->meta_key);
	free(ck->meta_val);
	for (i = 0; i < ck->ngroups; i++) {
		for (j = 0; j < ck->groups[i].ntensors; j++)
			free(ck->groups[i].tensors[j]);
		free(ck->groups[i].tensors);
	}
	free(ck->groups);
	free(ck->sched);
	free(ck);
}

const char *gpo__ckpt_find_meta(const struct ckpt *ck, const char *key)
{
	int i;

	for (i = 0; i < ck->nmeta; i++)
		if (!strcmp(ck->meta_key[i], key))
			return ck->meta_val[i];
	return NULL;
}

static int nomem(void)
{
	return gpo__err(-ENOMEM, "out of memory");
}

/* ---- tensor entries ------------------------------------------------------ */

static int parse_dtype(const char *name, json_t *v, enum ckpt_dtype *out)
{
	const char *s = json_string_value(v);
	int i;

	if (!s)
		return gpo__err(-EPROTO, "tensor '%.200s': dtype is not a string",
			       name);
	for (i = 0; i < DT_COUNT; i++) {
		if (!strcmp(s, gpo__ckpt_dtype_names[i])) {
			*out = i;
			return 0;
		}
	}
	return gpo__err(-EPROTO, "tensor '%.200s': unknown dtype '%.32s'", name,
		       s);
}

/* A non-negative JSON integer; JSON reals, even 2.0, are not integers. */
static int get_uint(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_shape(const char *name, json_t *v, struct ckpt_tensor *t)
{
	size_t i;

	if (!json_is_array(v))
		return gpo__err(-EPROTO, "tensor '%.200s': shape is not an array",
			       name);
	if (json_array_size(v) > CKPT_MAX_DIMS)
		return gpo__err(-EPROTO, "tensor '%.200s': %zu dimensions (at most %d)",
			       name, json_array_size(v), CKPT_MAX_DIMS);
	t->ndim = (int)json_array_size(v);
	for (i = 0; i < json_array_size(v); i++)
		if (get_uint(json_array_get(v, i), &t->shape[i]))
			return gpo__err(-EPROTO,
				       "tensor '%.200s': shape[%zu] is not a non-negative integer",
				       name, i);
	return 0;
}

static int parse_offsets(const char *name, json_t *v, struct ckpt_tensor *t)
{
	if (!json_is_array(v) || json_array_size(v) != 2 ||
	    get_uint(json_array_get(v, 0), &t->begin) ||
	    get_uint(json_array_get(v, 1), &t->end))
		return gpo__err(-EPROTO,
			       "tensor '%.200s': data_offsets is not [begin, end]",
			       name);
	if (t->begin > t->end)
		return gpo__err(-EBADMSG,
			       "tensor '%.200s': data_offsets [%" PRIu64 ", %" PRIu64
			       "] end before they begin", name, t->begin, t->end);
	return 0;
}

/* The byte span must be exactly the shape's element count * dtype size. */
static int check_span(const struct ckpt_tensor *t)
{
	uint64_t n = dtype_size[t->dtype];
	int i;

	for (i = 0; i < t->ndim; i++) {
		if (t->shape[i] && n > UINT64_MAX / t->shape[i])
			return gpo__err(-EBADMSG, "tensor '%.200s': shape overflows",
				       t->name);
		n *= t->shape[i];
	}
	if (n != t->end - t->begin)
		return gpo__err(-EBADMSG,
			       "tensor '%.200s': %s shape needs %" PRIu64
			       " bytes, data_offsets span %" PRIu64, t->name,
			       gpo__ckpt_dtype_names[t->dtype], n, t->end - t->begin);
	return 0;
}

static int parse_tensor(const char *name, json_t *v, struct ckpt_tensor *t)
{
	json_t *dtype, *shape, *offs;
	int ret;

	if (!json_is_object(v))
		return gpo__err(-EPROTO, "tensor '%.200s' is not an object", name);
	dtype = json_object_get(v, "dtype");
	shape = json_object_get(v, "shape");
	offs = json_object_get(v, "data_offsets");
	if (!dtype || !shape || !offs || json_object_size(v) != 3)
		return gpo__err(-EPROTO,
			       "tensor '%.200s' must have exactly dtype, shape and data_offsets",
			       name);
	t->name = strdup(name);
	if (!t->name)
		return nomem();
	ret = parse_dtype(name, dtype, &t->dtype);
	if (!ret)
		ret = parse_shape(name, shape, t);
	if (!ret)
		ret = parse_offsets(name, offs, t);
	if (!ret)
		ret = check_span(t);
	return ret;
}

static int cmp_offsets(const void *a, const void *b)
{
	const struct ckpt_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

/* Sorted by offset, the tensors must tile the data exactly. */
static int check_layout(struct ckpt *ck)
{
	uint64_t pos = 0;
	int i;

	qsort(ck->t, ck->ntensors, sizeof(*ck->t), cmp_offsets);
	for (i = 0; i < ck->ntensors; i++) {
		const struct ckpt_tensor *t = &ck->t[i];

		if (t->begin > pos)
			return gpo__err(-EBADMSG,
				       "gap in the data: bytes %" PRIu64 "..%" PRIu64
				       " belong to no tensor (before '%.200s')",
				       pos, t->begin, t->name);
		if (t->begin < pos)
			return gpo__err(-EBADMSG,
				       "tensor '%.200s' overlaps the one before it (offset %"
				       PRIu64 " < %" PRIu64 ")", t->name, t->begin, pos);
		pos = t->end;
	}
	if (pos != ck->data_len)
		return gpo__err(-EBADMSG,
			       "the tensors hold %" PRIu64 " bytes but the file has %"
			       PRIu64 " after the header (%s)", pos, ck->data_len,
			       pos > ck->data_len ? "truncated" : "trailing bytes");
	return 0;
}

/* ---- metadata ------------------------------------------------------------ */

static int parse_metadata(struct ckpt *ck, json_t *meta)
{
	const char *key;
	json_t *v;
	size_t n;

	if (!json_is_object(meta))
		return gpo__err(-EPROTO, "__metadata__ is not an object");
	n = json_object_size(meta);
	ck->meta_key = calloc(n ? n : 1, sizeof(char *));
	ck->meta_val = calloc(n ? n : 1, sizeof(char *));
	if (!ck->meta_key || !ck->meta_val)
		return nomem();
	json_object_foreach(meta, key, v) {
		if (!json_is_string(v))
			return gpo__err(-EPROTO,
				       "__metadata__ '%.200s' is not a string", key);
		ck->meta_key[ck->nmeta] = strdup(key);
		ck->meta_val[ck->nmeta] = strdup(json_string_value(v));
		if (!ck->meta_key[ck->nmeta] || !ck->meta_val[ck->nmeta]) {
			ck->nmeta++;
			return nomem();
		}
		ck->nmeta++;
	}
	return 0;
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

static int find_tensor(const struct ckpt *ck, const char *name)
{
	int i;

	for (i = 0; i < ck->ntensors; i++)
		if (!strcmp(ck->t[i].name, name))
			return i;
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
	const char *key;
	json_t *j, *v;
	int i, ret;

	j = load_meta_json(ck, CKPT_META_XXH64, text, &ret);
	if (!j)
		return ret;
	if (!json_is_object(j)) {
		ret = gpo__err(-EPROTO, "metadata '%s' is not an object",
			      CKPT_META_XXH64);
		goto out_put;
	}
	json_object_foreach(j, key, v) {
		const char *s = json_string_value(v);

		i = find_tensor(ck, key);
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
	return 0;
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

static int parse_hex64(const char *s, uint64_t *out);

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

/* ---- the header as a whole ----------------------------------------------- */

static int parse_entries(struct ckpt *ck, json_t *root)
{
	json_t *meta = NULL, *v;
	const char *key;
	int ret;

	ck->t = calloc(json_object_size(root) + 1, sizeof(*ck->t));
	if (!ck->t)
		return nomem();
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "__metadata__")) {
			meta = v;
			continue;
		}
		if (!*key)
			return gpo__err(-EPROTO, "a tensor with an empty name");
		ret = parse_tensor(key, v, &ck->t[ck->ntensors++]);
		if (ret)
			return ret;
	}
	if (meta) {
		ret = parse_metadata(ck, meta);
		if (ret)
			return ret;
	}
	return check_layout(ck);
}

static int parse_root(struct ckpt *ck, const char *json, uint64_t hlen,
		      unsigned int flags)
{
	json_error_t e;
	json_t *root;
	int ret;

	/* the safetensors crate refuses anything before the '{' too */
	if (json[0] != '{')
		return gpo__err(-EPROTO, "the header does not start with '{'");
	root = json_loadb(json, hlen, JSON_REJECT_DUPLICATES, &e);
	if (!root)
		return gpo__err(-EPROTO, "the header is not JSON: %s (byte %d)",
			       e.text, e.position);
	ret = json_is_object(root) ? 0 :
	      gpo__err(-EPROTO, "the header is not a JSON object");
	if (!ret)
		ret = parse_entries(ck, root);
	if (!ret)
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
