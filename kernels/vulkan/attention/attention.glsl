/* SPDX-License-Identifier: MIT */
/*
 * attention.glsl - what the attention shaders share (abi/attention.h);
 * the scheme of kernels/opencl/attention/attention.cl:
 *
 * The 256 invocations are a 16 x 16 grid; invocation (tx, ty) holds rows
 * 4 ty .. 4 ty + 3 of its block and, of a 64 x 64 block of scores,
 * columns 4 tx .. 4 tx + 3; of a 64 x hd block of outputs, columns
 * 4 tx .. and 64 + 4 tx .. (hd > 64). Two products make up everything:
 *	rows_dot   S = X Y^T of 64 rows of X and 64 of Y (hd long), the
 *		   rows staged KS columns at a time in shared memory
 *	block_mul  O += P^T B for a 64 x 64 P in shared memory (row j at
 *		   PS + j * LDS) and 64 rows of B, staged KS rows at a time
 * Rows past t and columns past hd load as 0 and are never stored. Every
 * sum runs in one order, and a row's maximum and sum are the 16
 * invocations' parts taken in order by one invocation.
 *
 * Include after common.glsl, the header, group.glsl and tensor.glsl; the
 * shader then defines ld(w, i): element i of its buffer w (ATT_*).
 */
#define AB	uint(GPO_ATTN_BLOCK)		/* rows a block: 64 */
/*
 * Specialization constant 5: the columns (rows) a staged step, 16 or 32
 * (abi/attention.h's GPO_ATTN_KS_*): 32 for heads of 64 or fewer where
 * the device's shared memory holds it (pipeline.c). The sums run in the
 * same order either way; only the barriers and loads a block halve (the
 * byte GPT's attention 12 % faster on an H200).
 */
layout(constant_id = 5) const uint GPO_ATTN_KS = 16u;
#define KS	GPO_ATTN_KS
#define LDS	(AB + 4u)			/* a staged row of 64 */
#define LDH	(uint(GPO_ATTN_MAX_HD) + 4u)	/* a staged row of hd */
#define SLICE	(2u * KS * LDS)			/* >= KS * LDH too */
#define PS	SLICE				/* the 64 x 64 block */
#define ROW	(PS + AB * LDS)			/* 3 x 64 row values */

#define ATT_Q	0u
#define ATT_K	1u
#define ATT_V	2u
#define ATT_DY	3u

float ld(uint w, uint i);

/*
 * Specialization constant 3: may hd pass 64? The device builds each
 * attention pipeline twice (pipeline.c) and launches the one with false
 * for heads of 64 or fewer: the columns 64 .. of an output (o2, gk2,
 * gv2) are then dead code, and their registers free (attn_bwd_dkdv 147
 * -> 115 on an H200: two workgroups a multiprocessor, not one).
 */
layout(constant_id = 3) const bool GPO_ATTN_WIDE = true;

/* are there columns past 64? */
bool attn_wide()
{
	return GPO_ATTN_WIDE && args.hd > 64u;
}

/* everything shared, in floats, as vec4s for 16-byte reads */
shared vec4 sm4[(ROW + 3u * AB) / 4u];

float smr(uint o)
{
	return sm4[o >> 2][o & 3u];
}

void smw(uint o, float x)
{
	sm4[o >> 2][o & 3u] = x;
}

/* the P block's row @j, columns 4 @g .. 4 @g + 3 */
void ps_put(uint j, uint g, vec4 x)
{
	sm4[(PS + j * LDS) / 4u + g] = x;
}

/* the four row values at @o (a multiple of 4) */
vec4 sm_get4(uint o)
{
	return sm4[o / 4u];
}

/*
 * acc[r] = sum_c X[4 ty + r][c] Y[4 tx + (0..3)][c], X the rows of
 * buffer @xw from element @xo (@xn of them valid), Y likewise
 */
