// SPDX-License-Identifier: GPL-2.0
/*
 * Module events as journal entries (journal.h).  Priorities follow what an
 * operator must do: a lost page of data is an error, a page bypassed before
 * it failed a warning, a device to send back critical.
 *
 * Also a sink of hbmguardd's core (hbm_journal_fact()): one entry per
 * event a source heard, to the journal or, without one, to stderr.  It
 * must not block (sd_journal_sendv() is one datagram), allocates nothing,
 * and calls nothing but the journal.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <linux/hbmguard.h>

#include "core.h"
#include "journal.h"

static const char *const sources[] = {
	[HBMGUARD_SOURCE_NONE] = "none", [HBMGUARD_SOURCE_UE] = "ue",
	[HBMGUARD_SOURCE_CE_THRESHOLD] = "ce-threshold",
	[HBMGUARD_SOURCE_POISON] = "poison", [HBMGUARD_SOURCE_ADMIN] = "admin",
	[HBMGUARD_SOURCE_RESTORED] = "restored", [HBMGUARD_SOURCE_DRIVER] = "driver",
};
static const char *const healths[] = {
	[HBMGUARD_HEALTH_OK] = "ok", [HBMGUARD_HEALTH_DEGRADED] = "degraded",
	[HBMGUARD_HEALTH_RMA] = "rma", [HBMGUARD_HEALTH_RESET_REQUIRED] = "reset-required",
};
#define NR_HEALTHS (sizeof(healths) / sizeof(healths[0]))
static const char *const kinds[] = { "?", "correctable", "uncorrectable", "poison" };

const char *hbm_journal_source_name(uint32_t source)
{
	return source < sizeof(sources) / sizeof(sources[0]) ? sources[source] : "?";
}

#define ID_ERROR	"e0b864666f4249d4802621cef30eff56"
#define ID_RETIRED	"f0f62b7532f845fdbddd739c151d2a8e"
#define ID_PENDING	"769d101019bd4609be1bbc4134cdd054"
#define ID_FAILED	"13b2ab3b6b1a4d6081d293e76da7ba80"
#define ID_CLEARED	"0d8dc96f2c5d45bfbb24954085c406f8"
#define ID_HEALTH	"3f807bcd56eb46069223ed7542a677a7"
#define ID_POLICY	"f5429e2dddec4fcbb7d7ce9f4773f7ca"
#define ID_ADDED	"84ecff02990047f5972fb2f2532c20fd"
#define ID_REMOVED	"2f8cbdc5a1b74dd88b270bd2f88ba1eb"
#define ID_LOST		"5af0be58c6d345f193055676d28ee595"
#define ID_DEVICE_ERROR	"09b4885a1b09471ab1d74e68df0da658"
#define ID_RESTORED	"263def5f9a8d4310b72d22643ee3e16a"

/**
 * hbm_journal_describe() - the journal entry of an event
 * @ev: the event
 * @identity: its device's identity
 * @out: the entry
 *
 * Return: 0, or -1 for an event type this daemon does not know (logged by
 * the caller as such, never dropped silently).
 */
/*
 * A page event's pages lost their data by the change itself: said, as an
 * error.  The memory that held it failed (the spare that served them, or
 * their own frame while they were FAILED), or the change could not move it
 * (a copy that failed, a page taken off a frame an error took:
 * uapi/linux/hbmguard.h, PAGE STATES), the entries before say which;
 * failed, no spare serves them now; cleared, they are back in service.
 */
static void said_lost(const struct hbm_event_view *ev, struct hbm_journal_entry *out)
{
	size_t n = strlen(out->message);

	if (!(ev->aux & HBMGUARD_PAGES_DATA_LOST))
		return;
	out->priority = LOG_ERR;
	snprintf(out->message + n, sizeof(out->message) - n, "; data lost%s",
		 ev->type == HBMGUARD_EVENT_FAILED ? "" :
		 ev->type == HBMGUARD_EVENT_CLEARED ? ": it could not be copied home" :
		 ": its memory failed, or it could not be moved");
}

int hbm_journal_describe(const struct hbm_event_view *ev, const char *identity,
			 struct hbm_journal_entry *out)
{
	const char *src = hbm_journal_source_name(ev->source);
	unsigned long long off = ev->offset, len = ev->length;

