/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A string made valid UTF-8 (utf8.c): what JSON (RFC 8259) and Prometheus's
 * exposition format both require, and what an identity a kernel or a
 * driver wrote need not be.  Pure code: no json-c, no libmicrohttpd.
 */
#ifndef HBM_UTF8_H
#define HBM_UTF8_H

#include <stddef.h>

size_t hbm_utf8_repair(char *out, size_t cap, const char *s);

#endif /* HBM_UTF8_H */
