// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the control protocol codec (daemon/ctl.c). */
#include <check.h>
#include <errno.h>
#include <stdalign.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "fdsink.h"
#include "ratelimit.h"
#include "sha256.h"
#include "subuid.h"
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

static int keyed_decode(const struct hbm_ctl_rank_keyed *k)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_REGISTER_KEYED, 1, 0, k);

	return hbm_ctl_decode(buf, len, false, &h, &body);
}

/*
 * RANK_REGISTER_KEYED: a rank as RANK_REGISTER's, and a key of 32 to 63
 * characters of a name's, NUL-padded; the reply is RANK_REGISTER's, no key.
 */
START_TEST(keyed_rank_messages)
{
	struct hbm_ctl_rank_keyed k = { .rank = { .job = "llama-70b", .device = "gpu0",
						  .world_size = 2 },
					.key = "0123456789abcdef0123456789abcdef" };
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	ck_assert_int_eq(keyed_decode(&k), 0);
	memset(k.key, 'k', HBM_CTL_KEY_LEN - 1);		/* the longest */
	ck_assert_int_eq(keyed_decode(&k), 0);
	memset(k.key, 'k', HBM_CTL_KEY_LEN);			/* unterminated */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	memset(k.key, 0, HBM_CTL_KEY_LEN);			/* none */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	strcpy(k.key, "0123456789abcdef0123456789abcde");	/* 31: too short */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	strcpy(k.key, "0123456789abcdef 0123456789abcdef");	/* a space */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	strcpy(k.key, "0123456789abcdef0123456789abcdef\x7f");
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	strcpy(k.key, "0123456789abcdef0123456789abcdef");
	k.key[HBM_CTL_KEY_LEN - 1] = 'x';			/* after its NUL */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	k.key[HBM_CTL_KEY_LEN - 1] = 0;
	k.rank.world_size = 0;					/* the rank's rules too */
	ck_assert_int_eq(keyed_decode(&k), -EBADMSG);
	k.rank.world_size = 2;
	ck_assert_int_eq(keyed_decode(&k), 0);

	/* a RANK_REGISTER's body under the new type is cut short */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_REGISTER, 1, 0, &k.rank);
	((struct hbm_ctl_header *)buf)->type = HBM_CTL_RANK_REGISTER_KEYED;
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RANK_REGISTER_KEYED | HBM_CTL_REPLY, 1, 0,
			     &k.rank);
	ck_assert_uint_eq(len, sizeof(h) + sizeof(struct hbm_ctl_rank));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
}
END_TEST

/*
 * The budget of the lines a peer causes (ratelimit.h): a burst per
 * interval from its first line, then none until the interval ends, the
 * next one told how many were left out, once.
 */
START_TEST(a_budget_of_lines)
{
	struct hbm_ratelimit rl = { 0 };
	uint64_t missed = 99;
	int i;

	for (i = 0; i < 3; i++) {
		ck_assert(hbm_ratelimit(&rl, 1000, 3, 5000 + i, &missed));
		ck_assert_uint_eq(missed, 0);
	}
	for (i = 0; i < 5; i++)
		ck_assert(!hbm_ratelimit(&rl, 1000, 3, 5100 + i, &missed));
	ck_assert(!hbm_ratelimit(&rl, 1000, 3, 5999, &missed));	/* the interval's last us */
	ck_assert(hbm_ratelimit(&rl, 1000, 3, 6000, &missed));
	ck_assert_uint_eq(missed, 6);
	ck_assert(hbm_ratelimit(&rl, 1000, 3, 6001, &missed));
	ck_assert_uint_eq(missed, 0);
	ck_assert(hbm_ratelimit(&rl, 1000, 3, 9000, &missed));	/* a gap: a budget anew */
	ck_assert(hbm_ratelimit(&rl, 1000, 3, 9001, &missed));
	ck_assert(hbm_ratelimit(&rl, 1000, 3, 9002, &missed));
	ck_assert(!hbm_ratelimit(&rl, 1000, 3, 9003, &missed));
}
END_TEST

