// SPDX-License-Identifier: MIT
/*
 * profile.c - where a graph's time goes: its launches run one at a time,
 * each waited for, and the device time of each summed per kernel
 *
 * A wait reports the device time since the previous one (Vulkan: the
 * batch's timestamps; OpenCL and cpu: what their backends measure), so
 * the figures are the kernels' own, without the host's submission cost
 * but also without the overlap a queued run may have. The order and the
 * launches are those of gpo_graph_run().
 */
#include <string.h>
#include "tensor/tensor_i.h"

/* the entry of @op in @out[0..*n), added when new and there is room */
static struct gpo_op_time *entry(struct gpo_op_time *out, int max, int *n,
				 enum gpo__op_id op, unsigned int pass)
{
	const char *name = gpo__ops[op].name;
	int i;

	for (i = 0; i < *n; i++)
		if (out[i].pass == pass && !strcmp(out[i].op, name))
			return &out[i];
	if (*n == max)
		return NULL;
	memset(&out[*n], 0, sizeof(out[0]));
	out[*n].op = name;
	out[*n].pass = pass;
	return &out[(*n)++];
}

static int profile_list(struct gpo_device *dev, struct llist *l,
			unsigned int pass,
			struct gpo_op_time *out, int max, int *n)
{
	struct gpo_op_time *e;
	uint64_t ns;
	size_t i;
	int ret;

	for (i = 0; i < l->n; i++) {
		l->v[i].call.args = &l->v[i].a;
		ret = gpo__launch(dev, &l->v[i].call);
		if (!ret)
			ret = dev->ops->wait(dev, &ns);
		if (ret)
			return ret;
		e = entry(out, max, n, l->v[i].call.op, pass);
		if (!e)
			return gpo__err(-ENOSPC, "gpo_graph_profile: more than %d kernels",
					max);
		e->launches++;
		e->ns += ns;
	}
	return 0;
}

int gpo_graph_profile(struct gpo_graph *g, unsigned int what,
		      struct gpo_op_time *out, int max)
{
	struct gpo_device *dev;
	int n = 0, ret;

	if (!g || !out || max <= 0)
		return gpo__err(-EINVAL, "gpo_graph_profile: NULL argument or no room");
	if (!what || (what & ~(GPO_RUN_FORWARD | GPO_RUN_BACKWARD)))
		return gpo__err(-EINVAL, "gpo_graph_profile: what 0x%x", what);
	if (g->err)
		return gpo_graph_status(g);
	if ((what & GPO_RUN_BACKWARD) && !g->loss)
		return gpo__err(-EINVAL, "no backward pass: call gpo_graph_backward() first");
	dev = g->dev;
	pthread_mutex_lock(&dev->lock);
	ret = gpo__graph_plan(g);
	/* what was queued before is not counted */
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	if (!ret && (what & GPO_RUN_FORWARD))
		ret = profile_list(dev, &g->fwd, GPO_RUN_FORWARD, out, max, &n);
	if (!ret && (what & GPO_RUN_BACKWARD))
		ret = profile_list(dev, &g->bwd, GPO_RUN_BACKWARD, out, max,
				   &n);
	pthread_mutex_unlock(&dev->lock);
	return ret ? ret : n;
}
