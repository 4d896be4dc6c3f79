/* SPDX-License-Identifier: GPL-2.0 */
/* How hbmguardd stands (status.c): hbmctl status and sd_notify's STATUS=. */
#ifndef HBM_STATUS_H
#define HBM_STATUS_H

#include "ctl.h"

struct daemon;

void status_get(struct daemon *d, struct hbm_ctl_status *st);
void status_notify(struct daemon *d);

#endif /* HBM_STATUS_H */