/* FIPS 180-4's examples (NIST's SHA256.pdf), a million 'a's, each padding's edge. */
START_TEST(sha256_of_the_standard)
{
	static const struct {
		const char *msg;
		size_t repeat;
		const char *digest;
	} vectors[] = {
		{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
		{ "a", 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ "a", 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ "a", 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ "a", 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ "a", 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
	};
	uint8_t out[HBM_SHA256_LEN];
	char hex[2 * HBM_SHA256_LEN + 1];
	size_t i, j, len;
	char *msg;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		len = strlen(vectors[i].msg) * vectors[i].repeat;
		msg = malloc(len + 1);
		ck_assert_ptr_nonnull(msg);
		for (j = 0; j < vectors[i].repeat; j++)
			memcpy(msg + j * strlen(vectors[i].msg), vectors[i].msg,
			       strlen(vectors[i].msg));
		hbm_sha256(msg, len, out);
		free(msg);
		for (j = 0; j < HBM_SHA256_LEN; j++)
			sprintf(hex + 2 * j, "%02x", out[j]);
		ck_assert_msg(!strcmp(hex, vectors[i].digest), "vector %zu: %s", i, hex);
	}
}
END_TEST

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

/*
 * Names from peers end up in logs and on terminals: a newline (a forged
 * journal line, "<0>" an emergency), a terminal escape, bytes that are not
 * UTF-8 or a space is refused in every name field, whatever the type.
 */
START_TEST(unsafe_names)
{
	static const char *const bad[] = {
		"x\n<0>hbmguardd: forged", "\x1b]0;owned\a", "caf\xc3\xa9", "\xff",
		"two words", "tab\there", "del\x7f",
	};
	struct hbm_ctl_rank r = { .job = "run-42", .device = "pci:0000:3b:00.0",
				  .world_size = 1 };
	struct hbm_ctl_extent x = { .identity = "sim:sim0", .length = 4096 };
	struct hbm_ctl_recovery rc = { .incident = 1, .action = HBM_RECOVERY_PAUSE,
				       .device = "sim:sim0" };
	struct hbm_ctl_header h;
	const void *body;
	size_t i, len;

	ck_assert_int_eq(rank_decode(&r), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hbm_ctl_rank rr = r;
		struct hbm_ctl_extent xx = x;
		struct hbm_ctl_recovery rcc = rc;

		strcpy(rr.job, bad[i]);
		ck_assert_msg(rank_decode(&rr) == -EBADMSG, "job %zu taken", i);
		rr = r;
		strcpy(rr.device, bad[i]);
		ck_assert_msg(rank_decode(&rr) == -EBADMSG, "device %zu taken", i);
		strcpy(xx.identity, bad[i]);
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLEAR, 1, 0, &xx);
		ck_assert_msg(hbm_ctl_decode(buf, len, false, &h, &body) == -EBADMSG,
			      "identity %zu taken", i);
		strcpy(rcc.device, bad[i]);
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY, 0, 0, &rcc);
		ck_assert_msg(hbm_ctl_decode(buf, len, true, &h, &body) == -EBADMSG,
			      "recovery device %zu taken", i);
	}
	/* What real identities and job ids look like passes. */
	ck_assert(hbm_ctl_name_valid("pci:0000:3b:00.0", 64));
	ck_assert(hbm_ctl_name_valid("GPU-3f0e1b2c-aaaa-bbbb-cccc-0123456789ab", 64));
	ck_assert(hbm_ctl_name_valid("slurm-1234.0_run@node7", 64));
	ck_assert(!hbm_ctl_name_valid("", 64));
	ck_assert(!hbm_ctl_name_valid("abcd", 4));		/* not terminated */
}
END_TEST

/* Output: every byte outside printable ASCII shown as an escape. */
START_TEST(escaped_output)
{
	char out[64];

	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), "sim:sim0", false), "sim:sim0");
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), "a\n<0>b", false), "a\\x0a<0>b");
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), "\x1b[2J\\", false),
			 "\\x1b[2J\\\\");
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), "caf\xc3\xa9\"", false),
			 "caf\\xc3\\xa9\"");
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), "caf\xc3\xa9\"\\\n", true),
			 "caf\\u00c3\\u00a9\\\"\\\\\\u000a");
	/* Cut short between escapes, never in one. */
	ck_assert_str_eq(hbm_ctl_escape(out, 8, "ab\x01\x02", false), "ab\\x01");
	ck_assert_str_eq(hbm_ctl_escape(out, 1, "ab", false), "");
}
END_TEST

/*
 * The sender as the kernel says it: its own pid without the proof of
 * CAP_SYS_ADMIN (never pid 1, so never an administrator, whoever runs the
 * test).
 */
START_TEST(sender_credentials)
{
	int sv[2], one = 1;
	struct ucred who;
	char in[16];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	ck_assert_int_eq(hbm_ctl_send(sv[0], "ping", 4, true), 0);
	ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), 4);
	ck_assert_int_eq(who.uid, getuid());
	if (who.pid != 1) {	/* a capable tester proves it; anyone else is not */
		ck_assert_int_eq(who.pid, getpid());
		ck_assert(!hbm_ctl_sender_is_admin(&who));
	}
	/* Oversized: its whole length said, so the caller can refuse it. */
	ck_assert_int_eq(hbm_ctl_send(sv[0], "0123456789abcdefXYZ", 19, false), 0);
	ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), 19);
	ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), -EAGAIN);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A two-byte packet on @sock passing descriptor @fd along (SCM_RIGHTS). */
static void send_with_fd(int sock, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	struct iovec iov = { .iov_base = "fd", .iov_len = 2 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };

	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
	ck_assert_int_eq(sendmsg(sock, &msg, 0), 2);
}

/*
 * A descriptor a peer passes is never installed in the daemon, so never
 * close()d there: close() runs the file's ->flush, which a FUSE server can
 * hold forever, and drops the closer's POSIX locks on the file.  The lock
 * is what shows it here: held by this process, seen from a child.  Its
 * packet is refused unread (left queued: not dropped here either, whose
 * release could wait), nothing installed.
 */