	switch (ev->type) {
	case HBMGUARD_EVENT_ERROR:
		out->message_id = ID_ERROR;
		out->priority = ev->state == HBMGUARD_ERROR_CE ? LOG_NOTICE : LOG_ERR;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u %s error%s at 0x%llx",
			 identity, ev->count, ev->state < 4 ? kinds[ev->state] : "?",
			 ev->count == 1 ? "" : "s", off);
		if (!len)	/* a driver's report without an address (NVML's ECC events) */
			snprintf(out->message, sizeof(out->message), "%s: %u %s error%s",
				 identity, ev->count, ev->state < 4 ? kinds[ev->state] : "?",
				 ev->count == 1 ? "" : "s");
		return 0;
	case HBMGUARD_EVENT_RETIRED:
		out->message_id = ID_RETIRED;
		out->priority = ev->source == HBMGUARD_SOURCE_RESTORED ? LOG_INFO : LOG_WARNING;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u page%s retired in 0x%llx+0x%llx (%s)", identity,
			 ev->count, ev->count == 1 ? "" : "s", off, len, src);
		said_lost(ev, out);
		return 0;
	case HBMGUARD_EVENT_PENDING:
		out->message_id = ID_PENDING;
		out->priority = LOG_WARNING;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u page%s pending retirement in 0x%llx+0x%llx (%s)",
			 identity, ev->count, ev->count == 1 ? "" : "s", off, len, src);
		return 0;
	case HBMGUARD_EVENT_FAILED:
		out->message_id = ID_FAILED;
		out->priority = LOG_ERR;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u page%s could not be bypassed in 0x%llx+0x%llx: no spare left",
			 identity, ev->count, ev->count == 1 ? "" : "s", off, len);
		said_lost(ev, out);
		return 0;
	case HBMGUARD_EVENT_CLEARED:
		out->message_id = ID_CLEARED;
		out->priority = LOG_NOTICE;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u page%s cleared from the table in 0x%llx+0x%llx",
			 identity, ev->count, ev->count == 1 ? "" : "s", off, len);
		said_lost(ev, out);
		return 0;
	case HBMGUARD_EVENT_HEALTH:
		out->message_id = ID_HEALTH;
		/* A GPU waiting for a reset needs an operator, as a degraded one. */
		out->priority = ev->state == HBMGUARD_HEALTH_RMA ? LOG_CRIT :
				ev->state == HBMGUARD_HEALTH_DEGRADED ||
				ev->state == HBMGUARD_HEALTH_RESET_REQUIRED ? LOG_WARNING :
				LOG_NOTICE;
		snprintf(out->message, sizeof(out->message),
			 "%s: health %s -> %s, %u bad pages", identity,
			 ev->aux < NR_HEALTHS ? healths[ev->aux] : "?",
			 ev->state < NR_HEALTHS ? healths[ev->state] : "?", ev->count);
		return 0;
	case HBMGUARD_EVENT_POLICY:
		out->message_id = ID_POLICY;
		out->priority = LOG_NOTICE;
		snprintf(out->message, sizeof(out->message), "%s: policy changed", identity);
		return 0;
	case HBMGUARD_EVENT_DEVICE_ADDED:
		out->message_id = ID_ADDED;
		out->priority = LOG_INFO;
		snprintf(out->message, sizeof(out->message), "%s: device added", identity);
		return 0;
	case HBMGUARD_EVENT_DEVICE_REMOVED:
		out->message_id = ID_REMOVED;
		out->priority = LOG_INFO;
		snprintf(out->message, sizeof(out->message), "%s: device removed", identity);
		return 0;
	case HBMGUARD_EVENT_DROPPED:
	case HBMGUARD_EVENT_OVERFLOW:
		out->message_id = ID_LOST;
		out->priority = LOG_WARNING;
		snprintf(out->message, sizeof(out->message),
			 "%u events lost: tables read again", ev->count);
		return 0;
	case HBMGUARD_EVENT_RESTORED:
		out->message_id = ID_RESTORED;
		out->priority = LOG_INFO;
		snprintf(out->message, sizeof(out->message),
			 "%s: %u page%s known bad from before restored (%u extent%s)",
			 identity, ev->count, ev->count == 1 ? "" : "s", ev->aux,
			 ev->aux == 1 ? "" : "s");
		return 0;
	case HBMGUARD_EVENT_DEVICE_ERROR:
		out->message_id = ID_DEVICE_ERROR;
		out->priority = LOG_ERR;
		snprintf(out->message, sizeof(out->message), "%s: Xid %u", identity,
			 ev->state);
		return 0;
	}
	return -1;
}

