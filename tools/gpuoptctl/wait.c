// SPDX-License-Identifier: MIT
/*
 * wait.c - gpuoptctl wait: until a job is in a wanted state, with a
 * progress bar on a terminal and a plain line a second in a pipe.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

static const char *const all_states[] = {
	"created", "running", "paused", "stopped", "done", "failed",
};

static char wait_until[128] = "done,stopped,failed";
static int wait_explicit;		/* --until given */
static double wait_timeout;
static int wait_quiet;

const struct option wait_longs[] = {
	{ "until", required_argument, NULL, 'u' },
	{ "timeout", required_argument, NULL, 't' },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 },
};

static int state_in(const char *state, const char *list)
{
	size_t n = strlen(state);
	const char *p = list;

	while (*p) {
		if (!strncmp(p, state, n) && (p[n] == ',' || !p[n]))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
}

int wait_opt(int c, const char *arg)
{
	char copy[128], *w, *save = NULL;
	size_t i;
	char *end;

	switch (c) {
	case 'u':
		snprintf(copy, sizeof(copy), "%s", arg);
		for (w = strtok_r(copy, ",", &save); w;
		     w = strtok_r(NULL, ",", &save)) {
			for (i = 0; i < ARRAY_SIZE(all_states); i++)
				if (!strcmp(w, all_states[i]))
					break;
			if (i == ARRAY_SIZE(all_states)) {
				err("wait: no state '%s' (created running paused stopped done failed)",
				    w);
				return -1;
			}
		}
		snprintf(wait_until, sizeof(wait_until), "%s", arg);
		wait_explicit = 1;
		return 0;
	case 't':
		wait_timeout = gpo__strtod(arg, &end);
		if (*end || end == arg || wait_timeout < 0) {
			err("wait: bad timeout '%s'", arg);
			return -1;
		}
		return 0;
	case 'q':
		wait_quiet = 1;
		return 0;
	}
	return -1;
}

/* The progress line of a terminal: bar, steps, loss, ETA. */
static void progress_bar(const struct job_stat *js)
{
	char loss[24], eta[24], tail[160], bar[256];
	int width = term_width(STDOUT_FILENO), cells, full, i;
	double frac;

	fmt_num(loss, sizeof(loss), js->loss, 5);
	fmt_duration(eta, sizeof(eta), js->eta_s);
	if (js->unlimited || !js->max_steps) {
		snprintf(tail, sizeof(tail), "%llu steps  loss %s  %s",
			 (unsigned long long)js->step, loss, js->state);
		printf("\r%s %.*s\033[K", js->name, width - 2 -
		       (int)strlen(js->name), tail);
		fflush(stdout);
		return;
	}
	frac = (double)js->step / js->max_steps;
	if (frac > 1)
		frac = 1;
	snprintf(tail, sizeof(tail), " %llu/%llu %3.0f%%  loss %s  ETA %s",
		 (unsigned long long)js->step,
		 (unsigned long long)js->max_steps, frac * 100, loss, eta);
	cells = width - (int)strlen(js->name) - (int)strlen(tail) - 4;
	if (cells > (int)sizeof(bar) - 1)
		cells = sizeof(bar) - 1;
	if (cells < 5)
		cells = 0;
	full = (int)(frac * cells);
	for (i = 0; i < cells; i++)
		bar[i] = i < full ? '#' : '-';
	bar[cells] = '\0';
	if (cells)
		printf("\r%s [%s]%s\033[K", js->name, bar, tail);
	else
		printf("\r%s%s\033[K", js->name, tail);
	fflush(stdout);
}

static void progress_line(const struct job_stat *js)
{
	char steps[48], loss[24], lr[24], eta[24];

	step_text(js, steps, sizeof(steps));
	fmt_num(loss, sizeof(loss), js->loss, 6);
	fmt_num(lr, sizeof(lr), js->lr, 4);
	fmt_duration(eta, sizeof(eta), js->eta_s);
	printf("%s %s step %s loss %s lr %s eta %s\n", js->name, js->state,
	       steps, loss, lr, eta);
	fflush(stdout);
}

int cmd_wait(int argc, char **argv)
{
	char rel[128], error[512];
	double start, last_line = -1;
	uint64_t last_step = UINT64_MAX;
	struct job_stat js;
	const char *job;
	int status, tty, ret, shown = 0;

	status = operands(argc, 1, 1);
	if (status)
		return status;
	job = argv[0];
	if (!tree_ok() || !job_exists(job))
		return 1;
	tty = isatty(STDOUT_FILENO) && !wait_quiet;
	catch_signals();
	start = mono_s();
	for (;;) {
		ret = job_stat_read(job, &js);
		if (ret) {
			if (shown && tty)
				putchar('\n');
			err("wait %s: %s", job, ret == -ENOENT ?
			    "the job was removed" : strerror(-ret));
			return 1;
		}
		if (state_in(js.state, wait_until))
			break;
		if (job_ended(js.state))
			break;	/* it will not move on by itself */
		if (tty) {
			progress_bar(&js);
			shown = 1;
		} else if (!wait_quiet && js.step != last_step &&
			   mono_s() - last_line >= 1) {
			progress_line(&js);
			last_step = js.step;
			last_line = mono_s();
		}
		if (got_signal) {
			if (shown)
				putchar('\n');
			return 128 + got_signal;
		}
		if (wait_timeout > 0 && mono_s() - start >= wait_timeout) {
			if (shown)
				putchar('\n');
			err("wait %s: still %s after %g s", job, js.state,
			    wait_timeout);
			return EXIT_TIMEOUT;
		}
		usleep(tty ? 100000 : 200000);
	}
	if (tty) {
		progress_bar(&js);
		putchar('\n');
	}
	if (!wait_quiet)
		progress_line(&js);
	if (!strcmp(js.state, "failed") &&
	    !(wait_explicit && state_in("failed", wait_until))) {
		snprintf(rel, sizeof(rel), "jobs/%s/error", job);
		read_value(rel, error, sizeof(error));
		err("%s failed: %s", job, *error ? error : "(no reason given)");
		return 1;
	}
	if (state_in(js.state, wait_until))
		return 0;
	err("%s is %s, not %s", job, js.state, wait_until);
	return 1;
}

