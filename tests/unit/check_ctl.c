// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the control protocol codec (daemon/ctl.c). */
#include <check.h>
#include <errno.h>
#include <stdalign.h>
#include <string.h>

#include "ctl.h"
#include "unit.h"

static alignas(8) unsigned char buf[HBM_CTL_MAX_PACKET];

static size_t retire_request(uint32_t seq)
{
	struct hbm_ctl_extent x = { .identity = "pci:0000:3b:00.0",
				    .offset = 0x5000, .length = 0x1000,
				    .flags = HBM_CTL_PENDING };

	return hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RETIRE, seq, 0, &x);
}

START_TEST(round_trip)
{
	struct hbm_ctl_status st = { .devices = 3, .stored_pages = 12,
				     .state_dir = "/var/lib/hbmguard" };
	const struct hbm_ctl_extent *x;
	const struct hbm_ctl_status *s;
	struct hbm_ctl_header h;
	const void *body;
	size_t len = retire_request(7);

	ck_assert_uint_eq(len, sizeof(h) + sizeof(*x));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	x = body;
	ck_assert_uint_eq(h.type, HBM_CTL_RETIRE);
	ck_assert_uint_eq(h.seq, 7);
	ck_assert_str_eq(x->identity, "pci:0000:3b:00.0");
	ck_assert_uint_eq(x->offset, 0x5000);
	ck_assert_uint_eq(x->flags, HBM_CTL_PENDING);

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS, 9, 0, NULL);
	ck_assert_uint_eq(len, sizeof(h));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	ck_assert_ptr_null(body);

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS | HBM_CTL_REPLY, 9, 0, &st);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	s = body;
	ck_assert_uint_eq(s->devices, 3);
	ck_assert_str_eq(s->state_dir, "/var/lib/hbmguard");

	/* A refusal has no body, whatever the type. */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RETIRE | HBM_CTL_REPLY, 3, -EPERM, NULL);
	ck_assert_uint_eq(len, sizeof(h));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_int_eq(h.error, -EPERM);
	ck_assert_ptr_null(body);

	ck_assert_uint_eq(hbm_ctl_encode(buf, sizeof(h), HBM_CTL_RETIRE, 1, 0, x), 0);
}
END_TEST

/* Every truncation and every extension of a good request is refused. */
START_TEST(every_length)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len = retire_request(1), n;

	for (n = 0; n < sizeof(buf); n++)
		if (n != len)
			ck_assert_msg(hbm_ctl_decode(buf, n, false, &h, &body) == -EBADMSG,
				      "length %zu taken", n);
}
END_TEST

/* A flip of any bit of the header is refused, but for seq (any value). */
START_TEST(every_header_bit)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len = retire_request(1), bit;

	for (bit = 0; bit < sizeof(h) * 8; bit++) {
		size_t byte = bit / 8;
		int err;

		if (byte >= offsetof(struct hbm_ctl_header, seq) &&
		    byte < offsetof(struct hbm_ctl_header, error))
			continue;
		retire_request(1);
		buf[byte] ^= 1 << (bit % 8);
		err = hbm_ctl_decode(buf, len, false, &h, &body);
		ck_assert_msg(err == -EBADMSG || err == -EPROTONOSUPPORT ||
			      err == -EOPNOTSUPP, "bit %zu taken: %d", bit, err);
	}
}
END_TEST

START_TEST(bad_bodies)
{
	struct hbm_ctl_extent x = { .identity = "sim:sim0", .offset = 0,
				    .length = 4096 };
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

#define REFUSED(type, ext) \
	(len = hbm_ctl_encode(buf, sizeof(buf), type, 1, 0, &(ext)), \
	 hbm_ctl_decode(buf, len, false, &h, &body) == -EBADMSG)

	x.identity[0] = 0;
	ck_assert(REFUSED(HBM_CTL_RETIRE, x));		/* no identity */
	memset(x.identity, 'a', sizeof(x.identity));
	ck_assert(REFUSED(HBM_CTL_RETIRE, x));		/* not terminated */
	strcpy(x.identity, "sim:sim0");
	x.reserved = 1;
	ck_assert(REFUSED(HBM_CTL_RETIRE, x));
	x.reserved = 0;
	x.flags = 2;
	ck_assert(REFUSED(HBM_CTL_RETIRE, x));		/* unknown flag */
	x.flags = HBM_CTL_PENDING;
	ck_assert(REFUSED(HBM_CTL_CLEAR, x));		/* not a CLEAR's */
	x.flags = 0;
	x.length = 0;
	ck_assert(REFUSED(HBM_CTL_CLEAR, x));
	x.offset = UINT64_MAX - 4095;
	x.length = 8192;
	ck_assert(REFUSED(HBM_CTL_RETIRE, x));		/* wraps */
#undef REFUSED
}
END_TEST