/* The fields of an entry, formatted on the stack: the sink allocates nothing. */
struct journal_fields {
	struct iovec iov[12];
	char text[12][sizeof(((struct hbm_journal_entry *)0)->message) + 32];
	int n;
};

static void __attribute__((format(printf, 2, 3)))
journal_field(struct journal_fields *j, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (j->n == (int)(sizeof(j->iov) / sizeof(j->iov[0])))
		return;
	va_start(ap, fmt);
	len = vsnprintf(j->text[j->n], sizeof(j->text[j->n]), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(j->text[j->n]))
		len = sizeof(j->text[j->n]) - 1;
	j->iov[j->n] = (struct iovec){ .iov_base = j->text[j->n], .iov_len = len };
	j->n++;
}

static void journal_send_event(const struct hbm_journal_entry *e,
			       const struct hbm_event_view *ev, const char *identity,
			       const struct hbm_fact *f)
{
	struct journal_fields j = { .n = 0 };

	journal_field(&j, "MESSAGE=%s", e->message);
	journal_field(&j, "MESSAGE_ID=%s", e->message_id);
	journal_field(&j, "PRIORITY=%d", e->priority);
	journal_field(&j, "HBMGUARD_DEVICE=%u", ev->device);
	journal_field(&j, "HBMGUARD_IDENTITY=%s", identity);
	/* A RESTORED event stands for many extents: it has no range of its own. */
	if (ev->length) {
		journal_field(&j, "HBMGUARD_OFFSET=0x%llx", (unsigned long long)ev->offset);
		journal_field(&j, "HBMGUARD_LENGTH=0x%llx", (unsigned long long)ev->length);
	}
	journal_field(&j, "HBMGUARD_SOURCE=%s", hbm_journal_source_name(ev->source));
	journal_field(&j, "HBMGUARD_COUNT=%u", ev->count);
	journal_field(&j, "HBMGUARD_HEARD_BY=%s", f->path[0] ? f->path : "?");
	/*
	 * Whose numbering: the module's, or the kernel log's; none for a
	 * source that numbers nothing (NVML, amdgpu), whose 0 would read as
	 * a number.
	 */
	if (f->origin == HBM_FROM_KERNEL)
		journal_field(&j, "HBMGUARD_SEQNUM=%llu", (unsigned long long)ev->seqnum);
	else if (ev->seqnum)
		journal_field(&j, "HBMGUARD_HEARD_SEQNUM=%llu", (unsigned long long)ev->seqnum);
	sd_journal_sendv(j.iov, j.n);
}

/**
 * hbm_journal_fact() - the journal as a sink of the core
 * @journald: a bool: whether a journal is there to send entries to
 * @f: the fact
 *
 * One structured journal entry per event heard; journalctl -x explains it.
 * What was read from a table unheard, or is no event, is no entry.
 */
void hbm_journal_fact(void *journald, const struct hbm_fact *f)
{
	struct hbm_event_view ev = {
		.type = f->event,
		.seqnum = f->seqnum,
		.device = f->dev.id,
		.offset = f->offset,
		.length = f->length,
		.source = f->source,
		.state = f->state,
		.count = f->count,
		.aux = f->aux,
	};
	const char *identity = f->dev.identity[0] ? f->dev.identity : "?";
	struct hbm_journal_entry e;

	if (!f->event || (f->flags & HBM_FACT_UNHEARD))
		return;
	if (hbm_journal_describe(&ev, identity, &e)) {
		fprintf(stderr, "<4>hbmguardd: event #%llu of unknown type %u\n",
			(unsigned long long)ev.seqnum, ev.type);
		return;
	}
	if (f->type == HBM_FACT_ERROR && f->xid) {	/* what it means, who heard it */
		e.priority = f->severity == HBM_SEVERITY_UE ? LOG_ERR : LOG_WARNING;
		snprintf(e.message, sizeof(e.message), "%s: Xid %u: %s (%s)", identity,
			 f->xid, f->text[0] ? f->text : "?", f->path[0] ? f->path : "?");
	}
	if (!*(const bool *)journald)
		fprintf(stderr, "<%d>hbmguardd: %s\n", e.priority, e.message);
	else
		journal_send_event(&e, &ev, identity, f);
}
