// SPDX-License-Identifier: GPL-2.0
/*
 * Names from the kernel and the drivers made valid UTF-8 (utf8.h), for the
 * formats that require it: hbmctl's JSON (cli.c) and the metrics'
 * exposition (metrics.c).
 */
#include <string.h>

#include "utf8.h"

/*
 * The length of the well-formed UTF-8 sequence at @s (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0 when there
 * is none; then *@bad is the number of bytes of its maximal subpart, which
 * one U+FFFD replaces (Unicode's "substitution of maximal subparts",
 * chapter 3.9, as browsers and Python decode).
 */
static size_t utf8_seq(const unsigned char *s, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f;	/* past U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	for (i = 1; i < len; i++, lo = 0x80, hi = 0xbf) {
		if (s[i] < lo || s[i] > hi) {	/* a NUL ends it here too */
			*bad = i;
			return 0;
		}
	}
	return len;
}

/**
 * hbm_utf8_repair() - a string made valid UTF-8
 * @out: where it goes
 * @cap: @out's size: 3 * strlen(@s) + 1 always suffices
 * @s: the string, NUL-terminated, bytes from anywhere (the kernel's names)
 *
 * Every ill-formed sequence is replaced by U+FFFD, so that the rest of the
 * name survives; cut short, never mid-character, when @cap is too small.
 *
 * Return: the length written (without the NUL).
 */
size_t hbm_utf8_repair(char *out, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, len, bad;

	if (!cap)
		return 0;
	while (*p) {
		len = utf8_seq(p, &bad);
		if (len) {
			if (n + len >= cap)
				break;
			memcpy(out + n, p, len);
			p += len;
		} else {
			if (n + 3 >= cap)
				break;
			memcpy(out + n, "\xef\xbf\xbd", 3);
			p += bad;
		}
		n += len ? len : 3;
	}
	out[n] = 0;
	return n;
}
