// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the state file format (daemon/state.c). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/hbmguard.h>
#include <linux/seccomp.h>

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

/* The definition, bit by bit: what the table-driven one must agree with. */
static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82f63b78 & -(crc & 1));
	}
	return ~crc;
}

/* RFC 3720 (iSCSI), B.4, and the usual check value. */
static void put32le(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* A header changed by hand, its CRC made right again. */
static void put_crc(uint8_t *h)
{
	put32le(h + 124, hbm_crc32c(0, h, 124));
}

START_TEST(crc32c_vector)
{
	uint8_t buf[32];
	size_t i;

	ck_assert_uint_eq(hbm_crc32c(0, "123456789", 9), 0xe3069283);
	memset(buf, 0, sizeof(buf));
	ck_assert_uint_eq(hbm_crc32c(0, buf, 32), 0x8a9136aa);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_uint_eq(hbm_crc32c(0, buf, 32), 0x62a8ab43);
	for (i = 0; i < 32; i++)
		buf[i] = i;
	ck_assert_uint_eq(hbm_crc32c(0, buf, 32), 0x46dd794e);
	for (i = 0; i < 32; i++)
		buf[i] = 31 - i;
	ck_assert_uint_eq(hbm_crc32c(0, buf, 32), 0x113fdb5c);
	ck_assert_uint_eq(hbm_crc32c(0, buf, 0), 0);
}
END_TEST

/* Every length and alignment up to 300, and in pieces: as the definition. */
START_TEST(crc32c_as_bitwise)
{
	uint8_t buf[320];
	size_t len, at, cut;

	srandom(17);
	for (len = 0; len < sizeof(buf); len++)
		buf[len] = random();
	for (len = 0; len <= 300; len++)
		for (at = 0; at < 8; at++) {
			uint32_t want = crc32c_bitwise(0, buf + at, len);

			expect(hbm_crc32c(0, buf + at, len) == want);
			cut = len ? (size_t)random() % len : 0;
			expect(hbm_crc32c(hbm_crc32c(0, buf + at, cut), buf + at + cut,
					  len - cut) == want);
			expect(hbm_crc32c(0x12345678, buf + at, len) ==
			       crc32c_bitwise(0x12345678, buf + at, len));
		}
}
END_TEST

START_TEST(round_trip)
{
	struct hbm_state_damage d;
	struct hbm_state out;
	size_t len;
	uint8_t *buf = encoded(&len);

	ck_assert_uint_eq(len, HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE);
	ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
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
		int err = hbm_state_decode(buf, cut, 0, &out, &d);

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
		err = hbm_state_decode(buf, len, 0, &out, &d);
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
	ck_assert_int_eq(hbm_state_decode(buf, hbm_state_encode_size(&s), 0, &out, &d), 0);
	ck_assert_uint_eq(out.nr, 1);
	ck_assert_uint_eq(out.records[0].offset, 0x6000);
	ck_assert_uint_eq(d.bad_records, 6);
	hbm_state_free(&out);

	/* A header that names no identity, or a bad page size, is distrusted. */
	s.nr = 0;
	s.identity[0] = 0;
	hbm_state_encode(&s, buf);
	ck_assert_int_eq(hbm_state_decode(buf, HBM_STATE_HEADER_SIZE, 0, &out, &d), -EBADMSG);
	strcpy(s.identity, "x");
	s.page_size = 3000;
	hbm_state_encode(&s, buf);
	ck_assert_int_eq(hbm_state_decode(buf, HBM_STATE_HEADER_SIZE, 0, &out, &d), -EBADMSG);
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

/* Names in directory @dirfd that begin with @prefix */
static int count_names(int dirfd, const char *prefix)
{
	DIR *dir = fdopendir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY));
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	while ((e = readdir(dir)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(dir);
	return n;
}

START_TEST(write_read_quarantine)
{
	char dir[] = "/tmp/hbmstate.XXXXXX", moved[300], again[300];
	struct hbm_state s = sample(), out;
	struct hbm_state_damage d;
	struct stat st, aside;
	int dirfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), -ENOENT);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	s.serial = 43;
	s.nr = 2;
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);	/* replaces */
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	ck_assert_uint_eq(out.nr, 2);
	ck_assert_uint_eq(out.serial, 43);
	hbm_state_free(&out);
	ck_assert_int_eq(faccessat(dirfd, ".0000:3b:00.0.state.tmp", F_OK, 0), -1);

	/*
	 * Kept aside under a second name, and still under its own until
	 * replaced: a crash in between leaves a file to restore.
	 */
	ck_assert_int_eq(hbm_state_quarantine(dirfd, s.identity, moved, sizeof(moved)), 0);
	ck_assert_int_eq(strncmp(moved, "0000:3b:00.0.state.corrupt-", 27), 0);
	ck_assert_int_eq(fstatat(dirfd, moved, &aside, 0), 0);
	ck_assert_int_eq(fstatat(dirfd, "0000:3b:00.0.state", &st, 0), 0);
	ck_assert_uint_eq(aside.st_ino, st.st_ino);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	hbm_state_free(&out);
	/* not replaced yet (a crash, a write that failed): not kept a second time */
	ck_assert_int_eq(hbm_state_quarantine(dirfd, s.identity, again, sizeof(again)), 0);
	ck_assert_int_eq(count_names(dirfd, "0000:3b:00.0.state.corrupt-"), 1);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);	/* the replacement */
	ck_assert_int_eq(fstatat(dirfd, moved, &aside, 0), 0);
	ck_assert_uint_eq(aside.st_nlink, 1);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	hbm_state_free(&out);
	ck_assert_int_eq(hbm_state_quarantine(dirfd, "no-such", again, sizeof(again)), -ENOENT);
	unlinkat(dirfd, moved, 0);
	unlinkat(dirfd, "0000:3b:00.0.state", 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A file with a second name that is not a NAME.corrupt-* (a backup's hard
 * link) is kept aside all the same.
 */
START_TEST(a_backup_link_is_not_kept_aside)
{
	char dir[] = "/tmp/hbmstate.XXXXXX", moved[300];
	struct hbm_state s = sample();
	int dirfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(linkat(dirfd, "0000:3b:00.0.state", dirfd, "backup", 0), 0);
	ck_assert_int_eq(hbm_state_quarantine(dirfd, s.identity, moved, sizeof(moved)), 0);
	ck_assert_int_eq(count_names(dirfd, "0000:3b:00.0.state.corrupt-"), 1);
	ck_assert_int_eq(faccessat(dirfd, moved, F_OK, 0), 0);
	unlinkat(dirfd, moved, 0);
	unlinkat(dirfd, "backup", 0);
	unlinkat(dirfd, "0000:3b:00.0.state", 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* In a child: linkat() refused (EPERM, as protected_hardlinks does), then @name kept aside. */
static int quarantine_without_links(int dirfd, const char *name, char *moved, size_t len)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_linkat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	int p[2], status, ret = -1;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(2);
		ret = hbm_file_quarantine(dirfd, name, moved, len);
		_exit(write(p[1], &ret, sizeof(ret)) == sizeof(ret) &&
		      write(p[1], moved, len) == (ssize_t)len ? 0 : 1);
	}
	close(p[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(read(p[0], &ret, sizeof(ret)), sizeof(ret));
	ck_assert_int_eq(read(p[0], moved, len), (ssize_t)len);
	close(p[0]);
	return ret;
}

/*
 * Where no second name can be made (links refused; every name of the
 * second taken), the damaged file is renamed: its copy is kept, and the
 * caller is told that none is under its name.
 */
START_TEST(a_file_that_cannot_be_linked_is_moved_aside)
{
	char dir[] = "/tmp/hbmstate.XXXXXX", moved[300], name[300];
	struct hbm_state s = sample();
	struct stat st, aside;
	long long t;
	int dirfd, fd, i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(fstatat(dirfd, "0000:3b:00.0.state", &st, 0), 0);
	ck_assert_int_eq(quarantine_without_links(dirfd, "0000:3b:00.0.state", moved,
						  sizeof(moved)), HBM_QUARANTINE_MOVED);
	ck_assert_int_eq(faccessat(dirfd, "0000:3b:00.0.state", F_OK, 0), -1);
	ck_assert_int_eq(fstatat(dirfd, moved, &aside, 0), 0);
	ck_assert_uint_eq(aside.st_ino, st.st_ino);
	ck_assert_int_eq(unlinkat(dirfd, moved, 0), 0);

	/* every name of this second (and the next two) taken: the last one goes */
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(fstatat(dirfd, "0000:3b:00.0.state", &st, 0), 0);
	for (t = time(NULL); t < time(NULL) + 3; t++)
		for (i = 0; i < 10; i++) {
			if (i)
				snprintf(name, sizeof(name), "0000:3b:00.0.state.corrupt-%lld.%d", t, i);
			else
				snprintf(name, sizeof(name), "0000:3b:00.0.state.corrupt-%lld", t);
			fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
			ck_assert_int_ge(fd, 0);
			close(fd);
		}
	ck_assert_int_eq(hbm_file_quarantine(dirfd, "0000:3b:00.0.state", moved, sizeof(moved)),
			 HBM_QUARANTINE_MOVED);
	ck_assert_int_eq(fstatat(dirfd, moved, &aside, 0), 0);
	ck_assert_uint_eq(aside.st_ino, st.st_ino);
	ck_assert_int_eq(faccessat(dirfd, "0000:3b:00.0.state", F_OK, 0), -1);
	close(dirfd);
	snprintf(name, sizeof(name), "rm -rf %s", dir);
	ck_assert_int_eq(system(name), 0);
}
END_TEST

/* The sample as a snapshot, then @n log records of @log, at serial 42. */
static uint8_t *with_log(const struct hbm_state_record *log, size_t n, size_t *len)
{
	size_t snap, i;
	uint8_t *buf = encoded(&snap);

	*len = snap + n * HBM_STATE_RECORD_SIZE;
	buf = realloc(buf, *len);
	for (i = 0; i < n; i++)
		hbm_state_log_encode(&log[i], 42, i + 1, buf + snap + i * HBM_STATE_RECORD_SIZE);
	return buf;
}

static const struct hbm_state_record log_records[] = {
	{ 0x40000, 0x1000, 5, 5, HBMGUARD_STATE_PENDING, HBMGUARD_SOURCE_CE_THRESHOLD, 0 },
	{ 0x2000, 0x1000, 6, 6, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_UE, 0 },	/* a new one */
	{ 0x40000, 0x1000, 7, 7, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_CE_THRESHOLD, 0 },
	{ 0xa000, 0x1000, 8, 8, HBMGUARD_STATE_FAILED, HBMGUARD_SOURCE_POISON, 0 },	/* splits one */
};
#define LOG_NR (sizeof(log_records) / sizeof(log_records[0]))

/* The sample with the log above replayed, by hand. */
static const struct hbm_state_record replayed[] = {
	{ 0x1000, 0x1000, 1700000000, 1700000100, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_UE, 1 },
	{ 0x2000, 0x1000, 6, 6, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_UE, 0 },
	{ 0x8000, 0x2000, 1700000200, 1700000200, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_ADMIN, 0 },
	{ 0xa000, 0x1000, 8, 8, HBMGUARD_STATE_FAILED, HBMGUARD_SOURCE_POISON, 0 },
	{ 0xb000, 0x5000, 1700000200, 1700000200, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_ADMIN, 0 },
	{ 0x20000, 0x1000, 1700000300, 1700000900, HBMGUARD_STATE_PENDING, HBMGUARD_SOURCE_CE_THRESHOLD, 50 },
	{ 0x21000, 0x1000, 1700000400, 1700000400, HBMGUARD_STATE_FAILED, HBMGUARD_SOURCE_POISON, 1 },
	{ 0x40000, 0x1000, 7, 7, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_CE_THRESHOLD, 0 },
	{ 0x7fff000, 0x1000, 1700000500, 1700000500, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_RESTORED, 0 },
};
#define REPLAYED_NR (sizeof(replayed) / sizeof(replayed[0]))

static bool whole(const struct hbm_state_damage *d)
{
	return !hbm_state_damaged(d) && !d->torn_bytes;
}

START_TEST(log_replayed)
{
	struct hbm_state_damage d;
	struct hbm_state out;
	size_t len;
	uint8_t *buf = with_log(log_records, LOG_NR, &len);

	ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
	expect(whole(&d));
	ck_assert_uint_eq(out.snapshot_nr, NR);
	ck_assert_uint_eq(out.log_nr, LOG_NR);
	ck_assert_uint_eq(out.nr, REPLAYED_NR);
	ck_assert_mem_eq(out.records, replayed, sizeof(replayed));
	hbm_state_free(&out);

	/* version 1 had no log: what follows its records is not read */
	buf[8] = 1;
	put_crc(buf);
	ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
	expect(whole(&d) && out.nr == NR && !out.log_nr);
	hbm_state_free(&out);
	free(buf);
}
END_TEST

/* A crash cut the last write anywhere: what was before it, nothing said but the tail. */
START_TEST(log_torn_tail)
{
	size_t len, cut, snap = HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE;
	uint8_t *buf = with_log(log_records, LOG_NR, &len);

	for (cut = snap; cut <= len; cut++) {
		size_t n = (cut - snap) / HBM_STATE_RECORD_SIZE;
		struct hbm_state_record *want;
		struct hbm_state_damage d;
		struct hbm_state out;
		size_t want_nr;

		ck_assert_int_eq(hbm_state_decode(buf, cut, 0, &out, &d), 0);
		expect(!hbm_state_damaged(&d));
		expect(d.torn_bytes == (cut - snap) % HBM_STATE_RECORD_SIZE);
		expect(out.log_nr == n);
		ck_assert_int_eq(hbm_state_replay(sample_records, NR, log_records, n,
						  &want, &want_nr), 0);
		expect(out.nr == want_nr && !memcmp(out.records, want, want_nr * sizeof(*want)));
		free(want);
		hbm_state_free(&out);
	}

	/*
	 * Garbage after the last good record: one record of it (and a piece
	 * of another) is the write a crash tore; more is damage, said, with
	 * what came before it kept.
	 */
	buf = realloc(buf, len + 3 * HBM_STATE_RECORD_SIZE);
	memset(buf + len, 0xa5, 3 * HBM_STATE_RECORD_SIZE);
	for (cut = len + 1; cut <= len + 3 * HBM_STATE_RECORD_SIZE; cut++) {
		struct hbm_state_damage d;
		struct hbm_state out;

		ck_assert_int_eq(hbm_state_decode(buf, cut, 0, &out, &d), 0);
		if (cut - len < 2 * HBM_STATE_RECORD_SIZE) {
			expect(!hbm_state_damaged(&d) && d.torn_bytes == cut - len);
		} else {
			expect(hbm_state_damaged(&d) && !d.torn_bytes);
			expect(d.log_bad == (cut - len + HBM_STATE_RECORD_SIZE - 1) /
					    HBM_STATE_RECORD_SIZE);
		}
		expect(out.log_nr == LOG_NR && out.nr == REPLAYED_NR);
		hbm_state_free(&out);
	}
	free(buf);
}
END_TEST

/*
 * Counts a crafted file says are bounded by the device's pages and by the
 * file's length before anything is allocated: a header promising more
 * records than the device has pages, a file longer than such a device's
 * can be, a log past HBM_STATE_LOG_MAX() of its snapshot: each refused or
 * cut, and said.
 */
START_TEST(log_bounded_by_the_device)
{
	size_t len, i, snap = HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE;
	uint8_t *buf = with_log(log_records, LOG_NR, &len), *big;
	struct hbm_state_damage d;
	struct hbm_state out;
	size_t max, big_len;

	/* a device of as many pages as the file has records: read whole */
	ck_assert_int_eq(hbm_state_decode(buf, len, NR + LOG_NR, &out, &d), 0);
	expect(whole(&d) && out.nr == REPLAYED_NR);
	hbm_state_free(&out);

	/* nr_records past the device's pages: the header distrusted, nothing read */
	ck_assert_int_eq(hbm_state_decode(buf, len, NR - 1, &out, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "more records than the device has pages");
	expect(!out.records && !out.nr);
	for (i = 0; i < 3; i++) {
		static const uint32_t promised[] = { NR + 1, 0x7fffffff, 0xffffffff };

		put32le(buf + 20, promised[i]);
		put_crc(buf);
		ck_assert_int_eq(hbm_state_decode(buf, len, NR, &out, &d), -EBADMSG);
		ck_assert_str_eq(d.header, "more records than the device has pages");
		/* with no device to bound it: bounded by the file, the rest missing */
		ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
		expect(d.missing_records == (i ? promised[i] - (NR + LOG_NR) : 0));
		expect(out.nr <= NR + LOG_NR);
		hbm_state_free(&out);
	}
	put32le(buf + 20, NR);
	put_crc(buf);

	/* longer than a file of a device of 1 page can be */
	max = HBM_STATE_HEADER_SIZE + (1 + HBM_STATE_LOG_MAX(1)) * HBM_STATE_RECORD_SIZE;
	big_len = max + HBM_STATE_RECORD_SIZE;
	big = calloc(1, big_len);
	memcpy(big, buf, snap);
	put32le(big + 20, 0);		/* a snapshot of nothing: all log */
	put_crc(big);
	ck_assert_int_eq(hbm_state_decode(big, big_len, 1, &out, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "longer than a state file of the device can be");
	ck_assert_int_eq(hbm_state_decode(big, max, 1, &out, &d), 0);
	hbm_state_free(&out);

	/* a log past HBM_STATE_LOG_MAX() of its snapshot: the rest not read, said */
	for (i = 0; i < HBM_STATE_LOG_MAX(0) + 2; i++)
		hbm_state_log_encode(&log_records[i % LOG_NR], 42, i + 1,
				     big + HBM_STATE_HEADER_SIZE + i * HBM_STATE_RECORD_SIZE);
	ck_assert_int_eq(hbm_state_decode(big, HBM_STATE_HEADER_SIZE +
					  (HBM_STATE_LOG_MAX(0) + 2) * HBM_STATE_RECORD_SIZE,
					  0, &out, &d), 0);
	expect(d.log_beyond == 2 && hbm_state_damaged(&d) && !d.log_bad && !d.torn_bytes);
	expect(out.log_nr == HBM_STATE_LOG_MAX(0));
	hbm_state_free(&out);
	free(big);
	free(buf);
}
END_TEST

/* A bad record with a good one after it was fsync'd: damage, the rest kept. */
START_TEST(log_bad_in_the_middle)
{
	size_t len, snap = HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE, bit;
	uint8_t *buf = with_log(log_records, LOG_NR, &len);

	for (bit = 0; bit < HBM_STATE_RECORD_SIZE * 8; bit++) {
		size_t byte = snap + HBM_STATE_RECORD_SIZE + bit / 8;	/* the second */
		struct hbm_state_damage d;
		struct hbm_state out;

		buf[byte] ^= 1 << bit % 8;
		ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
		buf[byte] ^= 1 << bit % 8;
		expect(d.log_bad == 1 && !d.log_missing && !d.log_duplicates && !d.torn_bytes);
		expect(hbm_state_damaged(&d) && !d.bad_records && !d.header);
		expect(out.log_nr == LOG_NR - 1);
		expect(out.nr == REPLAYED_NR - 1);	/* 0x2000 lost, the rest there */
		hbm_state_free(&out);
	}
	free(buf);
}
END_TEST

/* Sequence numbers seen again are skipped; skipped ones said; another generation's refused. */
START_TEST(log_duplicates_and_gaps)
{
	size_t len, snap = HBM_STATE_HEADER_SIZE + NR * HBM_STATE_RECORD_SIZE;
	uint8_t *buf = with_log(log_records, LOG_NR, &len);
	struct hbm_state_damage d;
	struct hbm_state out;

	/* the third again after the fourth: replayed, it would undo the fourth's */
	buf = realloc(buf, len + HBM_STATE_RECORD_SIZE);
	hbm_state_log_encode(&(struct hbm_state_record){ 0xa000, 0x1000, 9, 9,
			     HBMGUARD_STATE_PENDING, HBMGUARD_SOURCE_UE, 0 }, 42, 3, buf + len);
	ck_assert_int_eq(hbm_state_decode(buf, len + HBM_STATE_RECORD_SIZE, 0, &out, &d), 0);
	expect(d.log_duplicates == 1 && !d.log_bad && !d.log_missing && hbm_state_damaged(&d));
	expect(out.nr == REPLAYED_NR && !memcmp(out.records, replayed, sizeof(replayed)));
	hbm_state_free(&out);

	/* the second numbered 3: one missing; the rest in order */
	hbm_state_log_encode(&log_records[1], 42, 3, buf + snap + HBM_STATE_RECORD_SIZE);
	hbm_state_log_encode(&log_records[2], 42, 4, buf + snap + 2 * HBM_STATE_RECORD_SIZE);
	hbm_state_log_encode(&log_records[3], 42, 5, buf + snap + 3 * HBM_STATE_RECORD_SIZE);
	ck_assert_int_eq(hbm_state_decode(buf, len, 0, &out, &d), 0);
	expect(d.log_missing == 1 && !d.log_duplicates && !d.log_bad && hbm_state_damaged(&d));
	expect(out.nr == REPLAYED_NR && out.log_nr == LOG_NR);
	hbm_state_free(&out);

	/* a record of another generation (serial 41: an older file's) at the end: not ours */
	hbm_state_log_encode(&log_records[0], 41, 6, buf + len);
	ck_assert_int_eq(hbm_state_decode(buf, len + HBM_STATE_RECORD_SIZE, 0, &out, &d), 0);
	expect(d.torn_bytes == HBM_STATE_RECORD_SIZE && out.log_nr == LOG_NR);
	hbm_state_free(&out);

	/* a record that checks out with nothing sane in it: bad */
	hbm_state_log_encode(&(struct hbm_state_record){ 0x1001, 0x1000, 1, 1,
			     HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_UE, 0 }, 42, 6, buf + len);
	ck_assert_int_eq(hbm_state_decode(buf, len + HBM_STATE_RECORD_SIZE, 0, &out, &d), 0);
	expect(d.log_bad == 1 && !d.torn_bytes && out.log_nr == LOG_NR);
	hbm_state_free(&out);
	free(buf);
}
END_TEST

/* The header's version and record size: bad ones trust nothing; larger records are read. */
START_TEST(log_header_fields)
{
	static const uint32_t bad_sizes[] = { 0, 40, 44, 52, 4104, 0xffffffff };
	size_t len, i, rs = 56, snap = HBM_STATE_HEADER_SIZE + NR * rs;
	uint8_t *buf = with_log(log_records, LOG_NR, &len), *big;
	struct hbm_state_damage d;
	struct hbm_state out;

	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		uint8_t h[HBM_STATE_HEADER_SIZE];

		memcpy(h, buf, sizeof(h));
		put32le(h + 16, bad_sizes[i]);
		put_crc(h);
		ck_assert_int_eq(hbm_state_decode(h, sizeof(h), 0, &out, &d), -EBADMSG);
		ck_assert_str_eq(d.header, "unknown header or record size");
	}
	for (i = 0; i < 4; i++) {
		static const uint32_t versions[] = { 0, 3, 0x100, 0x80000002 };
		uint8_t h[HBM_STATE_HEADER_SIZE];

		memcpy(h, buf, sizeof(h));
		put32le(h + 8, versions[i]);
		put_crc(h);
		ck_assert_int_eq(hbm_state_decode(h, sizeof(h), 0, &out, &d), -EBADMSG);
		ck_assert_str_eq(d.header, "unknown version");
	}
	/* version 1 knows 48-byte records only */
	put32le(buf + 8, 1);
	put32le(buf + 16, 56);
	put_crc(buf);
	ck_assert_int_eq(hbm_state_decode(buf, HBM_STATE_HEADER_SIZE, 0, &out, &d), -EBADMSG);

	/* a later version's 56-byte records: the known fields read, the CRC last */
	big = calloc(1, snap + LOG_NR * rs);
	memcpy(big, buf, HBM_STATE_HEADER_SIZE);
	put32le(big + 8, 2);
	put32le(big + 16, rs);
	put_crc(big);
	for (i = 0; i < NR + LOG_NR; i++) {
		uint8_t *p = big + HBM_STATE_HEADER_SIZE + i * rs;

		if (i < NR)
			hbm_state_log_encode(&sample_records[i], 0, 0, p);
		else
			hbm_state_log_encode(&log_records[i - NR], 42, i - NR + 1, p);
		memset(p + 44, 0x77, 8);	/* what this version does not know */
		put32le(p + rs - 4, hbm_crc32c(0, p, rs - 4));
	}
	ck_assert_int_eq(hbm_state_decode(big, snap + LOG_NR * rs, 0, &out, &d), 0);
	expect(whole(&d) && out.record_size == 56);
	ck_assert_uint_eq(out.nr, REPLAYED_NR);
	ck_assert_mem_eq(out.records, replayed, sizeof(replayed));
	hbm_state_free(&out);
	free(big);
	free(buf);
}
END_TEST

/* The replay against a page-by-page model, on random logs over 64 pages. */
START_TEST(log_replay_random)
{
	struct hbm_state_record base[32], log[40], *out;
	struct hbm_state_record model[64];
	size_t round, nb, nl, n, i, p;

	srandom(3720);
	for (round = 0; round < 3000; round++) {
		uint64_t at = 0;

		memset(model, 0, sizeof(model));
		for (nb = 0; nb < 32 && at < 64; nb++) {	/* sorted, apart */
			at += random() % 4;
			if (at >= 64)
				break;
			base[nb] = (struct hbm_state_record){ at << 12, 0,
				nb, nb, 1 + random() % 3, random() % 5, nb };
			base[nb].length = (uint64_t)(1 + random() % (at < 60 ? 4 : 64 - at)) << 12;
			at += base[nb].length >> 12;
			if (at > 64) {
				base[nb].length -= (at - 64) << 12;
				at = 64;
			}
		}
		nl = random() % 40;
		for (i = 0; i < nl; i++) {
			uint64_t off = random() % 64, len = 1 + random() % 8;

			if (off + len > 64)
				len = 64 - off;
			log[i] = (struct hbm_state_record){ off << 12, len << 12, 100 + i, 100 + i,
							    1 + random() % 3, random() % 5, 0 };
		}
		for (i = 0; i < nb; i++)
			for (p = base[i].offset >> 12; p < (base[i].offset + base[i].length) >> 12; p++)
				model[p] = base[i];
		for (i = 0; i < nl; i++)
			for (p = log[i].offset >> 12; p < (log[i].offset + log[i].length) >> 12; p++)
				model[p] = log[i];
		ck_assert_int_eq(hbm_state_replay(base, nb, log, nl, &out, &n), 0);
		for (i = 0, p = 0; i < n; i++) {
			uint64_t q;

			expect(out[i].length && !(i && out[i].offset < out[i - 1].offset + out[i - 1].length));
			for (; p < out[i].offset >> 12; p++)
				expect(!model[p].length);	/* a hole stays one */
			for (q = out[i].offset >> 12; q < (out[i].offset + out[i].length) >> 12; q++, p++)
				expect(model[q].first_seen == out[i].first_seen &&
				       model[q].state == out[i].state &&
				       model[q].source == out[i].source &&
				       model[q].errors == out[i].errors);
		}
		for (; p < 64; p++)
			expect(!model[p].length);
		free(out);
	}
}
END_TEST

/* Appended, compacted with more appended meanwhile: what the replay of all says. */
START_TEST(log_append_and_compact)
{
	char dir[] = "/tmp/hbmlog.XXXXXX", tmp[300];
	struct hbm_state s = sample(), out;
	struct hbm_state_damage d;
	struct hbm_state_log log = { 0 };
	struct hbm_state_count count;
	uint64_t upto, fsyncs;
	int dirfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(hbm_state_append(&(struct hbm_state_log){ .fd = -1, .open = 1 },
					  log_records, 1), -EBADF);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(hbm_state_log_open(dirfd, &s, &log), 0);
	fsyncs = hbm_state_fsyncs;
	ck_assert_int_eq(hbm_state_append(&log, log_records, 2), 0);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 1);	/* one for the two */
	ck_assert_int_eq(hbm_state_compact(dirfd, s.identity, log.fd, log.length, &count), 0);
	/* the snapshot's 12 pages, 0x40000 and 0x2000 new: counted from the replay */
	ck_assert_uint_eq(count.extents, NR + 2);
	ck_assert_uint_eq(count.pages, 14);
	upto = log.length;
	ck_assert_int_eq(hbm_state_append(&log, log_records + 2, 2), 0);	/* meanwhile */
	fsyncs = hbm_state_fsyncs;
	ck_assert_int_eq(hbm_state_compact_finish(dirfd, s.identity, &log, upto), 0);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 2);	/* the tail's, the directory's */
	ck_assert_uint_eq(log.serial, 43);
	ck_assert_uint_eq(log.seq, 2);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	expect(whole(&d));
	ck_assert_uint_eq(out.serial, 43);
	ck_assert_uint_eq(out.log_nr, 2);
	ck_assert_uint_eq(out.nr, REPLAYED_NR);
	ck_assert_mem_eq(out.records, replayed, sizeof(replayed));
	hbm_state_free(&out);
	ck_assert_int_eq(hbm_state_compact_name(s.identity, tmp, sizeof(tmp)), 0);
	ck_assert_int_eq(faccessat(dirfd, tmp, F_OK, 0), -1);	/* renamed */

	/* and appending goes on in the new file, of its generation */
	ck_assert_int_eq(hbm_state_append(&log, &(struct hbm_state_record){ 0x50000, 0x1000,
					  1, 1, HBMGUARD_STATE_RETIRED, 0, 0 }, 1), 0);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	expect(whole(&d) && out.log_nr == 3 && out.nr == REPLAYED_NR + 1);
	hbm_state_free(&out);

	/* nothing appended since the fork: the child's fsync stands, the directory's is made */
	upto = log.length;
	ck_assert_int_eq(hbm_state_compact(dirfd, s.identity, log.fd, upto, &count), 0);
	ck_assert_uint_eq(count.extents, REPLAYED_NR + 1);
	fsyncs = hbm_state_fsyncs;
	ck_assert_int_eq(hbm_state_compact_finish(dirfd, s.identity, &log, upto), 0);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 1);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	expect(whole(&d) && out.serial == 44 && out.log_nr == 0 && out.nr == REPLAYED_NR + 1);
	hbm_state_free(&out);

	/* a damaged file is not compacted: its damage would go unsaid */
	hbm_state_log_close(&log);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(hbm_state_log_open(dirfd, &s, &log), 0);
	ck_assert_int_eq(pwrite(log.fd, "x", 1, 200), 1);
	ck_assert_int_eq(hbm_state_compact(dirfd, s.identity, log.fd, log.length, &count),
			 -EBADMSG);
	hbm_state_log_close(&log);
	ck_assert_int_eq(hbm_state_quarantine(dirfd, s.identity, tmp, sizeof(tmp)), 0);
	unlinkat(dirfd, tmp, 0);
	unlinkat(dirfd, "0000:3b:00.0.state", 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* @name's content is still @text (a file a link pointed at). */
static void still(int dirfd, const char *name, const char *text)
{
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(hbm_read_file(dirfd, name, &buf, &len), 0);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_mem_eq(buf, text, len);
	free(buf);
}

/*
 * A link or a FIFO put under a temporary file's name is never written
 * through nor opened: the file it names stays as it was, and nothing
 * blocks (the FIFO: a test that would hang until its timeout).
 */
START_TEST(temporary_files_are_never_followed)
{
	char dir[] = "/tmp/hbmtmp.XXXXXX", tmp[300];
	struct hbm_state s = sample(), out;
	struct hbm_state_damage d;
	struct hbm_state_log log = { 0 };
	struct hbm_state_count count;
	struct stat st;
	uint64_t upto;
	int dirfd, fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	fd = openat(dirfd, "victim", O_WRONLY | O_CREAT, 0600);
	ck_assert_int_eq(write(fd, "victim", 6), 6);
	close(fd);

	ck_assert_int_eq(symlinkat("victim", dirfd, ".0000:3b:00.0.state.tmp"), 0);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	still(dirfd, "victim", "victim");
	ck_assert_int_eq(fstatat(dirfd, "0000:3b:00.0.state", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));

	ck_assert_int_eq(hbm_state_log_open(dirfd, &s, &log), 0);
	ck_assert_int_eq(hbm_state_append(&log, log_records, 2), 0);
	ck_assert_int_eq(hbm_state_compact_name(s.identity, tmp, sizeof(tmp)), 0);
	ck_assert_int_eq(symlinkat("victim", dirfd, tmp), 0);
	ck_assert_int_eq(hbm_state_compact(dirfd, s.identity, log.fd, log.length, &count), 0);
	still(dirfd, "victim", "victim");
	ck_assert_int_eq(unlinkat(dirfd, tmp, 0), 0);
	ck_assert_int_eq(mkfifoat(dirfd, tmp, 0600), 0);
	ck_assert_int_eq(hbm_state_compact(dirfd, s.identity, log.fd, log.length, &count), 0);

	/* the child's file swapped for a link before the finish: not followed */
	ck_assert_int_eq(unlinkat(dirfd, tmp, 0), 0);
	ck_assert_int_eq(symlinkat("victim", dirfd, tmp), 0);
	upto = log.length;
	ck_assert_int_eq(hbm_state_compact_finish(dirfd, s.identity, &log, upto), -ELOOP);
	still(dirfd, "victim", "victim");
	ck_assert_int_eq(faccessat(dirfd, tmp, F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(fstatat(dirfd, "0000:3b:00.0.state", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	expect(whole(&d) && out.serial == 42 && out.log_nr == 2);
	hbm_state_free(&out);

	hbm_state_log_close(&log);
	ck_assert_int_eq(unlinkat(dirfd, "victim", 0), 0);
	ck_assert_int_eq(unlinkat(dirfd, "0000:3b:00.0.state", 0), 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);	/* nothing else left */
}
END_TEST

/*
 * A FIFO or a directory under a device's state file's name is damage: not
 * waited on (the FIFO has no writer: a read that waited would hang until
 * the test's timeout), kept aside as it is and replaced by a regular file.
 * A link to a state file is read through (an operator moved the file and
 * linked it back: its pages are the device's); one to nothing is a file
 * not read (its disk not mounted yet), one to a device damage.
 */
START_TEST(a_state_file_not_regular_is_damage)
{
	static const char *const name = "0000:3b:00.0.state";
	char dir[] = "/tmp/hbmstate.XXXXXX", moved[300];
	struct hbm_state s = sample(), out;
	struct hbm_state_damage d;
	struct stat st;
	int dirfd, kind;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
	ck_assert_int_eq(renameat(dirfd, name, dirfd, "elsewhere"), 0);
	ck_assert_int_eq(symlinkat("elsewhere", dirfd, name), 0);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
	ck_assert_uint_eq(out.nr, s.nr);
	hbm_state_free(&out);
	ck_assert_int_eq(unlinkat(dirfd, name, 0), 0);
	/* a link to nothing (its disk not mounted yet): not read, not "no file" */
	ck_assert_int_eq(symlinkat("not-there", dirfd, name), 0);
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), -ENOLINK);
	ck_assert_int_eq(unlinkat(dirfd, name, 0), 0);
	/* a link to a device: damage, the device not opened */
	ck_assert_int_eq(symlinkat("/dev/null", dirfd, name), 0);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), -EBADMSG);
	ck_assert_str_eq(d.header, "not a regular file");
	ck_assert_int_eq(unlinkat(dirfd, name, 0), 0);
	for (kind = 0; kind < 2; kind++) {
		ck_assert_int_eq(kind == 0 ? mkfifoat(dirfd, name, 0600) : mkdirat(dirfd, name, 0700), 0);
		memset(&d, 0, sizeof(d));
		ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), -EBADMSG);
		ck_assert_str_eq(d.header, "not a regular file");
		ck_assert_int_ge(hbm_state_quarantine(dirfd, s.identity, moved, sizeof(moved)), 0);
		ck_assert_int_eq(fstatat(dirfd, moved, &st, AT_SYMLINK_NOFOLLOW), 0);
		ck_assert(kind == 0 ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode));
		ck_assert_int_eq(hbm_state_write(dirfd, &s), 0);
		ck_assert_int_eq(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_int_eq(hbm_state_read(dirfd, s.identity, 0, &out, &d), 0);
		hbm_state_free(&out);
		ck_assert_int_eq(unlinkat(dirfd, name, 0), 0);
		ck_assert_int_eq(unlinkat(dirfd, moved, kind == 1 ? AT_REMOVEDIR : 0), 0);
	}
	ck_assert_int_eq(unlinkat(dirfd, "elsewhere", 0), 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);	/* nothing else left */
}
END_TEST

/*
 * At start, the temporary files of compactions a crash cut short are
 * removed: anything of that exact name but a directory (a link or a FIFO
 * would be in the next compaction's way), nothing followed.
 */
START_TEST(compact_files_cleaned)
{
	static const char *const removed[] = {
		".0000:3b:00.0.state.compact", ".GPU-1%2fx.state.compact",
	};
	static const char *const kept[] = {
		"0000:3b:00.0.state", ".0000:3b:00.0.state.tmp", ".x%2G.state.compact",
		".x%2.state.compact", "..state.compact", ".a.state.compact.1", "a.state.compact",
		".a b.state.compact", ".a%2F.state.compact", "target",
	};
	char dir[] = "/tmp/hbmclean.XXXXXX";
	int dirfd, fd;
	size_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd, 0);
	ck_assert_int_eq(hbm_state_compact_clean(dirfd), 0);
	for (i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
		fd = openat(dirfd, removed[i], O_WRONLY | O_CREAT, 0600);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		fd = openat(dirfd, kept[i], O_WRONLY | O_CREAT, 0600);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	/* of that name, a link (to a file, to a directory) and a FIFO: removed, not followed */
	ck_assert_int_eq(symlinkat("target", dirfd, ".l.state.compact"), 0);
	ck_assert_int_eq(mkdirat(dirfd, "sub", 0700), 0);
	ck_assert_int_eq(symlinkat("sub", dirfd, ".d.state.compact"), 0);
	ck_assert_int_eq(mkfifoat(dirfd, ".f.state.compact", 0600), 0);
	ck_assert_int_eq(mkdirat(dirfd, ".e.state.compact", 0700), 0);	/* kept */
	ck_assert_int_eq(hbm_state_compact_clean(dirfd), 5);
	for (i = 0; i < sizeof(removed) / sizeof(removed[0]); i++)
		ck_assert_int_eq(faccessat(dirfd, removed[i], F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(faccessat(dirfd, ".l.state.compact", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(faccessat(dirfd, ".d.state.compact", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(faccessat(dirfd, ".f.state.compact", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		ck_assert_int_eq(faccessat(dirfd, kept[i], F_OK, AT_SYMLINK_NOFOLLOW), 0);
		ck_assert_int_eq(unlinkat(dirfd, kept[i], 0), 0);
	}
	ck_assert_int_eq(unlinkat(dirfd, ".e.state.compact", AT_REMOVEDIR), 0);
	ck_assert_int_eq(unlinkat(dirfd, "sub", AT_REMOVEDIR), 0);
	close(dirfd);
	ck_assert_int_eq(rmdir(dir), 0);	/* nothing else left */
}
END_TEST


/*
 * A stored record as a packed RESTORE takes it: kept as it is where the
 * module takes it (its source above all), made what the module takes where
 * it would refuse it (which would cost the whole request).
 */
/* Part @offset of an extent ending at @end: its length and the state it was restored in. */
static void expect_cover(const struct hbm_state *s, size_t *j, uint64_t offset, uint64_t end,
			 uint64_t length, uint8_t state)
{
	uint8_t got;

	ck_assert_uint_eq(hbm_state_cover(s, NULL, j, offset, end, &got), length);
	ck_assert_uint_eq(got, state);
}

/*
 * A table read's extents, part by part: where records restored cover them
 * one state at a time, and where none does.
 */
START_TEST(cover_part_by_part)
{
	struct hbm_state_record r[] = {
		{ .offset = 0x0000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x1000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x2000, .length = 0x1000, .state = HBMGUARD_STATE_PENDING },
		{ .offset = 0x3000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x6000, .length = 0x1000, .state = HBMGUARD_STATE_FAILED },
		{ .offset = 0x8000, .length = 0x1000, .state = HBMGUARD_STATE_FAILED },
	};
	struct hbm_state s = { .records = r, .nr = 6 };
	size_t j = 0;

	/* a walk of the table, in order: two records one part */
	expect_cover(&s, &j, 0x0000, 0x2000, 0x2000, HBMGUARD_STATE_RETIRED);
	expect_cover(&s, &j, 0x2000, 0x3000, 0x1000, HBMGUARD_STATE_PENDING);
	/* restored, then a page after it merged into its extent */
	expect_cover(&s, &j, 0x3000, 0x5000, 0x1000, HBMGUARD_STATE_RETIRED);
	expect_cover(&s, &j, 0x4000, 0x5000, 0x1000, HBMGUARD_STATE_CLEAN);
	/* two restored FAILED, a page between them (no spares: merged) */
	expect_cover(&s, &j, 0x6000, 0x9000, 0x1000, HBMGUARD_STATE_FAILED);
	expect_cover(&s, &j, 0x7000, 0x9000, 0x1000, HBMGUARD_STATE_CLEAN);
	expect_cover(&s, &j, 0x8000, 0x9000, 0x1000, HBMGUARD_STATE_FAILED);
	expect_cover(&s, &j, 0x9000, 0xa000, 0x1000, HBMGUARD_STATE_CLEAN);	/* past the last */
	/* one extent over records of two states */
	j = 0;
	expect_cover(&s, &j, 0x1000, 0x3000, 0x1000, HBMGUARD_STATE_RETIRED);
	expect_cover(&s, &j, 0x2000, 0x3000, 0x1000, HBMGUARD_STATE_PENDING);
	/* an extent before the records it reaches into */
	expect_cover(&s, &j, 0x5000, 0x7000, 0x1000, HBMGUARD_STATE_CLEAN);
	expect_cover(&s, &j, 0x6000, 0x7000, 0x1000, HBMGUARD_STATE_FAILED);
}
END_TEST

/*
 * Records the restore did not get into the table (refused, their request
 * failed) cover nothing: pages retired there since, in the state stored,
 * are news.
 */
START_TEST(cover_not_by_records_unsent)
{
	struct hbm_state_record r[] = {
		{ .offset = 0x0000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x1000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x2000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x5000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
		{ .offset = 0x6000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED },
	};
	struct hbm_state s = { .records = r, .nr = 5 };
	uint64_t unsent = 1 << 1 | 1 << 3;	/* records 1 and 3 */
	uint8_t got;
	size_t j = 0;

	/* one extent over the three first: sent, not, sent */
	ck_assert_uint_eq(hbm_state_cover(&s, &unsent, &j, 0x0000, 0x3000, &got), 0x1000);
	ck_assert_uint_eq(got, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(hbm_state_cover(&s, &unsent, &j, 0x1000, 0x3000, &got), 0x1000);
	ck_assert_uint_eq(got, HBMGUARD_STATE_CLEAN);
	ck_assert_uint_eq(hbm_state_cover(&s, &unsent, &j, 0x2000, 0x3000, &got), 0x1000);
	ck_assert_uint_eq(got, HBMGUARD_STATE_RETIRED);
	/* an extent from before the unsent one: clean up to the next sent */
	ck_assert_uint_eq(hbm_state_cover(&s, &unsent, &j, 0x4000, 0x7000, &got), 0x2000);
	ck_assert_uint_eq(got, HBMGUARD_STATE_CLEAN);
	ck_assert_uint_eq(hbm_state_cover(&s, &unsent, &j, 0x6000, 0x7000, &got), 0x1000);
	ck_assert_uint_eq(got, HBMGUARD_STATE_RETIRED);
}
END_TEST

START_TEST(restore_record_kept_or_made_acceptable)
{
	struct hbm_state_record r = {
		.offset = 0x5000, .length = 0x2000, .first_seen = 100, .last_seen = 200,
		.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE, .errors = 3,
	};
	struct hbmguard_restore_record out;

	ck_assert_uint_eq(sizeof(out), HBMGUARD_RESTORE_RECORD_SIZE_VER0);
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.offset, 0x5000);
	ck_assert_uint_eq(out.length, 0x2000);
	ck_assert_uint_eq(out.first_seen, 100);
	ck_assert_uint_eq(out.last_seen, 200);
	ck_assert_uint_eq(out.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(out.source, HBMGUARD_SOURCE_UE);
	ck_assert_uint_eq(out.errors, 3);
	ck_assert_uint_eq(out.reserved, 0);

	r.state = HBMGUARD_STATE_PENDING;
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.state, HBMGUARD_STATE_PENDING);
	r.state = HBMGUARD_STATE_FAILED;	/* retried for a spare */
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.state, HBMGUARD_STATE_RETIRED);

	r.source = HBMGUARD_SOURCE_DRIVER;
	hbm_state_restore_record(&r, 1, &out);
	ck_assert_uint_eq(out.source, HBMGUARD_SOURCE_DRIVER);	/* a GPU's */
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.source, HBMGUARD_SOURCE_RESTORED);
	r.source = HBMGUARD_SOURCE_NONE;
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.source, HBMGUARD_SOURCE_RESTORED);

	r.first_seen = 300;	/* after the last: the last is the first */
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.first_seen, 300);
	ck_assert_uint_eq(out.last_seen, 300);
	r.first_seen = 1ULL << 32;	/* past 2106: now */
	r.last_seen = 1ULL << 33;
	hbm_state_restore_record(&r, 0, &out);
	ck_assert_uint_eq(out.first_seen, 0);
	ck_assert_uint_eq(out.last_seen, 0);
}
END_TEST

Suite *state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, crc32c_vector);
	tcase_add_test(tc, crc32c_as_bitwise);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, every_bit_flip);
	tcase_add_test(tc, bad_records);
	tcase_add_test(tc, file_names);
	tcase_add_test(tc, write_read_quarantine);
	tcase_add_test(tc, a_backup_link_is_not_kept_aside);
	tcase_add_test(tc, a_file_that_cannot_be_linked_is_moved_aside);
	tcase_add_test(tc, log_replayed);
	tcase_add_test(tc, log_torn_tail);
	tcase_add_test(tc, log_bounded_by_the_device);
	tcase_add_test(tc, log_bad_in_the_middle);
	tcase_add_test(tc, log_duplicates_and_gaps);
	tcase_add_test(tc, log_header_fields);
	tcase_add_test(tc, log_replay_random);
	tcase_add_test(tc, log_append_and_compact);
	tcase_add_test(tc, temporary_files_are_never_followed);
	tcase_add_test(tc, a_state_file_not_regular_is_damage);
	tcase_add_test(tc, compact_files_cleaned);
	tcase_add_test(tc, restore_record_kept_or_made_acceptable);
	tcase_add_test(tc, cover_part_by_part);
	tcase_add_test(tc, cover_not_by_records_unsent);
	suite_add_tcase(s, tc);
	return s;
}