START_TEST(passed_fds_never_installed)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[] = "/tmp/hbm-ctl-lock-XXXXXX", in[16];
	int sv[2], one = 1, fd, pass, status, nfd;
	struct ucred who;
	pid_t child;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(fcntl(fd, F_SETLK, &lk), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	pass = dup(fd);
	send_with_fd(sv[0], pass);
	nfd = hbm_test_open_fds();
	ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), -ETOOMANYREFS);
	ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), -ETOOMANYREFS);
	ck_assert_int_eq(hbm_test_open_fds(), nfd);	/* nothing installed */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		_exit(fcntl(fd, F_GETLK, &q) || q.l_type == F_UNLCK);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the receiver closed a passed descriptor: its lock went");
	close(pass);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A loopback TCP socket with unsent data its peer never reads, lingering 60 s. */
static int lingering_socket(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = 60 };
	socklen_t len = sizeof(sa);
	static char junk[65536];
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), t, peer;

	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(t, 0);
	if (connect(t, (struct sockaddr *)&sa, sizeof(sa)))
		ck_assert_int_eq(errno, EINPROGRESS);
	peer = accept(l, NULL, NULL);		/* never read: the window shuts */
	ck_assert_int_ge(peer, 0);
	while (write(t, junk, sizeof(junk)) > 0)
		;
	ck_assert_int_eq(setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(l);
	return t;
}

/*
 * Any local user can pass the daemon a TCP socket that lingers (its data
 * unsent) with a packet; released in the daemon, the wait would stop its
 * loop for the linger time (helper-158: 5 s for 5 s, up to INT_MAX).  The
 * packet is refused unread, and the connection, its queue with that file,
 * is released by the sink's child: hbm_fdsink_give() comes back at once,
 * where a close() here waits 60 s (the timeout of 20 s fails it first).
 */
START_TEST(a_lingering_file_passed_is_released_elsewhere)
{
	struct hbm_fdsink sink;
	int sv[2], t, i, one = 1;
	struct ucred who;
	char in[16];

	hbm_fdsink_init(&sink);
	for (i = 0; i < 2; i++) {	/* the second to the same child */
		t = lingering_socket();
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
		send_with_fd(sv[0], t);
		close(t);			/* the packet holds it alone now */
		close(sv[0]);
		ck_assert_int_eq(hbm_ctl_recv(sv[1], in, sizeof(in), &who), -ETOOMANYREFS);
		hbm_fdsink_give(&sink, sv[1]);
		ck_assert_int_gt(sink.pid, 0);
	}
	ck_assert_int_eq(fcntl(sv[1], F_GETFD), -1);	/* closed here */
	hbm_fdsink_stop(&sink);
}
END_TEST

/*
 * A child stuck in a release (a lingering socket whose peer never reads)
 * fills its queue: it is killed, and another takes the connections, none
 * of them kept or released here (helper-160's L2: untested).
 */
START_TEST(a_stuck_sink_child_is_replaced)
{
	struct hbm_fdsink sink;
	int sv[2], i, st, nfd;
	pid_t first, got = 0;

	hbm_fdsink_init(&sink);
	hbm_fdsink_give(&sink, lingering_socket());
	nfd = hbm_test_open_fds();	/* the child's socket and pidfd among them */
	first = sink.pid;
	ck_assert_int_gt(first, 0);
	for (i = 0; i < 100000 && sink.pid == first; i++) {
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		close(sv[0]);
		hbm_fdsink_give(&sink, sv[1]);
		ck_assert_int_eq(fcntl(sv[1], F_GETFD), -1);	/* closed here */
	}
	ck_assert_int_gt(sink.pid, 0);
	ck_assert_int_ne(sink.pid, first);
	ck_assert_uint_eq(sink.kept, 0);
	ck_assert_int_eq(hbm_test_open_fds(), nfd);	/* the dead child's closed */
	for (i = 0; i < 5000 && !(got = waitpid(first, &st, WNOHANG)); i++)
		usleep(1000);	/* SIGKILL ends its lingering release at once */
	ck_assert_msg(got, "the stuck child alive 5 s on: not killed");
	if (got == first)
		ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	else
		ck_assert_int_eq(errno, ECHILD);	/* reaped by the sink already */
	hbm_fdsink_stop(&sink);
}
END_TEST

/*
 * With no child to be had (killed ones that do not end, at most
 * HBM_FDSINK_STUCK_MAX), a connection is kept open, never released here;
 * once they are gone, a child is made again.
 */
