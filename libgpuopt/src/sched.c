// SPDX-License-Identifier: MIT
/* sched.c - placeholder until the schedules land: every call is -ENOSYS */
#include <stdlib.h>
#include "gpuopt_i.h"

int gpo_sched_new(const char *kind, struct gpo_sched **out)
{
	return gpo_err(-ENOSYS, "schedules are not implemented yet");
}

void gpo_sched_free(struct gpo_sched *s)
{
}

int gpo_sched_configure(struct gpo_sched *s, const char *text)
{
	return gpo_err(-ENOSYS, "schedules are not implemented yet");
}

double gpo_sched_lr(struct gpo_sched *s, double base_lr)
{
	return base_lr;
}

double sched_lr_for(struct gpo_sched *s, double base_lr)
{
	return base_lr;
}

int gpo_sched_step(struct gpo_sched *s, double metric)
{
	return gpo_err(-ENOSYS, "schedules are not implemented yet");
}

uint64_t gpo_sched_last_epoch(struct gpo_sched *s)
{
	return 0;
}

int gpo_sched_save(struct gpo_sched *s, char *buf, size_t len)
{
	return gpo_err(-ENOSYS, "schedules are not implemented yet");
}

int gpo_sched_load(struct gpo_sched *s, const char *text)
{
	return gpo_err(-ENOSYS, "schedules are not implemented yet");
}
