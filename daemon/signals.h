/* SPDX-License-Identifier: GPL-2.0 */
/* The daemon's signals (signals.c): reload, report, stop. */
#ifndef HBM_SIGNALS_H
#define HBM_SIGNALS_H

struct hbmguardd;

int signals_watch(struct hbmguardd *g);

#endif /* HBM_SIGNALS_H */