START_TEST(no_sink_child_keeps_the_connection_open)
{
	struct hbm_fdsink sink;
	int sv[2], i, st;

	hbm_fdsink_init(&sink);
	for (i = 0; i < HBM_FDSINK_STUCK_MAX; i++) {	/* as if killed, never ending */
		sink.dead[i] = fork();
		ck_assert_int_ge(sink.dead[i], 0);
		if (!sink.dead[i]) {	/* gone with the test, whatever it does */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
	}
	sink.nr_dead = HBM_FDSINK_STUCK_MAX;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	hbm_fdsink_give(&sink, sv[1]);
	ck_assert_uint_eq(sink.kept, 1);
	ck_assert_int_eq(sink.pid, 0);
	ck_assert_int_ne(fcntl(sv[1], F_GETFD), -1);	/* kept open */
	for (i = 0; i < HBM_FDSINK_STUCK_MAX; i++) {
		kill(sink.dead[i], SIGKILL);
		while (kill(sink.dead[i], 0) == 0 && waitpid(sink.dead[i], &st, WNOHANG) == 0)
			usleep(1000);	/* gone: reaped by hbm_fdsink_give() or here */
	}
	close(sv[0]);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	hbm_fdsink_give(&sink, sv[1]);
	ck_assert_int_gt(sink.pid, 0);
	ck_assert_uint_eq(sink.kept, 1);
	ck_assert_int_eq(fcntl(sv[1], F_GETFD), -1);
	close(sv[0]);
	hbm_fdsink_stop(&sink);
}
END_TEST

/*
 * A connection's first packet, sent as soon as it is accepted (a rank
 * registers right after connect()), carries its sender: the accepted socket
 * has SO_PASSCRED from the listener, with no window before it is set.
 */
START_TEST(accepted_has_credentials)
{
	char dir[] = "/tmp/hbm-ctl-XXXXXX", path[64], in[16];
	int lfd, cfd, afd, on = 0;
	socklen_t len = sizeof(on);
	struct ucred who;

	struct stat st;
	mode_t mask = umask(022);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/control.sock", dir);
	lfd = hbm_ctl_listen(path);
	ck_assert_int_ge(lfd, 0);
	/* 0666 whatever the umask, which is the caller's again after */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0666);
	ck_assert_uint_eq(umask(mask), 022);
	cfd = hbm_ctl_connect(path);
	ck_assert_int_ge(cfd, 0);
	afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	ck_assert_int_ge(afd, 0);
	ck_assert_int_eq(getsockopt(afd, SOL_SOCKET, SO_PASSCRED, &on, &len), 0);
	ck_assert_int_eq(on, 1);
	ck_assert_int_eq(hbm_ctl_send(cfd, "ping", 4, false), 0);
	ck_assert_int_eq(hbm_ctl_recv(afd, in, sizeof(in), &who), 4);
	ck_assert_int_eq(who.pid, getpid());
	ck_assert_int_eq(who.uid, getuid());
	close(afd);
	close(cfd);
	close(lfd);
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * hbmctl gpus' packets: a request is an index and nothing else; a reply
 * carries the driver's strings as they were (a UUID with a quote, a
 * newline, a byte past ASCII), terminated, and hbmctl escapes them.
 */
START_TEST(gpu_messages)
{
	struct hbm_ctl_index ix = { .index = 3 };
	struct hbm_ctl_gpu g = { .index = 0, .total = 1, .vendor = HBM_CTL_GPU_NVML,
				 .device = HBM_CTL_NO_DEVICE };
	struct hbm_ctl_header h;
	const void *body;
	char out[256];
	size_t len;

	ck_assert_uint_le(sizeof(struct hbm_ctl_header) + sizeof(g), HBM_CTL_MAX_PACKET);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	ck_assert_uint_eq(((const struct hbm_ctl_index *)body)->index, 3);
	ix.reserved = 1;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	/* one byte more than an index: refused, as every other oversized request */
	ix.reserved = 0;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET, 1, 0, &ix);
	((struct hbm_ctl_header *)buf)->size++;
	ck_assert_int_eq(hbm_ctl_decode(buf, len + 1, false, &h, &body), -EBADMSG);

	strcpy(g.identity, "GPU-\"x\"\n\xff");
	strcpy(g.pci, "0000:3b:00.0");
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out),
					((const struct hbm_ctl_gpu *)body)->identity, true),
			 "GPU-\\\"x\\\"\\u000a\\u00ff");
	ck_assert_str_eq(hbm_ctl_escape(out, sizeof(out), g.identity, false),
			 "GPU-\"x\"\\x0a\\xff");
	/* a request's type from the daemon, an entry past the total, no identity,
	 * an unterminated string, an unknown vendor */
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	g.index = 1;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	g.index = 0;
	memset(g.model, 'm', sizeof(g.model));
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	g.model[0] = 0;
	g.vendor = 4;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	g.vendor = HBM_CTL_GPU_AMDGPU;
	g.identity[0] = 0;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	/* past the end: an error reply, no body */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, -ENOENT, &g);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_int_eq(h.error, -ENOENT);
}
END_TEST

/* What decoding @dr as @type's reply says. */
static int drain_reply(uint16_t type, const struct hbm_ctl_drain *dr)
{
	struct hbm_ctl_header h;
	const void *body;
	size_t len = hbm_ctl_encode(buf, sizeof(buf), type | HBM_CTL_REPLY, 1, 0, dr);

	return hbm_ctl_decode(buf, len, true, &h, &body);
}

