// SPDX-License-Identifier: GPL-2.0
/*
 * Names from the kernel and the drivers made valid UTF-8 for hbmctl's JSON
 * and the metrics' exposition (hbm_utf8_repair(), utf8.c): any bytes, a
 * process's or a device's name among them.  The input's first byte says
 * how much room there is: bit 7 clear, what cli.c and metrics.c give
 * (3 * strlen + 1), set, the next byte's count of bytes; the rest, up to a
 * NUL, is the string.
 *
 * What the callers rely on: valid UTF-8 (RFC 3629), NUL-terminated within
 * the room and nothing written past it, the length returned its strlen();
 * with the callers' room, the whole name, each ill-formed sequence one
 * U+FFFD (Unicode's maximal subparts, here found another way: the code
 * points a prefix can still become); with less, the same cut between
 * characters.  A name valid already comes out as it went in.
 */
#include <assert.h>
#include <stdbool.h>

#include "utf8.h"
#include "fuzz.h"

/* Whether @s (@len bytes, no NUL) is valid UTF-8: decoded, then judged. */
static bool valid(const unsigned char *s, size_t len)
{
	static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			n = 2, cp = s[i] & 0x1f;
		else if ((s[i] & 0xf0) == 0xe0)
			n = 3, cp = s[i] & 0x0f;
		else if ((s[i] & 0xf8) == 0xf0)
			n = 4, cp = s[i] & 0x07;
		else
			return false;
		if (len - i < n)
			return false;
		for (k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/*
 * Whether the @k bytes at @s, the start of an @n-byte form, can still
 * become a scalar value of that form: the code points they allow, their
 * remaining bits all 0 to all 1, meet [least, U+10FFFF] less the
 * surrogates.
 */
static bool viable(const unsigned char *s, size_t n, size_t k)
{
	static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	static const unsigned char lead_bits[] = { 0, 0, 0x1f, 0x0f, 0x07 };
	uint32_t lo = s[0] & lead_bits[n], hi;
	size_t i, rest = 6 * (n - k);

	for (i = 1; i < k; i++)
		lo = lo << 6 | (s[i] & 0x3f);
	lo <<= rest;
	hi = lo | ((1u << rest) - 1);
	if (hi < least[n] || lo > 0x10ffff)
		return false;
	return !(lo >= 0xd800 && hi <= 0xdfff);		/* all surrogates */
}

/*
 * The next unit of the repaired string at @s: how many bytes it takes,
 * and whether they are kept (a well-formed character) or one U+FFFD.
 */
static size_t unit(const unsigned char *s, bool *kept)
{
	size_t n, k, m = 0;

	*kept = true;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4;
	else
		n = 0;
	for (k = 1; n && k <= n; k++) {
		if (k > 1 && (s[k - 1] & 0xc0) != 0x80)	/* a NUL ends it too */
			break;
		if (!viable(s, n, k))
			break;
		m = k;
	}
	if (n && m == n)
		return n;
	*kept = false;
	return m ? m : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t how = fuzz_u8(&in), room = how & 0x80 ? fuzz_u8(&in) : 0;
	char *s = fuzz_str(&in), *want, *out, *again;
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), full = 3 * len + 1, cap = how & 0x80 ? room : full;
	size_t w = 0, cut = 0, n, u;
	bool kept;

	/* The repair as it should be: whole, and where the room cuts it. */
	want = malloc(full);
	if (!want)
		abort();
	while (*p) {
		u = unit(p, &kept);
		if (kept)
			memcpy(want + w, p, u);
		else
			memcpy(want + w, "\xef\xbf\xbd", 3);
		w += kept ? u : 3;
		if (cap && w < cap)
			cut = w;
		if (!cap || w >= cap)
			break;
		p += u;
	}
	assert(w < full);

	out = malloc(cap);	/* exactly: ASan sees a byte written past it */
	if (!out && cap)
		abort();
	n = hbm_utf8_repair(out, cap, s);
	if (!cap) {
		assert(n == 0);
		goto done;
	}
	assert(n < cap && out[n] == '\0' && strlen(out) == n);
	assert(valid((const unsigned char *)out, n));
	assert(n == cut && !memcmp(out, want, n));
	if (cap == full && valid((const unsigned char *)s, len))
		assert(n == len && !memcmp(out, s, len));

	/* Valid already: as it was. */
	again = malloc(n + 1);
	if (!again)
		abort();
	assert(hbm_utf8_repair(again, n + 1, out) == n && !strcmp(again, out));
	free(again);
done:
	free(out);
	free(want);
	free(s);
	return 0;
}
