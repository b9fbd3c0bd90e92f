// SPDX-License-Identifier: MIT
#include "gpuoptctl_i.h"
const struct option sweep_longs[] = { { NULL, 0, NULL, 0 } };
int sweep_opt(int c, const char *arg) { return -1; }
int cmd_sweep(int argc, char **argv) { return 1; }