/* DRAIN_GET and UNDRAIN: an index in, an entry out; 0 of 0 is an entry. */
START_TEST(drain_messages)
{
	struct hbm_ctl_index ix = { .index = 0 };
	struct hbm_ctl_drain dr = { .index = 0, .total = 0, .want = HBM_DRAIN_WANT_RESUME,
				    .slurm = HBM_DRAIN_LEFT, .hook = HBM_DRAIN_OFF,
				    .node = "gpu042" };
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	ck_assert_uint_le(sizeof(struct hbm_ctl_header) + sizeof(dr), HBM_CTL_MAX_PACKET);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_DRAIN_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	ix.reserved = 1;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_DRAIN_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	/* UNDRAIN carries nothing */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_UNDRAIN, 1, 0, NULL);
	ck_assert_uint_eq(len, sizeof(struct hbm_ctl_header));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	((struct hbm_ctl_header *)buf)->size += 8;
	ck_assert_int_eq(hbm_ctl_decode(buf, len + 8, false, &h, &body), -EBADMSG);

	for (uint16_t type = HBM_CTL_DRAIN_GET; type <= HBM_CTL_UNDRAIN; type++) {
		struct hbm_ctl_drain bad;

		ck_assert_int_eq(drain_reply(type, &dr), 0);
		/* a cause with no total, an entry past it, an unknown cause, want or
		 * progress, reserved set, a string unterminated */
		bad = dr, bad.cause = HBM_DRAIN_RMA;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad = dr, bad.index = 1;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad = dr, bad.total = 2, bad.index = 1;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad.cause = __HBM_DRAIN_CAUSE_MAX;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad.cause = HBM_DRAIN_ABORT;
		ck_assert_int_eq(drain_reply(type, &bad), 0);
		bad = dr, bad.want = __HBM_DRAIN_WANT_MAX;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad = dr, bad.hook = __HBM_DRAIN_PROGRESS_MAX;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad = dr, bad.reserved = 1;
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
		bad = dr;
		memset(bad.reason, 'r', sizeof(bad.reason));
		ck_assert_int_eq(drain_reply(type, &bad), -EBADMSG);
	}
	/* refused: an error reply, no body */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_UNDRAIN | HBM_CTL_REPLY, 1, -EPERM, &dr);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_int_eq(h.error, -EPERM);
}
END_TEST

/* DEADLINES: asked with nothing, answered with each deadline set. */
START_TEST(deadlines_messages)
{
	struct hbm_ctl_deadlines dl = { .pause_timeout = 30, .restore_timeout = 120,
					.kill_timeout = 10 }, bad;
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_DEADLINES, 1, 0, NULL);
	ck_assert_uint_eq(len, sizeof(h));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	ck_assert_uint_eq(h.type, HBM_CTL_DEADLINES);
	/* a request with a body */
	((struct hbm_ctl_header *)buf)->size += sizeof(dl);
	memcpy(buf + len, &dl, sizeof(dl));
	ck_assert_int_eq(hbm_ctl_decode(buf, len + sizeof(dl), false, &h, &body), -EBADMSG);

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_DEADLINES | HBM_CTL_REPLY, 1, 0, &dl);
	ck_assert_uint_eq(len, sizeof(h) + sizeof(dl));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_uint_eq(((const struct hbm_ctl_deadlines *)body)->restore_timeout, 120);
	/* a reply without its body, a deadline of 0, reserved set */
	((struct hbm_ctl_header *)buf)->size = sizeof(h);
	ck_assert_int_eq(hbm_ctl_decode(buf, sizeof(h), true, &h, &body), -EBADMSG);
	for (int i = 0; i < 4; i++) {
		bad = dl;
		*(i == 0 ? &bad.pause_timeout : i == 1 ? &bad.restore_timeout :
		  i == 2 ? &bad.kill_timeout : &bad.reserved) = i == 3;
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_DEADLINES | HBM_CTL_REPLY, 1, 0,
				     &bad);
		ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), -EBADMSG);
	}
}
END_TEST

/* RECOVERY_TIMES: asked with nothing; each deadline set, the longest at least two of them. */
START_TEST(recovery_times_messages)
{
	struct hbm_ctl_recovery_times rt = { .pause_timeout = 30, .restore_timeout = 120,
					     .kill_timeout = 10, .longest = 260 }, bad;
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY_TIMES, 1, 0, NULL);
	ck_assert_uint_eq(len, sizeof(h));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	((struct hbm_ctl_header *)buf)->size += sizeof(rt);
	memcpy(buf + len, &rt, sizeof(rt));
	ck_assert_int_eq(hbm_ctl_decode(buf, len + sizeof(rt), false, &h, &body), -EBADMSG);

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY_TIMES | HBM_CTL_REPLY, 1, 0, &rt);
	ck_assert_uint_eq(len, sizeof(h) + sizeof(rt));
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_uint_eq(((const struct hbm_ctl_recovery_times *)body)->longest, 260);
	rt.longest = 150;	/* one node: pause + restore */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY_TIMES | HBM_CTL_REPLY, 1, 0, &rt);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	/* a deadline of 0; the longest below pause + restore, or wrapping it, or past a cluster's */
	for (int i = 0; i < 6; i++) {
		bad = rt;
		if (i < 3)
			*(i == 0 ? &bad.pause_timeout : i == 1 ? &bad.restore_timeout :
			  &bad.kill_timeout) = 0;
		else if (i == 3)
			bad.longest = 149;
		else if (i == 5)
			bad.longest = 4 * 30 + 120 + 10 + 10 + 1;
		else
			bad.pause_timeout = bad.restore_timeout = bad.longest = 0x80000000;
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_RECOVERY_TIMES | HBM_CTL_REPLY, 1, 0,
				     &bad);
		ck_assert_msg(hbm_ctl_decode(buf, len, true, &h, &body) == -EBADMSG, "case %d", i);
	}
}
END_TEST

