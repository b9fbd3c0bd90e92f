/* SPDX-License-Identifier: MIT */
/*
 * abi.h - what C, OpenCL C and GLSL share about kernel arguments
 *
 * Each op family has one header here with its parameter struct and its
 * flags, written once with the macros below and included by the library
 * (C), by the OpenCL kernels (the backend expands the includes) and by the
 * GLSL shaders (glslc -I kernels/abi, GL_GOOGLE_include_directive):
 *
 *	GPO_ARGS(gpo_sgd_args)
 *		gpo_u32 n;
 *		gpo_f32 lr;
 *	GPO_ARGS_END(gpo_sgd_args)
 *
 * becomes a C struct (checked to fit in GPO_ARGS_MAX bytes), an OpenCL C
 * struct that kernels take by value as their last argument, and in GLSL
 * the push-constant block `args`. Members are 4-byte scalars only, so the
 * three layouts agree (std430 puts scalars at 4-byte strides).
 *
 * The struct of an element op (GRID_ELEMENTS) starts with `gpo_u32 n`,
 * the element count, equal to the launch's work: a backend that cuts a
 * long view into windows rewrites it per window (gpo__launch() checks).
 *
 * Element counts are 32-bit: one launch covers fewer than 2^32 elements.
 * The optimizer's flat state is limited below that (optim.c refuses more);
 * callers with more elements split them into several launches.
 */
#ifndef GPO_ABI_H
#define GPO_ABI_H

#define GPO_ARGS_MAX	128	/* bytes: Vulkan's guaranteed push range */
#define GPO_WG_SIZE	256	/* work-items per workgroup, every kernel */
/*
 * u8 state kernels (adam8 ...): blocks of 256 a workgroup does at a
 * time, 32 work-items a block (8 elements each); a launch of them has
 * ceil(blocks / GPO_U8_GROUP_BLOCKS) groups at most
 */
#define GPO_U8_GROUP_BLOCKS	8

/*
 * Vulkan, shaders built with -DGPO_ARGS_BUF (their ".ab" variant, for
 * recorded command buffers): the struct is read from the storage buffer
 * at binding GPO_ARGS_BINDING, written by the host before each submit.
 */
#define GPO_ARGS_BINDING	8

#if defined(VULKAN) && defined(GPO_ARGS_BUF)
#define gpo_u32 uint
#define gpo_f32 float
#define GPO_ARGS(name) layout(set = 0, binding = GPO_ARGS_BINDING, std430) \
	readonly buffer name##_ab {
#define GPO_ARGS_END(name) } args;
#elif defined(VULKAN)
#define gpo_u32 uint
#define gpo_f32 float
#define GPO_ARGS(name) layout(push_constant, std430) uniform name##_pc {
#define GPO_ARGS_END(name) } args;
#elif defined(__OPENCL_VERSION__)
#define gpo_u32 uint
#define gpo_f32 float
#define GPO_ARGS(name) struct name {
#define GPO_ARGS_END(name) };
#else
#include <stdint.h>
#define gpo_u32 uint32_t
#define gpo_f32 float
#define GPO_ARGS(name) struct name {
#define GPO_ARGS_END(name) }; \
	_Static_assert(sizeof(struct name) <= GPO_ARGS_MAX, \
		       #name " does not fit in GPO_ARGS_MAX bytes");
#endif

/*
 * The step's scalars: the four floats the norm pass writes (norm.h) and every
 * update kernel reads when GPO_UPD_USE_SCAL is set.
 */
#define GPO_SCAL_MUL	0	/* gradient multiplier: unscale * clip */
#define GPO_SCAL_SKIP	1	/* != 0: non-finite gradients, skip */
#define GPO_SCAL_NORM	2	/* the global gradient norm, unscaled */
#define GPO_SCAL_TOTAL	3	/* the sum of squares, scaled */
#define GPO_SCAL_COUNT	4
/*
 * The loss scale's state after them, which only the norm pass with
 * GPO_NORM_LOSS_SCALE reads and with GPO_NORM_DYNAMIC updates (norm.h),
 * and which the training step's backward seed reads: kept on the device
 * so that no step waits for it. Its reciprocal is kept beside it, so no
 * kernel divides (power-of-two factors keep it exact).
 */
#define GPO_SCAL_LS	4	/* the loss scale (1 when off) */
#define GPO_SCAL_LS_INV	5	/* its reciprocal */
#define GPO_SCAL_LS_GOOD 6	/* good steps since the last change */
#define GPO_SCAL_SIZE	8	/* floats in the buffer */

/*
 * Flags every update kernel knows (bits 0-7); a family's own flags use
 * bits 8 and up. Update kernels read g as g * scal[GPO_SCAL_MUL] with
 * GPO_UPD_USE_SCAL (else g), negated with GPO_UPD_MAXIMIZE, and change
 * nothing at all when GPO_UPD_USE_SCAL is set and scal[GPO_SCAL_SKIP] != 0.
 */
#define GPO_UPD_MAXIMIZE	(1u << 0)
#define GPO_UPD_USE_SCAL	(1u << 1)

/*
 * Half-precision parameters (master's block; bits 5-7, so that the state
 * side can take 2-4). Gradients are then in the parameters' dtype, read
 * exactly; the update itself is f32 as always.
 * GPO_UPD_PARAM_F16 / _BF16 without GPO_UPD_PARAM_SR: buffer 0 is the f32
 *   master copy, read and written as f32 parameters are, and the family's
 *   GPO_xxx_BUF_HALF binding is the half copy, written (never read) with
 *   the new master rounded to nearest even.
 * GPO_UPD_PARAM_BF16 | GPO_UPD_PARAM_SR: no master; buffer 0 holds the
 *   bfloat16 parameters, read exactly, the update's f32 result stored with
 *   stochastic rounding, its bits gpo__round_bits(seed, step, base + i)
 *   for element i of the launch (core/quant_i.h): the same on every
 *   device and launch shape. A backend that cuts a launch into windows
 *   advances base (the op's base_word) by the window's first element.
 * Half views cover n rounded up to 4 elements (the group's padding), so a
 * float4 of them is 8 whole bytes; lanes past n keep their bits.
 */
#define GPO_UPD_PARAM_F16	(1u << 5)
#define GPO_UPD_PARAM_BF16	(1u << 6)
#define GPO_UPD_PARAM_SR	(1u << 7)
#define GPO_UPD_PARAM_HALF	(GPO_UPD_PARAM_F16 | GPO_UPD_PARAM_BF16)

/*
 * The fields every update family's struct ends with (master's block):
 * base, the global index of the launch's element 0 in the optimizer's
 * flat buffers; the seed and the step (1-based) of stochastic rounding,
 * 64-bit each as two words. The families with u8 kernels start with n,
 * as element structs do, and put q_off, q_blk and q_groups right before
 * them (the backends read n at word 0 and the cpu backend finds q_groups
 * at p_base's word - 1; ops.c checks).
 */
#define GPO_PARAM_FIELDS \
	gpo_u32 p_base; \
	gpo_u32 p_seed_lo; \
	gpo_u32 p_seed_hi; \
	gpo_u32 p_step_lo; \
	gpo_u32 p_step_hi;

#endif /* GPO_ABI_H */
