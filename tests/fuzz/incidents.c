// SPDX-License-Identifier: GPL-2.0
/*
 * The incidents file of the state directory (incidents.h), damaged any way:
 * hbm_incidents_decode() as recovery.c's load() calls it.  The input's
 * first byte says what to make whole before the decode, so that the
 * fuzzer reaches the checks behind the header and the CRCs:
 *
 *	bit 0	each record's CRC made that of its incident
 *	bit 1	the header made good: magic, version, and a count of the
 *		records present and bits 2-3 more (cut off)
 *
 * the second byte the room (incidents kept, the newest), the rest the file.
 *
 * What load() relies on: at most the room's incidents, the newest good
 * ones, oldest first (ids rising), each one hbmctl can print and a
 * recovery can take (names by the protocol's rule, a reason printable and
 * NUL-terminated, a state and its time, an extent that does not wrap),
 * each a record of the file as it was; a good record is never counted
 * bad; the damage counted; on a bad header, nothing kept.  And what it
 * kept, written again (recovery.c's save), reads back the same and whole.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>

#include "incidents.h"
#include "state.h"
#include "fuzz.h"

#define CANARY	0x5a
#define ROOM	(64 + 8)	/* HBM_INCIDENTS_KEPT and more */

static struct hbm_ctl_incident out[ROOM], before[ROOM];

static void incident_ok(const struct hbm_ctl_incident *x)
{
	size_t i;

	assert(!x->index && !x->total && x->id);
	assert(hbm_ctl_name_valid(x->job, sizeof(x->job)));
	assert(hbm_ctl_name_valid(x->device, sizeof(x->device)));
	assert(memchr(x->reason, '\0', sizeof(x->reason)));
	for (i = 0; x->reason[i]; i++)
		assert(x->reason[i] >= 0x20 && x->reason[i] <= 0x7e);
	assert(x->state >= HBM_INCIDENT_DETECTED && x->state < __HBM_INCIDENT_MAX);
	assert(x->at[HBM_INCIDENT_DETECTED] && x->at[x->state]);
	assert(x->length && x->offset + x->length > x->offset);
}

/* Whether @x is, byte for byte, one of the file's records. */
static bool in_file(const uint8_t *buf, size_t present, const struct hbm_ctl_incident *x)
{
	size_t i;

	for (i = 0; i < present; i++)
		if (!memcmp(buf + hbm_incidents_encode_size(i), x, sizeof(*x)))
			return true;
	return false;
}

static int decode(const uint8_t *file, size_t len, struct hbm_ctl_incident *into,
		  size_t max, size_t *nr, struct hbm_incidents_damage *d)
{
	uint8_t *buf = malloc(len ? len : 1);	/* of its own: ASan sees a read past it */
	int err;

	if (!buf)
		abort();
	memcpy(buf, file, len);
	err = hbm_incidents_decode(buf, len, into, max, nr, d);
	free(buf);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t how = fuzz_u8(&in);
	size_t max = fuzz_u8(&in) % ROOM, len, present, nr = 777, nr_all, nr_again, i;
	struct hbm_incidents_damage d, d_all, d_again;
	struct hbm_ctl_incident *all, *again;
	uint8_t *buf = (uint8_t *)fuzz_rest(&in, &len), *file;
	uint32_t count;
	int err;

	present = len < HBM_INCIDENTS_HEADER ? 0 :
		  (len - HBM_INCIDENTS_HEADER) / HBM_INCIDENTS_RECORD;
	if (how & 1) {
		for (i = 0; i < present; i++) {
			uint8_t *p = buf + hbm_incidents_encode_size(i);
			uint32_t crc = hbm_crc32c(0, p, sizeof(struct hbm_ctl_incident));

			memcpy(p + sizeof(struct hbm_ctl_incident), &crc, 4);
		}
	}
	if (how & 2 && len >= HBM_INCIDENTS_HEADER) {
		len = hbm_incidents_encode_size(present);
		hbm_incidents_encode_header(buf, present + (how >> 2 & 3));
	}

	memset(out, CANARY, sizeof(out));
	memcpy(before, out, sizeof(out));
	err = decode(buf, len, out, max, &nr, &d);
	if (err) {
		assert(err == -EBADMSG);
		assert(d.header && nr == 0);
		assert(!memcmp(out, before, sizeof(out)));
		goto done;
	}
	assert(!d.header);
	assert(len >= HBM_INCIDENTS_HEADER);
	assert((len - HBM_INCIDENTS_HEADER) % HBM_INCIDENTS_RECORD == 0);
	assert(present == (len - HBM_INCIDENTS_HEADER) / HBM_INCIDENTS_RECORD);
	memcpy(&count, buf + 12, 4);
	assert(count >= present && d.missing_records == count - present);
	assert(d.bad_records <= present);
	assert(nr <= max && nr <= present - d.bad_records);
	assert(!memcmp(out + nr, before + nr, (ROOM - nr) * sizeof(out[0])));
	for (i = 0; i < nr; i++) {
		incident_ok(&out[i]);
		assert(in_file(buf, present, &out[i]));
		assert(!i || out[i].id > out[i - 1].id);
	}

	/* With room for every record: the good ones, of which the above kept the newest. */
	all = malloc((present + 1) * sizeof(*all));
	again = malloc((present + 1) * sizeof(*again));
	if (!all || !again)
		abort();
	err = decode(buf, len, all, present, &nr_all, &d_all);
	assert(!err && nr_all == present - d_all.bad_records);
	assert(d_all.bad_records == d.bad_records && d_all.missing_records == d.missing_records);
	assert(nr == (nr_all < max ? nr_all : max));
	assert(!memcmp(out, all + nr_all - nr, nr * sizeof(out[0])));

	/* Written again as recovery.c saves them: whole, the same. */
	file = calloc(1, hbm_incidents_encode_size(nr_all));
	if (!file)
		abort();
	hbm_incidents_encode_header(file, nr_all);
	for (i = 0; i < nr_all; i++)
		hbm_incidents_encode_record(file, i, &all[i]);
	err = decode(file, hbm_incidents_encode_size(nr_all), again, nr_all, &nr_again, &d_again);
	assert(!err && nr_again == nr_all);
	assert(!d_again.bad_records && !d_again.missing_records && !d_again.header);
	assert(!memcmp(again, all, nr_all * sizeof(all[0])));
	free(file);
	free(again);
	free(all);
done:
	free(buf);
	return 0;
}
