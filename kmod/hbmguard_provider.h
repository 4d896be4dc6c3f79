/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface hbmguard.ko offers GPU drivers: register a device, report
 * errors at offsets in it.  A driver links against these symbols (GPL) or
 * finds them with symbol_get() to stay loadable without hbmguard.
 */
#ifndef HBMGUARD_PROVIDER_H
#define HBMGUARD_PROVIDER_H

#include <linux/types.h>

struct hbm_device;
struct module;

/**
 * struct hbmguard_provider_device - a device as a GPU driver describes it
 * @name: short name, [A-Za-z0-9_.:-]+, unique ("gpu0")
 * @identity: stable identity, unique (PCI address or UUID); persistent
 *	state is keyed by it
 * @hbm_size: bytes of HBM, a multiple of @page_size, spare area included
 * @page_size: retirement granule, a power of two from 4 KiB to 2 MiB
 * @spare_pages: pages at the top reserved for bypass; 0: one per 100 MiB
 * @owner: THIS_MODULE, as a file_operations' owner: a device its driver
 *	leaves registered when it unloads is unregistered for it (and said);
 *	NULL: none is
 */
struct hbmguard_provider_device {
	const char *name;
	const char *identity;
	u64 hbm_size;
	u32 page_size;
	u32 spare_pages;
	struct module *owner;
};

struct hbm_device *hbmguard_register_device(const struct hbmguard_provider_device *desc);
void hbmguard_unregister_device(struct hbm_device *dev);
int hbmguard_report_error(struct hbm_device *dev, u64 offset, u32 kind, u32 count);
void hbmguard_report_device_error(struct hbm_device *dev, u32 code);

#endif /* HBMGUARD_PROVIDER_H */