void rows_dot(uint xw, uint xo, uint xn, uint yw, uint yo, uint yn,
	      out vec4 acc[4])
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	uint hd = args.hd;

	[[unroll]] for (uint r = 0u; r < 4u; r++)
		acc[r] = vec4(0.0);
	for (uint c0 = 0u; c0 < hd; c0 += KS) {
		uint c = c0 + t % KS;
		vec4 xv, yv;

		/*
		 * along c: KS invocations read KS consecutive words; each
		 * stages rows r0 .. r0 + 3 of its column as one vec4, one
		 * band of AB 16 / KS rows for each 16 columns of the step
		 */
		for (uint h = 0u; h < KS; h += 16u) {
			uint r0 = 4u * (t / KS) + AB * h / KS;

			[[unroll]] for (uint q = 0u; q < 4u; q++) {
				uint row = r0 + q;

				xv[q] = row < xn && c < hd ?
					ld(xw, xo + row * hd + c) : 0.0;
				yv[q] = row < yn && c < hd ?
					ld(yw, yo + row * hd + c) : 0.0;
			}
			sm4[((t % KS) * LDS + r0) / 4u] = xv;
			sm4[(KS * LDS + (t % KS) * LDS + r0) / 4u] = yv;
		}
		group_sync();
		for (uint h = 0u; h < KS; h += 16u) {
			[[unroll]] for (uint p0 = 0u; p0 < 16u; p0++) {
				uint p = h + p0;
				vec4 av = sm4[(p * LDS + 4u * ty) >> 2];
				vec4 bv = sm4[(KS * LDS + p * LDS + 4u * tx) >>
					      2];

				acc[0] = fma(vec4(av.x), bv, acc[0]);
				acc[1] = fma(vec4(av.y), bv, acc[1]);
				acc[2] = fma(vec4(av.z), bv, acc[2]);
				acc[3] = fma(vec4(av.w), bv, acc[3]);
			}
		}
		group_sync();
	}
}

/*
 * o[r] += sum_j P[j][4 ty + r] B[j][4 tx ..], o2[r] likewise for the
 * columns 64 + 4 tx .. (hd > 64 only): B the rows of buffer @bw from
 * element @bo, @bn of them valid
 */
void block_mul(uint bw, uint bo, uint bn, inout vec4 o[4], inout vec4 o2[4])
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	uint hd = args.hd;
	bool wide = attn_wide();
	uint cols = wide ? uint(GPO_ATTN_MAX_HD) : 64u;

	for (uint j0 = 0u; j0 < AB; j0 += KS) {
		/* every column read is staged: 0 past hd */
		for (uint h = 0u; h < KS; h += 16u) {
			uint row = j0 + h + t / 16u;

			for (uint c = t % 16u; c < cols; c += 16u)
				smw((h + t / 16u) * LDH + c,
				    row < bn && c < hd ?
				    ld(bw, bo + row * hd + c) : 0.0);
		}
		group_sync();
		for (uint h = 0u; h < KS; h += 16u) {
			[[unroll]] for (uint p0 = 0u; p0 < 16u; p0++) {
				uint p = h + p0;
				vec4 av = sm4[(PS + (j0 + p) * LDS + 4u * ty) >>
					      2];
				vec4 b0 = sm4[(p * LDH + 4u * tx) >> 2];

				o[0] = fma(vec4(av.x), b0, o[0]);
				o[1] = fma(vec4(av.y), b0, o[1]);
				o[2] = fma(vec4(av.z), b0, o[2]);
				o[3] = fma(vec4(av.w), b0, o[3]);
				if (wide) {
					vec4 b1 = sm4[(p * LDH + 64u +
						       4u * tx) >> 2];

					o2[0] = fma(vec4(av.x), b1, o2[0]);
					o2[1] = fma(vec4(av.y), b1, o2[1]);
					o2[2] = fma(vec4(av.z), b1, o2[2]);
					o2[3] = fma(vec4(av.w), b1, o2[3]);
				}
			}
		}
		group_sync();
	}
}

/* the group's matrix and block; false for a group past the work */
bool attn_group(out uint z, out uint b)
{
	uint g = group_index();

	z = 0u;
	b = 0u;
	if (args.blocks == 0u || g >= args.groups || g / args.blocks >= args.bh)
		return false;
	z = g / args.blocks;
	b = g % args.blocks;
	return true;
}

/* the block's l and d of rows i0 .. (0 past t) at ROW + 64, ROW + 128 */
#define ROWS_LD(i0, z) \
	{ \
		uint lid_ = gl_LocalInvocationID.x, i_ = (i0) + lid_; \
		if (lid_ < AB) { \
			smw(ROW + AB + lid_, i_ < args.t ? \
			    l[args.off_l + (z) * args.t + i_] : 0.0); \
			smw(ROW + 2u * AB + lid_, i_ < args.t ? \
			    d[args.off_d + (z) * args.t + i_] : 0.0); \
		} \
	}
