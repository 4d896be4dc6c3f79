// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the incidents file format (daemon/incidents.c). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "incidents.h"
#include "state.h"
#include "unit.h"

#define NR 3

static struct hbm_ctl_incident sample(uint64_t id)
{
	struct hbm_ctl_incident x = {
		.id = id, .offset = 0x9000, .length = 0x1000,
		.state = HBM_INCIDENT_ESCALATED, .failed_rank = 2,
	};

	strcpy(x.job, "job1");
	strcpy(x.device, "sim:sim0");
	strcpy(x.reason, "ranks did not pause in time");
	x.at[HBM_INCIDENT_DETECTED] = 1700000000000000;
	x.at[HBM_INCIDENT_PAUSING] = 1700000000000001;
	x.at[HBM_INCIDENT_ESCALATED] = 1700000002000000;
	return x;
}

static uint8_t *encoded(size_t *len)
{
	uint8_t *buf;
	size_t i;

	*len = hbm_incidents_encode_size(NR);
	buf = calloc(1, *len);
	hbm_incidents_encode_header(buf, NR);
	for (i = 0; i < NR; i++) {
		struct hbm_ctl_incident x = sample(10 + i);

		hbm_incidents_encode_record(buf, i, &x);
	}
	return buf;
}

/* Decoded into room for NR: the count of good records, or -errno. */
static int decode(const uint8_t *buf, size_t len, struct hbm_incidents_damage *d)
{
	struct hbm_ctl_incident out[NR];
	size_t nr = 99;
	int err = hbm_incidents_decode(buf, len, out, NR, &nr, d);

	return err ? err : (int)nr;
}

/* Re-seal record @i after changing it, so that only the change is wrong. */
static void reseal(uint8_t *buf, size_t i, void (*change)(struct hbm_ctl_incident *))
{
	struct hbm_ctl_incident x;

	memcpy(&x, buf + hbm_incidents_encode_size(i), sizeof(x));
	change(&x);
	hbm_incidents_encode_record(buf, i, &x);
	if (x.index || x.total)	/* the encoder clears them: put them back */
		memcpy(buf + hbm_incidents_encode_size(i), &x, sizeof(x));
}

