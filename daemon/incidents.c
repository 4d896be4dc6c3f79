// SPDX-License-Identifier: GPL-2.0
/*
 * The incidents file format (incidents.h).  Pure functions over a buffer, so
 * that the unit tests can damage a file every way there is.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "incidents.h"
#include "state.h"

size_t hbm_incidents_encode_size(size_t nr)
{
	return HBM_INCIDENTS_HEADER + nr * HBM_INCIDENTS_RECORD;
}

void hbm_incidents_encode_header(uint8_t *buf, size_t nr)
{
	uint32_t version = HBM_INCIDENTS_VERSION, count = nr;

	memcpy(buf, HBM_INCIDENTS_MAGIC, 8);
	memcpy(buf + 8, &version, 4);
	memcpy(buf + 12, &count, 4);
}

void hbm_incidents_encode_record(uint8_t *buf, size_t i, const struct hbm_ctl_incident *in)
{
	uint8_t *p = buf + hbm_incidents_encode_size(i);
	struct hbm_ctl_incident x = *in;
	uint32_t crc, zero = 0;

	x.index = x.total = 0;
	crc = hbm_crc32c(0, &x, sizeof(x));
	memcpy(p, &x, sizeof(x));
	memcpy(p + sizeof(x), &crc, 4);
	memcpy(p + sizeof(x) + 4, &zero, 4);
}

/*
 * A reason as the journal and hbmctl show it: NUL-terminated, printable
 * ASCII.  Job and device names follow the protocol's stricter rule, or
 * hbmctl would refuse the daemon's reply that carries them.
 */
static bool text_ok(const char *s, size_t size, bool empty_ok)
{
	size_t i;

	for (i = 0; i < size && s[i]; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return i < size && (empty_ok || i);
}

/* A record that checks out, newer than @prev_id. */
static bool record_ok(const uint8_t *p, uint64_t prev_id, struct hbm_ctl_incident *x)
{
	uint32_t crc, reserved;

	memcpy(x, p, sizeof(*x));
	memcpy(&crc, p + sizeof(*x), 4);
	memcpy(&reserved, p + sizeof(*x) + 4, 4);
	if (crc != hbm_crc32c(0, x, sizeof(*x)) || reserved)
		return false;
	return x->id > prev_id && !x->index && !x->total &&
	       hbm_ctl_name_valid(x->job, sizeof(x->job)) &&
	       hbm_ctl_name_valid(x->device, sizeof(x->device)) &&
	       text_ok(x->reason, sizeof(x->reason), true) &&
	       x->state >= HBM_INCIDENT_DETECTED && x->state < __HBM_INCIDENT_MAX &&
	       x->at[HBM_INCIDENT_DETECTED] && x->at[x->state] &&
	       x->length && x->offset + x->length > x->offset;
}

/**
 * hbm_incidents_decode() - what an incidents file holds that can be trusted
 * @buf: the file
 * @len: its length
 * @out: room for @max incidents
 * @max: how many to keep: the newest
 * @nr: how many were kept
 * @damage: what was wrong
 *
 * Return: 0, with the good records in @out and the bad counted in @damage
 * (the file was whole when every @damage field is 0); -EBADMSG when the
 * header is not to be trusted (@damage->header says why, @nr is 0).
 */
int hbm_incidents_decode(const uint8_t *buf, size_t len, struct hbm_ctl_incident *out,
			 size_t max, size_t *nr, struct hbm_incidents_damage *damage)
{
	uint32_t version, count;
	uint64_t prev_id = 0;
	size_t present, i;

	memset(damage, 0, sizeof(*damage));
	*nr = 0;
	if (len < HBM_INCIDENTS_HEADER)
		damage->header = "shorter than a header";
	else if (memcmp(buf, HBM_INCIDENTS_MAGIC, 8))
		damage->header = "not an hbmguard incidents file";
	if (damage->header)
		return -EBADMSG;
	memcpy(&version, buf + 8, 4);
	memcpy(&count, buf + 12, 4);
	present = (len - HBM_INCIDENTS_HEADER) / HBM_INCIDENTS_RECORD;
	if (version != HBM_INCIDENTS_VERSION)
		damage->header = "unknown version";
	else if ((len - HBM_INCIDENTS_HEADER) % HBM_INCIDENTS_RECORD || present > count)
		damage->header = "its size does not match its count";
	if (damage->header)
		return -EBADMSG;
	damage->missing_records = count - present;
	for (i = 0; i < present; i++) {
		struct hbm_ctl_incident x;

		if (!record_ok(buf + hbm_incidents_encode_size(i), prev_id, &x)) {
			damage->bad_records++;
			continue;
		}
		prev_id = x.id;
		if (!max)
			continue;
		if (*nr == max) {	/* the oldest kept makes room */
			memmove(out, out + 1, (max - 1) * sizeof(*out));
			(*nr)--;
		}
		out[(*nr)++] = x;
	}
	return 0;
}

/* An incident's phases, in seconds: 0.01 s (a rank answering at once) to 10 min. */
const double incident_phase_bounds[METRICS_PHASE_BUCKETS - 1] = {
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
};

/* Which incident state ended its phase @st: the next one it reached. */
static size_t next_state(const struct hbm_ctl_incident *in, size_t st)
{
	for (st++; st < __HBM_INCIDENT_MAX; st++)
		if (in->at[st])
			return st;
	return 0;
}

/**
 * metrics_incident_ended() - count an incident that has just ended
 * @t: the daemon's totals
 * @in: the incident, resumed or escalated (anything else is not counted)
 * @timed: its phases go into the histogram
 *
 * Counted once, as it ends (recovery.c), rather than read from the kept
 * history at each scrape: the history forgets its oldest past
 * HBM_INCIDENTS_KEPT, and a count read from it would go down, which
 * Prometheus takes for a counter's reset (rate() would add the whole
 * count again).  An incident open when the daemon restarted is escalated by
 * the new one (recovery_load()) and counted there, once, with @timed
 * false: the phase it was in would end at the new daemon's start, its
 * span the time no daemon ran, which is no phase's duration.
 */
void metrics_incident_ended(struct metrics_incidents *t, const struct hbm_ctl_incident *in,
			    bool timed)
{
	size_t o, st, next, i;

	if (in->state != HBM_INCIDENT_RESUMED && in->state != HBM_INCIDENT_ESCALATED)
		return;
	o = in->state == HBM_INCIDENT_ESCALATED;
	t->ended[o]++;
	if (!timed)
		return;
	for (st = HBM_INCIDENT_DETECTED; st < HBM_INCIDENT_RESUMED; st++) {
		struct metrics_phase *p = &t->phase[st][o];
		double v;

		next = next_state(in, st);
		/* The times are the wall clock's (recovery.c): a span it was stepped back in is no duration. */
		if (!in->at[st] || !next || in->at[next] < in->at[st])
			continue;
		v = (in->at[next] - in->at[st]) / 1e6;
		for (i = 0; i + 1 < METRICS_PHASE_BUCKETS && v > incident_phase_bounds[i]; i++)
			;
		p->bucket[i]++;
		p->sum += v;
	}
}