/* CLUSTER: asked with nothing; answered with a state, and names for it. */
START_TEST(cluster_messages)
{
	struct hbm_ctl_cluster cl = { .state = HBM_CLUSTER_UP, .jobs = 2, .since = 1700000000,
				      .node = "node2", .endpoint = "https://10.0.0.1:2379" }, bad;
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER, 1, 0, NULL);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	((struct hbm_ctl_header *)buf)->size += 8;	/* a request with a body */
	ck_assert_int_eq(hbm_ctl_decode(buf, len + 8, false, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER | HBM_CTL_REPLY, 1, 0, &cl);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	ck_assert_str_eq(((const struct hbm_ctl_cluster *)body)->node, "node2");
	memset(&bad, 0, sizeof(bad));	/* off: all zero */
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER | HBM_CTL_REPLY, 1, 0, &bad);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	for (int i = 0; i < 6; i++) {
		bad = cl;
		switch (i) {
		case 0: bad.state = __HBM_CLUSTER_MAX; break;
		case 1: bad.state = HBM_CLUSTER_OFF; break;	/* off, with a node */
		case 2: bad.node[0] = 0; break;			/* up, without one */
		case 3: strcpy(bad.node, "a\nb"); break;
		case 4: memset(bad.endpoint, 'x', sizeof(bad.endpoint)); break;
		case 5: memset(bad.why, 'x', sizeof(bad.why)); break;
		}
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER | HBM_CTL_REPLY, 1, 0, &bad);
		ck_assert_msg(hbm_ctl_decode(buf, len, true, &h, &body) == -EBADMSG, "case %d", i);
	}
}
END_TEST

/* CLUSTER_NODE_GET: an index asked; an entry of the list answered, its names checked. */
START_TEST(cluster_node_messages)
{
	struct hbm_ctl_cluster_node n = { .index = 1, .total = 2, .incident = 4, .job = "1000.run-42",
					  .id = "00000000000000a1", .opener = "node2",
					  .node = "node1", .step = 2, .acked = 3 }, bad;
	struct hbm_ctl_index ix = { .index = 1 };
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER_NODE_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), 0);
	ix.reserved = 1;
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER_NODE_GET, 1, 0, &ix);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, false, &h, &body), -EBADMSG);
	len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER_NODE_GET | HBM_CTL_REPLY, 1, 0, &n);
	ck_assert_int_eq(hbm_ctl_decode(buf, len, true, &h, &body), 0);
	for (int i = 0; i < 7; i++) {
		bad = n;
		switch (i) {
		case 0: bad.index = 2; break;
		case 1: bad.step = HBM_CTL_CLUSTER_STEPS; break;
		case 2: bad.acked = 1U << HBM_CTL_CLUSTER_STEPS; break;
		case 3: bad.reserved = 1; break;
		case 4: bad.node[0] = 0; break;
		case 5: strcpy(bad.opener, "a b"); break;
		case 6: memset(bad.id, 'x', sizeof(bad.id)); break;
		}
		len = hbm_ctl_encode(buf, sizeof(buf), HBM_CTL_CLUSTER_NODE_GET | HBM_CTL_REPLY, 1, 0,
				     &bad);
		ck_assert_msg(hbm_ctl_decode(buf, len, true, &h, &body) == -EBADMSG, "case %d", i);
	}
}
END_TEST

/* @text into @path, whole. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Every uid of the lines of /etc/subuid naming one owner is one tenant: a
 * user holding them counts once against the control socket's limits,
 * however many of them its containers connect as (control.c); never as a
 * plain uid's tenant, not even where the owner reads as a number.
 */