START_TEST(round_trip)
{
	struct hbm_ctl_incident out[NR], want = sample(11);
	struct hbm_incidents_damage d;
	size_t len, nr;
	uint8_t *buf = encoded(&len);

	ck_assert_int_eq(hbm_incidents_decode(buf, len, out, NR, &nr, &d), 0);
	ck_assert_uint_eq(nr, NR);
	ck_assert_uint_eq(d.bad_records + d.missing_records, 0);
	ck_assert_int_eq(memcmp(&out[1], &want, sizeof(want)), 0);
	/* Room for fewer: the newest are kept. */
	ck_assert_int_eq(hbm_incidents_decode(buf, len, out, 2, &nr, &d), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(out[0].id, 11);
	ck_assert_uint_eq(out[1].id, 12);
	free(buf);
}
END_TEST

START_TEST(bad_headers)
{
	struct hbm_incidents_damage d;
	uint32_t v;
	size_t len;
	uint8_t *buf = encoded(&len);

	ck_assert_int_eq(decode(buf, 10, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "shorter than a header");
	buf[0] ^= 1;
	ck_assert_int_eq(decode(buf, len, &d), -EBADMSG);
	buf[0] ^= 1;
	v = 2;
	memcpy(buf + 8, &v, 4);
	ck_assert_int_eq(decode(buf, len, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "unknown version");
	v = 1;
	memcpy(buf + 8, &v, 4);
	v = NR - 1;	/* more records than the count says */
	memcpy(buf + 12, &v, 4);
	ck_assert_int_eq(decode(buf, len, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "its size does not match its count");
	v = NR;
	memcpy(buf + 12, &v, 4);
	ck_assert_int_eq(decode(buf, len - 1, &d), -EBADMSG);	/* a torn record */
	ck_assert_int_eq(decode(buf, len, &d), NR);
	free(buf);
}
END_TEST

/* Cut after each whole record: what is there is kept, the rest missing. */
START_TEST(truncated)
{
	struct hbm_incidents_damage d;
	size_t len, i;
	uint8_t *buf = encoded(&len);

	for (i = 0; i <= NR; i++) {
		ck_assert_int_eq(decode(buf, hbm_incidents_encode_size(i), &d), (int)i);
		ck_assert_uint_eq(d.missing_records, NR - i);
	}
	free(buf);
}
END_TEST

START_TEST(every_bit_flip)
{
	struct hbm_incidents_damage d;
	size_t len, bit;
	uint8_t *buf = encoded(&len);

	for (bit = 16 * 8; bit < len * 8; bit++) {
		int n;

		buf[bit / 8] ^= 1 << bit % 8;
		n = decode(buf, len, &d);
		ck_assert_msg(n == NR - 1 && d.bad_records == 1, "bit %zu: %d good", bit, n);
		buf[bit / 8] ^= 1 << bit % 8;
	}
	free(buf);
}
END_TEST

static void unterminated_job(struct hbm_ctl_incident *x) { memset(x->job, 'j', sizeof(x->job)); }
static void empty_device(struct hbm_ctl_incident *x) { x->device[0] = 0; }
static void escape_in_job(struct hbm_ctl_incident *x) { strcpy(x->job, "x\n<0>forged"); }
static void terminal_in_reason(struct hbm_ctl_incident *x) { strcpy(x->reason, "\033[2J"); }
static void unterminated_reason(struct hbm_ctl_incident *x) { memset(x->reason, 'r', sizeof(x->reason)); }
static void state_zero(struct hbm_ctl_incident *x) { x->state = 0; }
static void state_past(struct hbm_ctl_incident *x) { x->state = __HBM_INCIDENT_MAX; }
static void state_untimed(struct hbm_ctl_incident *x) { x->state = HBM_INCIDENT_RESUMED; }
static void no_length(struct hbm_ctl_incident *x) { x->length = 0; }
static void wraps(struct hbm_ctl_incident *x) { x->offset = UINT64_MAX - 0xfff; }
static void same_id(struct hbm_ctl_incident *x) { x->id = 10; }
static void index_set(struct hbm_ctl_incident *x) { x->index = 1; }
/* Names the protocol (ctl.h) refuses: hbmctl would refuse the daemon's reply. */
static void space_in_job(struct hbm_ctl_incident *x) { strcpy(x->job, "my job"); }
static void space_in_device(struct hbm_ctl_incident *x) { strcpy(x->device, "sim sim0"); }

START_TEST(bad_records)
{
	static void (*const change[])(struct hbm_ctl_incident *) = {
		unterminated_job, empty_device, escape_in_job, terminal_in_reason,
		unterminated_reason, state_zero, state_past, state_untimed, no_length,
		wraps, same_id, index_set, space_in_job, space_in_device,
	};
	struct hbm_incidents_damage d;
	size_t len, i;

	for (i = 0; i < sizeof(change) / sizeof(change[0]); i++) {
		uint8_t *buf = encoded(&len);
		uint32_t crc;

		reseal(buf, 1, change[i]);
		if (change[i] == index_set) {	/* its CRC over what is there */
			crc = hbm_crc32c(0, buf + hbm_incidents_encode_size(1),
					 sizeof(struct hbm_ctl_incident));
			memcpy(buf + hbm_incidents_encode_size(1) +
			       sizeof(struct hbm_ctl_incident), &crc, 4);
		}
		ck_assert_msg(decode(buf, len, &d) == NR - 1 && d.bad_records == 1,
			      "change %zu taken", i);
		free(buf);
	}
}
END_TEST

Suite *incidents_suite(void)
{
	Suite *s = suite_create("incidents");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, bad_headers);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, every_bit_flip);
	tcase_add_test(tc, bad_records);
	suite_add_tcase(s, tc);
	return s;
}
