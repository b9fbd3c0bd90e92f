// SPDX-License-Identifier: MIT
/*
 * keep_drivers.c - linked into the unit tests, and into every program of
 * a SANITIZE=1 build: the CPU drivers of CI (lavapipe, PoCL) and the C++
 * runtime they bring leak a little of their own, which tests/lsan.supp
 * and tests/valgrind.supp name by library. A driver the loader unloads
 * when its last context goes leaves frames of an "<unknown module>" that
 * no suppression can match, so keep them resident for the life of the
 * program. Absent libraries are simply not loaded. Never in the library.
 */
#include <dlfcn.h>

__attribute__((constructor)) static void keep_drivers(void)
{
	static const char *const libs[] = {
		"libstdc++.so.6", "libvulkan_lvp.so", "libpocl.so.2",
	};
	unsigned int i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		dlopen(libs[i], RTLD_NOW | RTLD_NODELETE | RTLD_LOCAL);
}
