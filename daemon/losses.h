/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data lost where no table read can show it, heard of though its event was
 * lost (losses.c): per device id, the module's count of its events that
 * said a page's data was lost again, against those heard.
 */
#ifndef HBM_LOSSES_H
#define HBM_LOSSES_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/hbmguard.h>

/*
 * A device's count, as DEVICE_GET says it at one instant
 * (uapi/linux/hbmguard.h): HBMGUARD_A_DATA_LOST, _DATA_LOST_SEQNUM and
 * _ADDED_SEQNUM.
 */
struct hbm_loss_count {
	uint64_t count;		/* its events that said data was lost */
	uint64_t last_seqnum;	/* the last of them, 0 none */
	uint64_t added_seqnum;	/* its DEVICE_ADDED's: which registration */
};

struct hbm_losses {
	struct hbm_device_losses {
		uint64_t added;		/* the registration counted (its ADDED_SEQNUM) */
		char identity[HBMGUARD_IDENTITY_LEN];
		uint64_t base;		/* the module's count at the last look */
		uint64_t base_seqnum;	/* the last of them then */
		uint64_t heard;		/* heard since, past base_seqnum */
		bool due;		/* a count read after events were lost: */
		uint64_t due_count;	/* ... compared once every event up to */
		uint64_t due_seqnum;	/* ... this one is read or lost */
	} dev[HBMGUARD_MAX_DEVICES];
	unsigned int due;		/* devices with a count to compare */
	uint64_t read_to;		/* every event up to it read or lost */
	/* a count that rose by @unheard more than was heard */
	void (*unheard)(void *ctx, uint32_t id, const char *identity, uint64_t unheard);
	void *ctx;
};

void hbm_losses_seen(struct hbm_losses *l, uint32_t id, const char *identity,
		     const struct hbm_loss_count *c, bool at_start);
void hbm_losses_added(struct hbm_losses *l, uint32_t id, uint64_t seqnum);
void hbm_losses_heard(struct hbm_losses *l, uint32_t id, uint64_t seqnum);
void hbm_losses_read_to(struct hbm_losses *l, uint64_t seqnum);
void hbm_losses_renumbered(struct hbm_losses *l);

#endif /* HBM_LOSSES_H */
