/* SPDX-License-Identifier: GPL-2.0 */
/* SHA-256 (sha256.c): a job key's digest, what the daemon keeps of it. */
#ifndef HBM_SHA256_H
#define HBM_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define HBM_SHA256_LEN	32

void hbm_sha256(const void *data, size_t len, uint8_t out[HBM_SHA256_LEN]);

#endif /* HBM_SHA256_H */
