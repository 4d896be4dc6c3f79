// SPDX-License-Identifier: GPL-2.0
/*
 * What a part of hbmguardd tells the daemon, or asks it, without knowing
 * who answers: recovery.c and store.c call these; main() wired who listens
 * (status.c for the status, store.c for the retry of the saves, scheduler.c
 * for an aborted incident).  So no
 * part calls back up into the one that wired it.
 *
 * Not linked into the unit tests, which stub these (check_recovery.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "core.h"
#include "daemon.h"

/**
 * daemon_notify_status() - something STATUS= shows has changed
 * @d: the daemon
 */
void daemon_notify_status(struct daemon *d)
{
	if (d->on_status)
		d->on_status(d);
}

/**
 * daemon_save_failed() - a state file did not reach the disk: try again
 * @d: the daemon
 */
void daemon_save_failed(struct daemon *d)
{
	if (d->on_save_failed)
		d->on_save_failed(d);
}

/**
 * daemon_incident_aborted() - an incident escalated: its ranks abort
 * @d: the daemon
 * @x: the incident
 */
void daemon_incident_aborted(struct daemon *d, const struct hbm_ctl_incident *x)
{
	if (d->on_aborted)
		d->on_aborted(d, x);
}

/**
 * daemon_bypassed() - whether the kernel serves pages from spares now
 * @d: the daemon
 * @identity: the device
 * @offset: the pages
 * @length: their length
 *
 * Return: 1 if every page of the range is RETIRED in the device's table, 0
 * if one is not, or the negative errno of reading the table.
 */
int daemon_bypassed(struct daemon *d, const char *identity, uint64_t offset, uint64_t length)
{
	return core_bypassed(d->core, identity, offset, length);
}

/**
 * daemon_device_known() - whether the module has a device of that identity
 * @d: the daemon
 * @identity: the device's
 *
 * Asked of the module itself (core_devices()), not of the last list the
 * core read: a device added since is known.
 *
 * Return: 0 if it has; -ENODEV if it has none, or the negative errno of
 * asking.
 */
int daemon_device_known(struct daemon *d, const char *identity)
{
	struct device dev;

	return core_device(d->core, identity, &dev);
}