START_TEST(bad_headers)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	/* A reply where a request is due, and the other way round. */
	len = retire_request(1);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS | HBM_CTL_REPLY, 1, -EIO, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	/* A request carrying an error, a reply a positive one. */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS, 1, -EIO, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS | HBM_CTL_REPLY, 1, 5, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	/* Unknown types, another version: said as such, seq still read. */
	len = hbm_ctl_encode(buf, sizeof(buf), 0, 4, 0, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EOPNOTSUPP);
	len = hbm_ctl_encode(buf, sizeof(buf), __HBM_CTL_TYPE_MAX, 4, 0, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EOPNOTSUPP);
	ck_assert_uint_eq(h.seq, 4);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_STATUS, 5, 0, NULL);
	((struct hbm_ctl_header *)buf)->version = 2;
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EPROTONOSUPPORT);
	ck_assert_uint_eq(h.seq, 5);
}
END_TEST

static int rank_decode(const struct hbm_ctl_rank *r)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_REGISTER, 1, 0, r);

	return hbm_ctl_decode(buf, len, false, &h, &body);
}

START_TEST(rank_messages)
{
	struct hbm_ctl_rank r = { .job = "llama-70b", .device = "pci:0000:3b:00.0",
				  .rank = 2, .world_size = 4, .local_rank = 2,
				  .nr_ranges = 1, .ranges = { { 0x100000, 0x200000 } } };
	struct hbm_ctl_recovery rc = { .incident = 1, .action = HBM_RECOVERY_PAUSE,
				       .device = "pci:0000:3b:00.0" };
	struct hbm_ctl_answer a = { .incident = 1, .answer = HBM_ANSWER_PAUSED };
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	ck_assert_int_eq(rank_decode(&r), 0);
	r.rank = 4;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);		/* >= world size */
	r.rank = 2;
	r.world_size = 0;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);
	r.world_size = 4;
	r.nr_ranges = HBM_CTL_MAX_RANGES + 1;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);
	r.nr_ranges = 0;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);		/* a range beyond the count */
	r.nr_ranges = 1;
	r.ranges[0].length = 0;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);
	r.ranges[0] = (struct hbm_ctl_range){ UINT64_MAX - 10, 100 };
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);		/* wraps */
	r.ranges[0] = (struct hbm_ctl_range){ 0, 4096 };
	r.job[0] = 0;
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);
	memset(r.job, 'j', sizeof(r.job));
	ck_assert_int_eq(rank_decode(&r), -EBADMSG);

	/* RECOVERY comes from the daemon only, and is never a reply. */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY, 0, 0, &rc);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY | HBM_CTL_REPLY, 0, 0, &rc);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	rc.action = __HBM_RECOVERY_MAX;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY, 0, 0, &rc);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_ANSWER, 3, 0, &a);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	a.answer = 0;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_ANSWER, 3, 0, &a);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	a.answer = __HBM_ANSWER_MAX;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_ANSWER, 3, 0, &a);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	a = (struct hbm_ctl_answer){ .incident = 0, .answer = HBM_ANSWER_PAUSED };
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_ANSWER, 3, 0, &a);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);

	/* The list requests: an index, its reserved word zero. */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_INCIDENT_GET, 4, 0,
			     &(struct hbm_ctl_index){ .index = 9 });
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_GET, 4, 0,
			     &(struct hbm_ctl_index){ .index = 0, .reserved = 1 });
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
}
END_TEST

Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, every_length);
	tcase_add_test(tc, every_header_bit);
	tcase_add_test(tc, bad_bodies);
	tcase_add_test(tc, bad_headers);
	tcase_add_test(tc, rank_messages);
	suite_add_tcase(s, tc);
	return s;
}
