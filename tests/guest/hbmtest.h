/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers for the in-guest test program: TAP-like output and checks. */
#ifndef HBMTEST_H
#define HBMTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/hbmguard.h>

extern int hbm_failures;
extern const char *hbm_test_name;

/* Report and count a failure; the test goes on so that one run shows all. */
#define CHECK(cond) do {						\
	if (!(cond)) {							\
		printf("  FAIL %s:%d (%s): %s\n", __FILE__, __LINE__,	\
		       hbm_test_name, #cond);				\
		hbm_failures++;						\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long _a = (long long)(a), _b = (long long)(b);		\
	if (_a != _b) {							\
		printf("  FAIL %s:%d (%s): %s == %lld, expected %s == %lld\n", \
		       __FILE__, __LINE__, hbm_test_name, #a, _a, #b, _b); \
		hbm_failures++;						\
	}								\
} while (0)

/* An ioctl that must fail with errno @err. */
#define CHECK_ERRNO(call, err) do {					\
	int _r = (call);						\
	int _e = errno;							\
	if (_r != -1 || _e != (err)) {					\
		printf("  FAIL %s:%d (%s): %s returned %d errno %s, expected %s\n", \
		       __FILE__, __LINE__, hbm_test_name, #call, _r,	\
		       strerror(_e), strerror(err));			\
		hbm_failures++;						\
	}								\
} while (0)

#define CHECK_OK(call) do {						\
	int _r = (call);						\
	if (_r < 0) {							\
		printf("  FAIL %s:%d (%s): %s: %s\n", __FILE__, __LINE__, \
		       hbm_test_name, #call, strerror(errno));		\
		hbm_failures++;						\
	}								\
} while (0)

#endif /* HBMTEST_H */
