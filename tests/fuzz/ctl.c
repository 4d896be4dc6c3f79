// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket's packets, as any user on the node may send them to
 * hbmguardd (and as a daemon answers hbmctl): hbm_ctl_decode() either
 * refuses one or hands on a body whose names are whole strings of their
 * fields, which the daemon then prints escaped.
 */
#include <assert.h>
#include <stdbool.h>

#include "ctl.h"
#include "fuzz.h"

static void names_printed(const void *body, uint16_t type)
{
	char out[4 * HBM_CTL_NAME_LEN + 8];

	switch (type & ~HBM_CTL_REPLY) {
	case HBM_CTL_RETIRE:
	case HBM_CTL_CLEAR: {
		const struct hbm_ctl_extent *x = body;

		assert(memchr(x->identity, 0, sizeof(x->identity)));
		hbm_ctl_escape(out, sizeof(out), x->identity, false);
		hbm_ctl_escape(out, sizeof(out), x->identity, true);
		break;
	}
	case HBM_CTL_RANK_REGISTER: {
		const struct hbm_ctl_rank *r = body;

		assert(memchr(r->job, 0, sizeof(r->job)));
		assert(memchr(r->device, 0, sizeof(r->device)));
		hbm_ctl_escape(out, sizeof(out), r->job, false);
		hbm_ctl_escape(out, sizeof(out), r->device, true);
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hbm_ctl_header h;
	const void *body;
	void *pkt = malloc(size ? size : 1);	/* as received: aligned, its own */
	bool reply;

	if (!pkt)
		abort();
	for (reply = false; ; reply = true) {
		memcpy(pkt, data, size);
		if (!hbm_ctl_decode(pkt, size, reply, &h, &body)) {
			assert(h.size == size);
			assert(!body || size == sizeof(h) + hbm_ctl_body_size(h.type));
			if (body)
				names_printed(body, h.type);
		}
		if (reply)
			break;
	}
	free(pkt);
	return 0;
}
