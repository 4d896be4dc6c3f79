// SPDX-License-Identifier: GPL-2.0
/* systemd's time spans, and numbers of bytes (timespan.h). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "timespan.h"

/*
 * systemd's time units (systemd.time(7), "PARSING TIME SPANS"), in the order
 * its parser tries them as prefixes of what follows a number
 * (extract_multiplier() in src/basic/time-util.c, systemd 252): "ms" before
 * "m", "min" and "months" before "ms", so that the longest name is taken.
 * A month is 30.44 days and a year 365.25, as there.
 */
static const struct {
	const char *name;
	uint64_t usec;
} time_units[] = {
	{ "seconds", USEC_PER_SEC }, { "second", USEC_PER_SEC },
	{ "sec", USEC_PER_SEC }, { "s", USEC_PER_SEC },
	{ "minutes", 60 * USEC_PER_SEC }, { "minute", 60 * USEC_PER_SEC },
	{ "min", 60 * USEC_PER_SEC },
	{ "months", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC },
	{ "M", 2629800 * USEC_PER_SEC },
	{ "msec", 1000 }, { "ms", 1000 },
	{ "m", 60 * USEC_PER_SEC },
	{ "hours", 3600 * USEC_PER_SEC }, { "hour", 3600 * USEC_PER_SEC },
	{ "hr", 3600 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC },
	{ "days", USEC_PER_DAY }, { "day", USEC_PER_DAY }, { "d", USEC_PER_DAY },
	{ "weeks", 7 * USEC_PER_DAY }, { "week", 7 * USEC_PER_DAY },
	{ "w", 7 * USEC_PER_DAY },
	{ "years", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC },
	{ "y", 31557600 * USEC_PER_SEC },
	{ "usec", 1 }, { "us", 1 },
	{ "\xce\xbcs", 1 },		/* U+03BC GREEK SMALL LETTER MU */
	{ "\xc2\xb5s", 1 },		/* U+00B5 MICRO SIGN */
};

/**
 * hbm_time_span() - a time span in microseconds
 * @v: the text
 * @usec: the span, set only on success
 *
 * Numbers, each with an optional fraction ("1.5h") and unit, added up
 * ("1h 30min", "1h30min"); a number without a unit is seconds.  As
 * systemd's parse_time() (time-util.c, systemd 252), less "infinity",
 * which no caller means.
 *
 * Return: 0; -EINVAL: not a time span; -ERANGE: past 2^64 microseconds.
 */
int hbm_time_span(const char *v, uint64_t *usec)
{
	uint64_t sum = 0;
	bool some = false;

	for (;;) {
		uint64_t whole = 0, mult = USEC_PER_SEC, k;
		const char *frac = NULL, *unit;
		size_t i, nfrac = 0;

		while (isspace((unsigned char)*v))
			v++;
		if (!*v)
			break;
		/* ".5min" too, as there */
		if (!isdigit((unsigned char)*v) && (*v != '.' || !isdigit((unsigned char)v[1])))
			return -EINVAL;
		for (; isdigit((unsigned char)*v); v++) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (*v - '0');
		}
		if (*v == '.') {
			frac = ++v;
			nfrac = strspn(v, "0123456789");
			if (!nfrac)		/* "3.", "3.s": as systemd */
				return -EINVAL;
			v += nfrac;
		}
		unit = v + strspn(v, " \t");
		for (i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++) {
			size_t len = strlen(time_units[i].name);

			if (!strncmp(unit, time_units[i].name, len)) {
				mult = time_units[i].usec;
				v = unit + len;
				break;
			}
		}
		/* Without a unit, a space or the end must follow ("12x", "1.2.3"). */
		if (i == sizeof(time_units) / sizeof(time_units[0]) && *v && !isspace((unsigned char)*v))
			return -EINVAL;
		if (whole > UINT64_MAX / mult)
			return -ERANGE;
		k = whole * mult;
		/* The fraction's digits, each a tenth of the one before. */
		for (i = 0, mult /= 10; i < nfrac; i++, mult /= 10) {
			if (k > UINT64_MAX - (frac[i] - '0') * mult)
				return -ERANGE;
			k += (frac[i] - '0') * mult;
		}
		if (k > UINT64_MAX - sum)
			return -ERANGE;
		sum += k;
		some = true;
	}
	if (!some)
		return -EINVAL;
	*usec = sum;
	return 0;
}

/**
 * hbm_bytes() - a number of bytes: decimal, or hex after 0x, optionally
 * with K, M, G or T (powers of 1024)
 * @v: the text
 * @bytes: the number
 *
 * A leading 0 is decimal, as systemd reads sizes: strtoull()'s base 0 read
 * Address=0102400000 as octal, another range than written (helper-193).
 *
 * Return: 0, or -EINVAL (@bytes untouched).
 */
int hbm_bytes(const char *v, uint64_t *bytes)
{
	static const char units[] = "KMGT";
	unsigned long long n;
	const char *u;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, v[0] == '0' && (v[1] == 'x' || v[1] == 'X') ? 16 : 10);
	if (*end && !end[1] && (u = strchr(units, *end))) {
		shift = 10 * (u - units + 1);
		end++;
	}
	if (errno || *end || end == v || (shift && n > UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)n << shift;
	return 0;
}
