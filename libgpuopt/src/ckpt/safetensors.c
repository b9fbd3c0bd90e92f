// SPDX-License-Identifier: MIT
/*
 * safetensors.c - the safetensors file format, strictly: the header's
 * length, its JSON, the tensor entries (dtypes, shapes, offsets against
 * the file's length) and the __metadata__ string map, all checked before
 * anything reads tensor data. gpuopt's own metadata is meta.c's. Works
 * from memory, so that the fuzz harness runs exactly this code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * gpo__st_parse - the safetensors format alone: @json (@hlen bytes) is one
 * JSON object of tensor entries (dtype, shape, data_offsets, in bounds,
 * without overlap) and an optional "__metadata__" string map, filled into
 * @ck. On success *@root holds the parsed header for the caller's own
 * checks (json_decref() it).
 */
int gpo__st_parse(struct ckpt *ck, const char *json, uint64_t hlen,
		  json_t **root)
{
	json_error_t e;
	json_t *r;
	int ret;

	/* the safetensors crate refuses anything before the '{' too */
	if (json[0] != '{')
		return gpo__err(-EPROTO, "the header does not start with '{'");
	r = json_loadb(json, hlen, JSON_REJECT_DUPLICATES, &e);
	if (!r)
		return gpo__err(-EPROTO, "the header is not JSON: %s (byte %d)",
				e.text, e.position);
	ret = json_is_object(r) ? 0 :
	      gpo__err(-EPROTO, "the header is not a JSON object");
	if (!ret)
		ret = parse_entries(ck, r);
	if (ret) {
		json_decref(r);
		return ret;
	}
	*root = r;
	return 0;
}
