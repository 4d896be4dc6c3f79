/* SPDX-License-Identifier: GPL-2.0 */
/* The shape check's fixture: a shared header with an object in it. */
struct kernel_ops {
	void (*start)(void);
};

extern const struct kernel_ops kernel_ops;
void daemon_apply(void);
