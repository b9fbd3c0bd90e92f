// SPDX-License-Identifier: MIT
/*
 * coopkhr.c - a SPIR-V module of SPV_NV_cooperative_matrix rewritten for
 * SPV_KHR_cooperative_matrix.
 *
 * Debian 12's glslc compiles GL_NV_cooperative_matrix only, but NVIDIA's
 * driver compiles the KHR instructions to much faster code: on an H200,
 * the same kernel's tensor-core multiplies alone ran 1.66x faster through
 * the KHR ones (bench/results/issue12-h200-2026-11-30-khr.txt). The two
 * extensions say the same things in other words, except two:
 *
 * - A KHR matrix type names its use (A, B or accumulator). Its use here
 *   is the one it has in the module's multiply-adds, where every matrix
 *   type must have exactly one: matmul_coop.comp gives its B fragments a
 *   type of their own for that (FRAG_B).
 * - A KHR load or store names its layout by a constant integer where the
 *   NV one takes a boolean "column major": here it must be the constant
 *   true or false.
 *
 * Anything else the rewrite cannot be sure of (a value of a matrix type
 * made by an instruction it does not know, integer matrices, a malformed
 * module) fails with -EINVAL: never a guess. The device checks at open
 * that the embedded module rewrites (device.c's create_device()), and
 * keeps NV where it does not.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "backend/vulkan/vulkan_i.h"

#define SPV_MAGIC		0x07230203u

/* opcodes */
#define OP_UNDEF		1u
#define OP_EXTENSION		10u
#define OP_CAPABILITY		17u
#define OP_TYPE_INT		21u
#define OP_TYPE_FLOAT		22u
#define OP_CONSTANT_TRUE	41u
#define OP_CONSTANT_FALSE	42u
#define OP_CONSTANT		43u
#define OP_LOAD			61u
#define OP_COMPOSITE_EXTRACT	81u
#define OP_COPY_OBJECT		83u
#define OP_SELECT		169u
#define OP_PHI			245u
#define OP_TYPE_CM_KHR		4456u
#define OP_CM_LOAD_KHR		4457u
#define OP_CM_STORE_KHR		4458u
#define OP_CM_MULADD_KHR	4459u
#define OP_CM_LENGTH_KHR	4460u
#define OP_TYPE_CM_NV		5358u
#define OP_CM_LOAD_NV		5359u
#define OP_CM_STORE_NV		5360u
#define OP_CM_MULADD_NV		5361u
#define OP_CM_LENGTH_NV		5362u

#define CAP_CM_NV		5357u
#define CAP_CM_KHR		6022u

/* CooperativeMatrixUse and CooperativeMatrixLayout share 0 and 1 */
#define USE_A			0u
#define USE_B			1u
#define USE_ACC			2u

/* a coop type's roles, by bits of 1 << use */
#define ROLE(u)			(1u << (u))

static const char ext_nv[] = "SPV_NV_cooperative_matrix";
static const char ext_khr[] = "SPV_KHR_cooperative_matrix";

struct rw {
	const uint32_t *w;
	size_t n;
	uint32_t bound;
	uint32_t *type_of;	/* a value's type id, 0: not known */
	uint8_t *role;		/* a coop type's ROLE() bits */
	uint8_t *is_cm;		/* an NV matrix type */
	int8_t *truth;		/* 1 true, 0 false, -1 not a constant bool */
	uint32_t uint_t;	/* OpTypeInt 32 0 */
	size_t uint_at;		/* its word: the constants go after it */
	uint8_t *is_float;	/* an OpTypeFloat */
	int cap_nv;		/* declares CooperativeMatrixNV */
	int ext_nv;		/* how many OpExtension "SPV_NV_..." */
};

/* each instruction's word count, from 5 on: 0, or -EINVAL */
static int walk_check(const uint32_t *w, size_t n)
{
	size_t i = 5;

	while (i < n) {
		uint32_t len = w[i] >> 16;

		if (!len || len > n - i)
			return -EINVAL;
		i += len;
	}
	return 0;
}

static int id_ok(const struct rw *rw, uint32_t id)
{
	return id && id < rw->bound;
}

/* the word count of OpExtension @name */
static uint32_t ext_words(const char *name)
{
	return 1 + (uint32_t)(strlen(name) + 4) / 4;
}

/* is @x (an OpExtension) the NV extension? */
static int is_ext_nv(const uint32_t *x)
{
	uint32_t len = x[0] >> 16;

	return len == ext_words(ext_nv) &&
	       !memcmp(&x[1], ext_nv, sizeof(ext_nv));
}

/*
 * First pass: the ids of matrix types, constant booleans and the 32-bit
 * unsigned integer type, and the type of every value an operand of a
 * multiply-add can come from.
 */