START_TEST(tenants_of_subuid)
{
	char dir[] = "/tmp/hbm-subuid-XXXXXX", path[64];
	uint64_t alice, bob, u63;
	struct hbm_subuids s;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/subuid", dir);
	write_file(path, "alice:100000:65536\n"
			 "bob:165536:65536\n"		/* adjacent: another user's */
			 "# carol:200000:65536\n"
			 "\n"
			 "1002:300000:10\n"		/* by number: a name, not uid 1002 */
			 "dave:300005:10\n"		/* overlapping: merged, 1002's */
			 "alice:400000:5\n"		/* usermod --add-subuids */
			 "x:1:0\n"			/* each of these not a range */
			 "y:12a:5\n"
			 "::\n"
			 ":5:5\n"
			 "z:4294967295:2\n"
			 "q:+500000:1\n"
			 "w:4294967295:1");		/* the last uid; no newline */
	hbm_subuids_init(&s, path);
	ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
	ck_assert_int_eq(s.error, 0);
	ck_assert_uint_eq(s.bad_lines, 6);
	ck_assert_uint_eq(s.nr, 5);
	alice = hbm_tenant(&s, 100000);
	bob = hbm_tenant(&s, 165536);
	ck_assert_uint_ge(alice, 1ULL << 63);	/* above every uid */
	ck_assert_uint_ge(bob, 1ULL << 63);
	ck_assert_uint_ne(alice, bob);
	ck_assert_uint_eq(hbm_tenant(&s, 99999), 99999);
	ck_assert_uint_eq(hbm_tenant(&s, 165535), alice);
	ck_assert_uint_eq(hbm_tenant(&s, 400004), alice);
	ck_assert_uint_eq(hbm_tenant(&s, 400005), 400005);
	ck_assert_uint_eq(hbm_tenant(&s, 231071), bob);
	ck_assert_uint_eq(hbm_tenant(&s, 200000), bob);
	ck_assert_uint_eq(hbm_tenant(&s, 231072), 231072);
	ck_assert_uint_ge(hbm_tenant(&s, 300000), 1ULL << 63);
	ck_assert_uint_eq(hbm_tenant(&s, 300014), hbm_tenant(&s, 300000));
	ck_assert_uint_ne(hbm_tenant(&s, 300000), alice);
	ck_assert_uint_eq(hbm_tenant(&s, 300015), 300015);
	ck_assert_uint_eq(hbm_tenant(&s, 500000), 500000);
	ck_assert_uint_eq(hbm_tenant(&s, 4294967294u), 4294967294u);
	ck_assert_uint_ge(hbm_tenant(&s, 4294967295u), 1ULL << 63);
	ck_assert_uint_ne(hbm_tenant(&s, 4294967295u), alice);
	ck_assert_uint_eq(hbm_tenant(&s, 0), 0);
	ck_assert_int_eq(hbm_subuids_refresh(&s), 0);	/* unchanged: not read */

	/*
	 * Lines of one start: the earlier line's owner has them, whatever
	 * qsort() does with equal keys (glibc's merge sort keeps their order,
	 * musl's smoothsort does not): 64 lines, eight of each start, all
	 * overlapping, one range, the first line's.
	 */
	{
		char text[4096];
		size_t at = 0;

		for (int i = 0; i < 64; i++)
			at += snprintf(text + at, sizeof(text) - at, "u%d:%d:10\n", 63 - i,
				       700000 + (i % 8) * 5);
		write_file(path, text);
		ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
		ck_assert_uint_eq(s.nr, 1);
		ck_assert_uint_eq(s.ranges[0].line, 0);
		ck_assert_uint_eq(s.ranges[0].end, 700045);
		write_file(path, "u63:0:1\n");
		ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
		ck_assert_uint_eq(hbm_tenant(&s, 0), s.ranges[0].tenant);
		u63 = hbm_tenant(&s, 0);
		write_file(path, text);
		ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
		ck_assert_uint_eq(hbm_tenant(&s, 700040), u63);
	}

	/* Changed: read again. */
	write_file(path, "alice:100000:65536\nerin:600000:65536\n");
	ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
	ck_assert_uint_eq(s.bad_lines, 0);
	ck_assert_uint_eq(hbm_tenant(&s, 100000), alice);	/* the name's, whatever the file */
	ck_assert_uint_eq(hbm_tenant(&s, 165536), 165536);
	ck_assert_uint_eq(hbm_tenant(&s, 600001), hbm_tenant(&s, 665535));
	ck_assert_uint_ge(hbm_tenant(&s, 600001), 1ULL << 63);

	/* Not a regular file, or too large: refused, what was read kept. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0600), 0);	/* an open never waits for a writer */
	ck_assert_int_eq(hbm_subuids_refresh(&s), -EINVAL);
	ck_assert_uint_ge(hbm_tenant(&s, 600001), 1ULL << 63);
	ck_assert_int_eq(hbm_subuids_refresh(&s), -EINVAL);
	ck_assert_int_eq(unlink(path), 0);
	write_file(path, "alice:100000:65536\n");
	ck_assert_int_eq(truncate(path, HBM_SUBUID_FILE_MAX + 1), 0);
	ck_assert_int_eq(hbm_subuids_refresh(&s), -EFBIG);
	ck_assert_uint_ge(hbm_tenant(&s, 600001), 1ULL << 63);
	ck_assert_int_eq(truncate(path, 19), 0);
	ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
	ck_assert_uint_eq(hbm_tenant(&s, 600001), 600001);
	ck_assert_uint_eq(hbm_tenant(&s, 100001), alice);

	/* Gone: every uid its own. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(hbm_subuids_refresh(&s), 1);
	ck_assert_int_eq(s.error, -ENOENT);
	ck_assert_uint_eq(hbm_tenant(&s, 100001), 100001);
	ck_assert_int_eq(hbm_subuids_refresh(&s), 0);
	hbm_subuids_free(&s);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A directory on the way to the socket that another user may change is
 * named, as written and as links lead; root's alone is not.  The tree is
 * made under /run (root's alone on a Debian host; the test says so and
 * checks nothing where it is not, or as a user who cannot chown).
 */
START_TEST(socket_directories_of_others)
{
	static const struct {
		const char *path;	/* under the base */
		const char *open;	/* the directory named, under the base; NULL: none */
	} cases[] = {
		{ "clean/x.sock", NULL },
		{ "world/x.sock", "world" },
		{ "sticky/x.sock", "sticky" },
		{ "sticky/roots/x.sock", NULL },	/* root's, under a sticky one */
		{ "sticky/theirs/x.sock", "sticky/theirs" },
		{ "world/deep/x.sock", "world" },
		{ "users/x.sock", "users" },
		{ "roots/x.sock", "roots" },	/* an ACL's mask, whatever the group */
		{ "theirs/x.sock", "theirs" },
		{ "clean/to_world/x.sock", "world" },	/* a link into it */
		{ "world/to_clean/x.sock", "world" },	/* a link in it */
		{ "clean/to_srv/x.sock", "srv" },	/* a link through a link in it */
		{ "clean/../clean/x.sock", NULL },
		{ "clean/./to_clean_abs/x.sock", NULL },
	};
	char base[] = "/run/hbmguard-unit.XXXXXX", path[PATH_MAX], want[PATH_MAX],
	     found[PATH_MAX];
	size_t i;

	if (geteuid() || !mkdtemp(base)) {
		fprintf(stderr, "socket_directories_of_others: not root, or no /run: not run\n");
		return;
	}
	found[0] = 0;
	if (hbm_ctl_path_open(base, found, sizeof(found)) != 0) {
		fprintf(stderr, "socket_directories_of_others: %s is open to others: not run\n",
			found);
		rmdir(base);
		return;
	}
	ck_assert_int_eq(chdir(base), 0);
	ck_assert_int_eq(mkdir("clean", 0755), 0);
	ck_assert_int_eq(mkdir("world", 0777), 0);
	ck_assert_int_eq(chmod("world", 0777), 0);	/* past the umask */
	ck_assert_int_eq(mkdir("world/deep", 0755), 0);
	ck_assert_int_eq(mkdir("sticky", 0755), 0);
	ck_assert_int_eq(chmod("sticky", 01777), 0);
	ck_assert_int_eq(mkdir("sticky/roots", 0755), 0);
	ck_assert_int_eq(mkdir("sticky/theirs", 0755), 0);
	ck_assert_int_eq(chown("sticky/theirs", 65534, 0), 0);
	ck_assert_int_eq(mkdir("users", 0775), 0);
	ck_assert_int_eq(chmod("users", 0775), 0);
	ck_assert_int_eq(chown("users", 0, 100), 0);	/* writable by group users */
	ck_assert_int_eq(mkdir("roots", 0775), 0);
	ck_assert_int_eq(chmod("roots", 0775), 0);	/* writable by group root */
	ck_assert_int_eq(mkdir("theirs", 0755), 0);
	ck_assert_int_eq(chown("theirs", 65534, 0), 0);	/* nobody's */
	ck_assert_int_eq(symlink("../world", "clean/to_world"), 0);
	ck_assert_int_eq(symlink("../clean", "world/to_clean"), 0);
	ck_assert_int_eq(mkdir("srv", 0777), 0);
	ck_assert_int_eq(chmod("srv", 0777), 0);
	ck_assert_int_eq(mkdir("data", 0755), 0);
	ck_assert_int_eq(symlink("../data", "srv/x"), 0);
	ck_assert_int_eq(symlink("../srv/x", "clean/to_srv"), 0);
	snprintf(path, sizeof(path), "%s/clean", base);
	ck_assert_int_eq(symlink(path, "clean/to_clean_abs"), 0);
	ck_assert_int_eq(chdir("/"), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", base, cases[i].path);
		snprintf(want, sizeof(want), "%s/%s", base, cases[i].open ? cases[i].open : "");
		found[0] = 0;
		ck_assert_msg(hbm_ctl_path_open(path, found, sizeof(found)) == !!cases[i].open,
			      "%s: %s", cases[i].path, found);
		if (cases[i].open)
			ck_assert_str_eq(found, want);
	}
	snprintf(path, sizeof(path), "%s/gone/x.sock", base);
	ck_assert_int_eq(hbm_ctl_path_open(path, found, sizeof(found)), -ENOENT);
	ck_assert_int_eq(hbm_ctl_path_open("x.sock", found, sizeof(found)), -EINVAL);
	snprintf(path, sizeof(path), "%s/clean/loop/x.sock", base);
	snprintf(want, sizeof(want), "%s/clean/loop", base);
	ck_assert_int_eq(symlink(want, want), 0);
	ck_assert_int_eq(hbm_ctl_path_open(path, found, sizeof(found)), -ELOOP);
	snprintf(path, sizeof(path), "rm -r %s", base);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("codec");

	/* a_lingering_file_passed_is_released_elsewhere fails at it, not at 60 s */
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, every_length);
	tcase_add_test(tc, every_header_bit);
	tcase_add_test(tc, bad_bodies);
	tcase_add_test(tc, bad_headers);
	tcase_add_test(tc, rank_messages);
	tcase_add_test(tc, keyed_rank_messages);
	tcase_add_test(tc, sha256_of_the_standard);
	tcase_add_test(tc, a_budget_of_lines);
	tcase_add_test(tc, gpu_messages);
	tcase_add_test(tc, drain_messages);
	tcase_add_test(tc, deadlines_messages);
	tcase_add_test(tc, recovery_times_messages);
	tcase_add_test(tc, cluster_messages);
	tcase_add_test(tc, cluster_node_messages);
	tcase_add_test(tc, unsafe_names);
	tcase_add_test(tc, escaped_output);
	tcase_add_test(tc, sender_credentials);
	tcase_add_test(tc, passed_fds_never_installed);
	tcase_add_test(tc, a_lingering_file_passed_is_released_elsewhere);
	tcase_add_test(tc, a_stuck_sink_child_is_replaced);
	tcase_add_test(tc, no_sink_child_keeps_the_connection_open);
	tcase_add_test(tc, accepted_has_credentials);
	tcase_add_test(tc, tenants_of_subuid);
	tcase_add_test(tc, socket_directories_of_others);
	suite_add_tcase(s, tc);
	return s;
}
