// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the state file format (daemon/state.c). */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/hbmguard.h>

#include "state.h"
#include "unit.h"

#define expect(cond) do {						\
	if (!(cond))							\
		ck_abort_msg("%s:%d: expected %s", __FILE__, __LINE__, #cond); \
} while (0)

static struct hbm_state_record sample_records[] = {
	{ 0x1000, 0x1000, 1700000000, 1700000100, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_UE, 1 },
	{ 0x8000, 0x8000, 1700000200, 1700000200, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_ADMIN, 0 },
	{ 0x20000, 0x1000, 1700000300, 1700000900, HBMGUARD_STATE_PENDING, HBMGUARD_SOURCE_CE_THRESHOLD, 50 },
	{ 0x21000, 0x1000, 1700000400, 1700000400, HBMGUARD_STATE_FAILED, HBMGUARD_SOURCE_POISON, 1 },
	{ 0x7fff000, 0x1000, 1700000500, 1700000500, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_RESTORED, 0 },
};
#define NR (sizeof(sample_records) / sizeof(sample_records[0]))

static struct hbm_state sample(void)
{
	struct hbm_state s = { .page_size = 4096, .serial = 42,
			       .records = sample_records, .nr = NR };

	strcpy(s.identity, "0000:3b:00.0");
	return s;
}

static uint8_t *encoded(size_t *len)
{
	struct hbm_state s = sample();
	uint8_t *buf;

	*len = hbm_state_encode_size(&s);
	buf = malloc(*len);
	hbm_state_encode(&s, buf);
	return buf;
}

START_TEST(crc32c_vector)
{
	ck_assert_uint_eq(hbm_crc32c(0, "123456789", 9), 0xe3069283);
}
END_TEST

START_TEST(round_trip)
{
	struct hbm_state_damage d;
	struct hbm_state out;
	size_t len;
	uint8_t *buf = encoded(&len);

	ck_assert_uint_eq(len, HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE);
	ck_assert_int_eq(hbm_state_decode(buf, len, &out, &d), 0);
	ck_assert_uint_eq(out.nr, NR);
	ck_assert_mem_eq(out.records, sample_records, sizeof(sample_records));
	ck_assert_str_eq(out.identity, "0000:3b:00.0");
	ck_assert_uint_eq(out.page_size, 4096);
	ck_assert_uint_eq(out.serial, 42);
	ck_assert(!d.header && !d.bad_records && !d.missing_records);
	hbm_state_free(&out);
	free(buf);
}
END_TEST

/* Every truncation keeps exactly the whole records before the cut. */
START_TEST(every_truncation)
{
	size_t len, cut;
	uint8_t *buf = encoded(&len);

	for (cut = 0; cut < len; cut++) {
		struct hbm_state_damage d;
		struct hbm_state out;
		int err = hbm_state_decode(buf, cut, &out, &d);

		if (cut < HBM_STATE_HEADER_SIZE) {
			expect(err == -EBADMSG && d.header);
			continue;
		}
		expect(err == 0);
		expect(out.nr == (cut - HBM_STATE_HEADER_SIZE) / HBM_STATE_RECORD_SIZE);
		expect(d.missing_records == NR - out.nr && !d.bad_records);
		expect(!memcmp(out.records, sample_records, out.nr * sizeof(*out.records)));
		hbm_state_free(&out);
	}
	free(buf);
}
END_TEST

/* Every single bit flipped: the header distrusted, or just that record lost. */
START_TEST(every_bit_flip)
{
	size_t len, bit;
	uint8_t *buf = encoded(&len);

	for (bit = 0; bit < len * 8; bit++) {
		size_t byte = bit / 8, hit, i, j;
		struct hbm_state_damage d;
		struct hbm_state out;
		int err;

		buf[byte] ^= 1 << bit % 8;
		err = hbm_state_decode(buf, len, &out, &d);
		buf[byte] ^= 1 << bit % 8;
		if (byte < HBM_STATE_HEADER_SIZE) {
			expect(err == -EBADMSG && d.header);
			continue;
		}
		hit = (byte - HBM_STATE_HEADER_SIZE) / HBM_STATE_RECORD_SIZE;
		expect(err == 0 && d.bad_records == 1 && out.nr == NR - 1);
		for (i = 0, j = 0; i < NR; i++)
			if (i != hit)
				expect(!memcmp(&out.records[j++], &sample_records[i],
					       sizeof(sample_records[i])));
		hbm_state_free(&out);
	}
	free(buf);
}
END_TEST