static int survey(struct rw *rw)
{
	size_t i;

	for (i = 5; i < rw->n; i += rw->w[i] >> 16) {
		const uint32_t *x = &rw->w[i];
		uint32_t len = x[0] >> 16, op = x[0] & 0xffff;

		switch (op) {
		case OP_CAPABILITY:
			if (len == 2 && x[1] == CAP_CM_NV)
				rw->cap_nv = 1;
			break;
		case OP_EXTENSION:
			rw->ext_nv += is_ext_nv(x);
			break;
		case OP_TYPE_CM_NV:
			/*
			 * once; of floats (KHR takes integers' signs from
			 * the products); after the constants' type, which
			 * they will use
			 */
			if (len != 6 || !id_ok(rw, x[1]) || rw->is_cm[x[1]] ||
			    !id_ok(rw, x[2]) || !rw->is_float[x[2]] ||
			    !rw->uint_t)
				return -EINVAL;
			rw->is_cm[x[1]] = 1;
			break;
		case OP_TYPE_FLOAT:
			if (len >= 2 && id_ok(rw, x[1]))
				rw->is_float[x[1]] = 1;
			break;
		case OP_TYPE_INT:
			if (len == 4 && id_ok(rw, x[1]) && x[2] == 32 &&
			    x[3] == 0 && !rw->uint_t) {
				rw->uint_t = x[1];
				rw->uint_at = i;
			}
			break;
		case OP_CONSTANT_TRUE:
		case OP_CONSTANT_FALSE:
			if (len != 3 || !id_ok(rw, x[2]))
				return -EINVAL;
			rw->truth[x[2]] = op == OP_CONSTANT_TRUE;
			break;
		case OP_UNDEF:
		case OP_LOAD:
		case OP_COMPOSITE_EXTRACT:
		case OP_COPY_OBJECT:
		case OP_SELECT:
		case OP_PHI:
		case OP_CM_LOAD_NV:
		case OP_CM_MULADD_NV:
			if (len < 3 || !id_ok(rw, x[1]) || !id_ok(rw, x[2]))
				return -EINVAL;
			rw->type_of[x[2]] = x[1];
			break;
		case OP_TYPE_CM_KHR:
		case OP_CM_LOAD_KHR:
		case OP_CM_STORE_KHR:
		case OP_CM_MULADD_KHR:
		case OP_CM_LENGTH_KHR:
			/* already KHR, or both: not ours to rewrite */
			return -EINVAL;
		}
	}
	return rw->uint_t && rw->cap_nv && rw->ext_nv == 1 ? 0 : -EINVAL;
}

/* @v's type gets role @u; it must be a matrix type */
static int give_role(struct rw *rw, uint32_t v, uint32_t u, int is_type)
{
	uint32_t t = is_type ? v : (id_ok(rw, v) ? rw->type_of[v] : 0);

	if (!id_ok(rw, t) || !rw->is_cm[t])
		return -EINVAL;
	rw->role[t] |= ROLE(u);
	return 0;
}

/* Second pass: each matrix type's use, from the multiply-adds */
static int roles(struct rw *rw)
{
	size_t i;
	uint32_t t;

	for (i = 5; i < rw->n; i += rw->w[i] >> 16) {
		const uint32_t *x = &rw->w[i];

		if ((x[0] & 0xffff) != OP_CM_MULADD_NV)
			continue;
		if (x[0] >> 16 != 6)
			return -EINVAL;
		if (give_role(rw, x[1], USE_ACC, 1) ||
		    give_role(rw, x[3], USE_A, 0) ||
		    give_role(rw, x[4], USE_B, 0) ||
		    give_role(rw, x[5], USE_ACC, 0))
			return -EINVAL;
	}
	/* exactly one use each: a type of two (or none) has no KHR form */
	for (t = 1; t < rw->bound; t++) {
		uint8_t r = rw->role[t];

		if (rw->is_cm[t] && (!r || (r & (r - 1))))
			return -EINVAL;
	}
	return 0;
}

static uint32_t use_of(const struct rw *rw, uint32_t t)
{
	return rw->role[t] == ROLE(USE_A) ? USE_A :
	       rw->role[t] == ROLE(USE_B) ? USE_B : USE_ACC;
}

/*
 * A load or store @x into @o as KHR opcode @op: its operands at @s, the
 * stride then the column-major boolean, become the layout (constant
 * c[0] row major or c[1] column major) then the stride; the rest as it
 * was. Returns 0, or -EINVAL where the boolean is no constant.
 */
static int with_layout(const struct rw *rw, const uint32_t *c, uint32_t *o,
		       const uint32_t *x, uint32_t s, uint32_t op)
{
	uint32_t len = x[0] >> 16;

	if (len < s + 2 || !id_ok(rw, x[s + 1]) || rw->truth[x[s + 1]] < 0)
		return -EINVAL;
	memcpy(o, x, len * sizeof(*o));
	o[0] = len << 16 | op;
	o[s] = c[rw->truth[x[s + 1]]];
	o[s + 1] = x[s];
	return 0;
}

