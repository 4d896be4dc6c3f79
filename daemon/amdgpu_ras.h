/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu's RAS files in sysfs, parsed, for the amdgpu source of hbmguardd
 * (issue 13).  amdgpu_ras_parse_*() are pure; amdgpu_ras_read() reads one
 * card's files (a real /sys/class/drm/cardN/device or a fixture tree).
 *
 * Every function returns 0 or a negative errno, and on error sets *why to
 * a sentence saying what was wrong (a static string) and *line to the line
 * (from 1) it was on; outputs are written only on success.
 */
#ifndef HBM_AMDGPU_RAS_H
#define HBM_AMDGPU_RAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* enum amdgpu_ras_retire_page_flags' order in amdgpu_ras.c, by its letter. */
enum amdgpu_page_state {
	AMDGPU_PAGE_RESERVED,	/* 'R': out of use */
	AMDGPU_PAGE_PENDING,	/* 'P': bad, reserved at the next window */
	AMDGPU_PAGE_FAILED,	/* 'F': could not be reserved */
};

/**
 * struct amdgpu_bad_page - one line of ras/gpu_vram_bad_pages
 * @pfn: GPU page frame number (the page's byte offset is @pfn * @size)
 * @size: bytes of the page (AMDGPU_GPU_PAGE_SIZE, 4096, in 6.1 and 6.12)
 * @state: enum amdgpu_page_state
 */
struct amdgpu_bad_page {
	uint32_t pfn;
	uint32_t size;
	enum amdgpu_page_state state;
};

/* One line: "0x%08x : 0x%08x : %1s\n", 28 bytes. */
#define AMDGPU_BAD_PAGE_LINE	28

int amdgpu_ras_parse_bad_pages(const char *buf, size_t len,
			       struct amdgpu_bad_page *out, size_t max,
			       size_t *count, const char **why, size_t *line);

/**
 * struct amdgpu_err_count - ras/<block>_err_count
 * @ue: uncorrectable errors
 * @ce: correctable errors
 * @de: deferred errors (UMC in 6.12; 0 where the file has no "de:")
 * @has_de: the file has a "de:" line
 * @inaccessible: the file says "Query currently inaccessible" (the GPU is
 *	in reset), or cannot be read (the driver's query failed): no counts
 */
struct amdgpu_err_count {
	uint64_t ue;
	uint64_t ce;
	uint64_t de;
	bool has_de;
	bool inaccessible;
};

int amdgpu_ras_parse_err_count(const char *buf, size_t len,
			       struct amdgpu_err_count *c, const char **why,
			       size_t *line);

#define AMDGPU_RAS_BLOCKS	24	/* amdgpu_ras.h's blocks fit */
#define AMDGPU_BLOCK_NAME	32

/**
 * struct amdgpu_ras - what one card's ras/ directory says
 * @pages: the bad pages, @nr_pages of them (malloc()ed; amdgpu_ras_free())
 * @nr_pages: how many
 * @nr_blocks: blocks with an <block>_err_count file
 * @block: each one's name ("umc") and counts, sorted by name
 */
struct amdgpu_ras {
	struct amdgpu_bad_page *pages;
	size_t nr_pages;
	size_t nr_blocks;
	struct {
		char name[AMDGPU_BLOCK_NAME];
		struct amdgpu_err_count count;
	} block[AMDGPU_RAS_BLOCKS];
};

int amdgpu_ras_read(const char *device_dir, struct amdgpu_ras *ras,
		    const char **why, char *file, size_t file_len, size_t *line);
void amdgpu_ras_free(struct amdgpu_ras *ras);

#endif /* HBM_AMDGPU_RAS_H */