/* Records with a good CRC but bad content are refused too. */
START_TEST(bad_records)
{
	struct hbm_state_record bad[] = {
		{ 0x1001, 0x1000, 1, 1, HBMGUARD_STATE_RETIRED, 1, 0 },	/* unaligned */
		{ 0x2000, 0, 1, 1, HBMGUARD_STATE_RETIRED, 1, 0 },	/* empty */
		{ 0x3000, 0x1000, 1, 1, 0, 1, 0 },			/* state */
		{ 0x4000, 0x1000, 1, 1, HBMGUARD_STATE_RETIRED, 99, 0 },	/* source */
		{ 0x6000, 0x2000, 1, 1, HBMGUARD_STATE_RETIRED, 1, 0 },
		{ 0x7000, 0x1000, 1, 1, HBMGUARD_STATE_RETIRED, 1, 0 },	/* overlaps */
		{ ~0xfffULL, 0x2000, 1, 1, HBMGUARD_STATE_RETIRED, 1, 0 },	/* wraps */
	};
	struct hbm_state s = { .page_size = 4096, .records = bad, .nr = 7 }, out;
	struct hbm_state_damage d;
	uint8_t *buf;

	strcpy(s.identity, "x");
	buf = malloc(hbm_state_encode_size(&s));
	hbm_state_encode(&s, buf);
	ck_assert_int_eq(hbm_state_decode(buf, hbm_state_encode_size(&s), &out, &d), 0);
	ck_assert_uint_eq(out.nr, 1);
	ck_assert_uint_eq(out.records[0].offset, 0x6000);
	ck_assert_uint_eq(d.bad_records, 6);
	hbm_state_free(&out);

	/* A header that names no identity, or a bad page size, is distrusted. */
	s.nr = 0;
	s.identity[0] = 0;
	hbm_state_encode(&s, buf);
	ck_assert_int_eq(hbm_state_decode(buf, HBM_STATE_HEADER_SIZE, &out, &d), -EBADMSG);
	strcpy(s.identity, "x");
	s.page_size = 3000;
	hbm_state_encode(&s, buf);
	ck_assert_int_eq(hbm_state_decode(buf, HBM_STATE_HEADER_SIZE, &out, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "bad page size");
	free(buf);
}
END_TEST

START_TEST(file_names)
{
	char name[64];

	ck_assert_int_eq(hbm_state_file_name("0000:3b:00.0", name, sizeof(name)), 0);
	ck_assert_str_eq(name, "0000:3b:00.0.state");
	ck_assert_int_eq(hbm_state_file_name("GPU-1/../x y", name, sizeof(name)), 0);
	ck_assert_str_eq(name, "GPU-1%2f..%2fx%20y.state");
	ck_assert_int_eq(hbm_state_file_name("", name, sizeof(name)), -EINVAL);
	ck_assert_int_eq(hbm_state_file_name("a-long-identity-that-does-not-fit",
					     name, 16), -ENAMETOOLONG);
}
END_TEST

START_TEST(write_read_quarantine)
{
	char dir[] = "/tmp/hbmstate.XXXXXX", moved[300];
	struct hbm_state s = sample(), out;
	struct hbm_state_damage d;
	int dirfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, &out, &d), -ENOENT);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	s.serial = 43;
	s.nr = 2;
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);	/* replaces */
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, &out, &d), 0);
	ck_assert_uint_eq(out.nr, 2);
	ck_assert_uint_eq(out.serial, 43);
	hbm_state_free(&out);
	ck_assert_int_eq(faccessat(dirfd, ".0000:3b:00.0.state.tmp", F_OK, 0), -1);

	ck_assert_int_eq(hbm_state_quarantine(dirfd, s.identity, moved, sizeof(moved)), 0);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, &out, &d), -ENOENT);
	ck_assert_int_eq(faccessat(dirfd, moved, F_OK, 0), 0);
	unlinkat(dirfd, moved, 0);
	close(dirfd);
	rmdir(dir);
}
END_TEST

Suite *state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, crc32c_vector);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, every_bit_flip);
	tcase_add_test(tc, bad_records);
	tcase_add_test(tc, file_names);
	tcase_add_test(tc, write_read_quarantine);
	suite_add_tcase(s, tc);
	return s;
}