/*
 * gpo__spv_coop_khr - @in (@n words, a whole module) with its NV
 * cooperative matrices made KHR ones, into a new *@out of *@out_n words
 * (free() it). Returns 0, -EINVAL where the module is not one this can
 * rewrite surely, or -ENOMEM.
 */
int gpo__spv_coop_khr(const uint32_t *in, size_t n, uint32_t **out,
		      size_t *out_n)
{
	struct rw rw = { .w = in, .n = n };
	uint32_t c[3], *o = NULL;
	size_t i, k = 5, cap;
	int ret = -EINVAL;

	*out = NULL;
	*out_n = 0;
	/* every id is a result of an instruction of two words or more */
	if (n < 5 || in[0] != SPV_MAGIC || in[3] < 2 || in[3] > n ||
	    walk_check(in, n))
		return -EINVAL;
	rw.bound = in[3];
	rw.type_of = calloc(rw.bound, sizeof(*rw.type_of));
	rw.role = calloc(rw.bound, 1);
	rw.is_cm = calloc(rw.bound, 1);
	rw.truth = malloc(rw.bound);
	rw.is_float = calloc(rw.bound, 1);
	if (!rw.type_of || !rw.role || !rw.is_cm || !rw.truth ||
	    !rw.is_float) {
		ret = -ENOMEM;
		goto out;
	}
	memset(rw.truth, -1, rw.bound);
	ret = survey(&rw);
	if (!ret)
		ret = roles(&rw);
	if (ret)
		goto out;
	/* constants 0, 1, 2 (uses and layouts) get the next three ids */
	for (i = 0; i < 3; i++)
		c[i] = rw.bound + (uint32_t)i;
	/*
	 * Room: each type grows by a word, and the constants take 12 words
	 * (the two extension names take 8 words each)
	 */
	cap = n + 16;
	for (i = 1; i < rw.bound; i++)
		cap += rw.is_cm[i];
	o = malloc(cap * sizeof(*o));
	if (!o) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(o, in, 5 * sizeof(*o));
	o[3] = rw.bound + 3;
	ret = -EINVAL;
	for (i = 5; i < n; i += in[i] >> 16) {
		const uint32_t *x = &in[i];
		uint32_t len = x[0] >> 16, op = x[0] & 0xffff, j;

		if (k + len + 1 > cap)
			goto out;
		switch (op) {
		case OP_CAPABILITY:
			memcpy(&o[k], x, len * sizeof(*o));
			if (len == 2 && x[1] == CAP_CM_NV)
				o[k + 1] = CAP_CM_KHR;
			k += len;
			break;
		case OP_EXTENSION:
			if (!is_ext_nv(x)) {
				memcpy(&o[k], x, len * sizeof(*o));
				k += len;
				break;
			}
			j = ext_words(ext_khr);
			memset(&o[k], 0, j * sizeof(*o));
			o[k] = j << 16 | OP_EXTENSION;
			memcpy(&o[k + 1], ext_khr, sizeof(ext_khr));
			k += j;
			break;
		case OP_TYPE_INT:
			memcpy(&o[k], x, len * sizeof(*o));
			k += len;
			if (i != rw.uint_at)
				break;
			if (k + 12 > cap)
				goto out;
			for (j = 0; j < 3; j++) {
				o[k++] = 4u << 16 | OP_CONSTANT;
				o[k++] = rw.uint_t;
				o[k++] = c[j];
				o[k++] = j;
			}
			break;
		case OP_TYPE_CM_NV:
			/* result, component, scope, rows, columns; use */
			o[k] = 7u << 16 | OP_TYPE_CM_KHR;
			memcpy(&o[k + 1], &x[1], 5 * sizeof(*o));
			o[k + 6] = c[use_of(&rw, x[1])];
			k += 7;
			break;
		case OP_CM_LOAD_NV:
			/* type, result, pointer, stride, column major, mem... */
			if (with_layout(&rw, c, &o[k], x, 4, OP_CM_LOAD_KHR))
				goto out;
			k += len;
			break;
		case OP_CM_STORE_NV:
			/* pointer, object, stride, column major, mem... */
			if (with_layout(&rw, c, &o[k], x, 3, OP_CM_STORE_KHR))
				goto out;
			k += len;
			break;
		case OP_CM_MULADD_NV:
		case OP_CM_LENGTH_NV:
			/* the same operands; no KHR operand flags for floats */
			memcpy(&o[k], x, len * sizeof(*o));
			o[k] = len << 16 | (op == OP_CM_MULADD_NV ?
					    OP_CM_MULADD_KHR :
					    OP_CM_LENGTH_KHR);
			k += len;
			break;
		default:
			memcpy(&o[k], x, len * sizeof(*o));
			k += len;
		}
	}
	*out = o;
	*out_n = k;
	o = NULL;
	ret = 0;
out:
	free(o);
	free(rw.type_of);
	free(rw.role);
	free(rw.is_cm);
	free(rw.truth);
	free(rw.is_float);
	return ret;
}
