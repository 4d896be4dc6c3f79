// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoints found by name.  The ones hbmguard probes are not exported to
 * modules (ras:memory_failure_event) or live in a module that may come and go
 * (nvidia:nvidia_dev_xid), so they are looked up among the kernel's or a
 * module's tracepoints, as LTTng does.
 */
#include <linux/module.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "hbm.h"

struct hbm_tp_lookup {
	const char *name;
	struct tracepoint *found;
};

static void hbm_tp_match(struct tracepoint *tp, void *priv)
{
	struct hbm_tp_lookup *l = priv;

	if (!l->found && !strcmp(tp->name, l->name))
		l->found = tp;
}

/**
 * hbm_kernel_tracepoint() - a tracepoint of the kernel itself, by name
 * @name: the event's name, without its system
 *
 * Return: the tracepoint, or NULL.
 */
struct tracepoint *hbm_kernel_tracepoint(const char *name)
{
	struct hbm_tp_lookup l = { .name = name };

	for_each_kernel_tracepoint(hbm_tp_match, &l);
	return l.found;
}

/**
 * hbm_module_tracepoint() - a tracepoint of a module, by name
 * @mod: the module, as a tracepoint module notifier passes it
 * @name: the event's name, without its system
 *
 * The kernel's own walk over one module (for_each_tracepoint_in_module()) is
 * neither in 6.1 nor exported in 6.12; a module's table is in struct module
 * in both.  Call it from the notifier, where @mod cannot go.
 *
 * Return: the tracepoint, or NULL.
 */
struct tracepoint *hbm_module_tracepoint(struct module *mod, const char *name)
{
	struct hbm_tp_lookup l = { .name = name };
	unsigned int i;

	for (i = 0; i < mod->num_tracepoints; i++)
		hbm_tp_match(tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]), &l);
	return l.found;
}
