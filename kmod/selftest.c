// SPDX-License-Identifier: GPL-2.0
/*
 * In-module selftests, for what no test from userspace can make happen at
 * will.  Built only with HBMGUARD_DEBUG=y (the debug kernel's build, tier
 * 2), run at load with selftest=1; a failure fails the load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/sched/task.h>

#include "hbm.h"
#include "hbmguard_provider.h"

static bool run_selftests;
module_param_named(selftest, run_selftests, bool, 0444);
MODULE_PARM_DESC(selftest, "Run the in-module selftests at load (debug builds only)");

static unsigned int fail_load;
module_param(fail_load, uint, 0444);
MODULE_PARM_DESC(fail_load, "Fail the load 200 ms after both device nodes (1) or the main one (2) were registered, before the netlink family (debug builds only)");

/**
 * hbm_selftest_fail_load() - fail the module's init at @step, if asked
 * @step: 1 once both device nodes are registered, 2 once the main one is;
 *	the netlink family is not yet
 *
 * For the tests of what the module refuses while its init may still fail
 * (hbm_module_live()): the 200 ms before the failure are the window their
 * opens land in.
 *
 * Return: 0, or -ECANCELED at fail_load's step.
 */
int hbm_selftest_fail_load(unsigned int step)
{
	if (fail_load != step)
		return 0;
	msleep(200);
	pr_info("selftest: the load fails at step %u, as fail_load asks\n", step);
	return -ECANCELED;
}

static unsigned int hold_command;
module_param(hold_command, uint, 0600);
MODULE_PARM_DESC(hold_command, "Hold each netlink command of this number (HBMGUARD_CMD_*) until it is set to another, 10 s at most (debug builds only)");

static bool command_held;
module_param(command_held, bool, 0444);
MODULE_PARM_DESC(command_held, "A netlink command is held by hold_command now, for a test that holds one at a time (debug builds only)");

/**
 * hbm_selftest_command() - hold a netlink command, if asked
 * @cmd: its number, past its capability check
 *
 * For the test that no command of ours holds a lock of every generic
 * netlink family (the family's parallel_ops): another family's request
 * answered while one of ours is held here, command_held telling the test
 * it is.
 */
void hbm_selftest_command(u8 cmd)
{
	unsigned int waited;

	if (READ_ONCE(hold_command) != cmd)
		return;
	WRITE_ONCE(command_held, true);
	for (waited = 0; READ_ONCE(hold_command) == cmd && waited < 10000; waited += 20)
		msleep(20);
	WRITE_ONCE(command_held, false);
}

/* A device's lock held by a thread of its own, as by a long change. */
struct holder {
	struct hbm_device *dev;
	struct completion held, release, done;
};

/* Each thread ends by kthread_complete_and_exit(): no code of ours after it. */
static int hold_lock(void *arg)
{
	struct holder *h = arg;

	mutex_lock(&h->dev->lock);
	complete(&h->held);
	wait_for_completion(&h->release);
	mutex_unlock(&h->dev->lock);
	kthread_complete_and_exit(&h->done, 0);
}

struct removal {
	u32 id;
	int err;
	struct completion done;
};

static int remove_device(void *arg)
{
	struct removal *r = arg;

	r->err = hbm_device_destroy(r->id, HBMGUARD_KIND_SIMULATED);
	kthread_complete_and_exit(&r->done, 0);
}

/* A simulated device of 16 MiB named @name, its id in @id, held: or an ERR_PTR. */
static struct hbm_device *sim_new(const char *name, u32 *id)
{
	struct hbm_device_spec spec = {
		.kind = HBMGUARD_KIND_SIMULATED,
		.page_size = 4096,
		.hbm_size = 16 << 20,
		.name = name,
	};
	struct hbm_device *dev = hbm_device_create(&spec);

	if (!IS_ERR(dev))
		*id = dev->id;
	return dev;
}

/* The same, held by the caller: NULL when it could not be made. */
static struct hbm_device *sim_held(const char *name, u32 *id)
{
	struct hbm_device *dev = sim_new(name, id);

	return IS_ERR(dev) ? NULL : dev;
}

/* The same, not held: 0 or an errno. */
static int sim_create(const char *name, u32 *id)
{
	struct hbm_device *dev = sim_new(name, id);

	if (IS_ERR(dev))
		return PTR_ERR(dev);
	hbm_device_put(dev);
	return 0;
}

/*
 * A device registered while another's removal waits for that one's lock
 * must not get its id: the waiting device's DEVICE_REMOVED, still to come,
 * would be taken for the new device's.  Each lock is taken by a thread of
 * its own, as in use (one thread holding two devices' locks would be
 * lockdep's recursion).
 */
static bool selftest_id_reuse(void)
{
	struct holder h = {};
	struct removal r = {};
	struct task_struct *t;
	u32 other = U32_MAX;
	bool ok = false, waited = false;
	int i, asleep = 0;

	h.dev = sim_held("selftest-removed", &r.id);
	if (!h.dev)
		return false;
	init_completion(&h.held);
	init_completion(&h.release);
	init_completion(&h.done);
	init_completion(&r.done);
	t = kthread_run(hold_lock, &h, "hbm-selftest-hold");
	if (IS_ERR(t))
		goto out;
	wait_for_completion(&h.held);
	t = kthread_create(remove_device, &r, "hbm-selftest-remove");
	if (!IS_ERR(t)) {
		get_task_struct(t);	/* before it runs: it may end at once */
		wake_up_process(t);
		/*
		 * The removal waits for the lock (it cannot end before the
		 * release): asleep on it, seen twice 10 ms apart, not a
		 * moment of waking or parking.
		 */
		for (i = 0; i < 200 && asleep < 2; i++) {
			msleep(10);
			asleep = READ_ONCE(t->__state) == TASK_UNINTERRUPTIBLE ? asleep + 1 : 0;
		}
		waited = asleep == 2 && !completion_done(&r.done);
		put_task_struct(t);
		if (waited && !sim_create("selftest-added", &other))
			ok = other != r.id;
	}
	complete(&h.release);
	wait_for_completion(&h.done);
	if (!IS_ERR(t)) {
		wait_for_completion(&r.done);
		ok = ok && !r.err;
	}
	if (!ok)
		pr_err("selftest: id reuse: device %u removed (%d, %s), device %u registered meanwhile\n",
		       r.id, r.err, waited ? "waited" : "never waited", other);
out:
	if (other != U32_MAX)
		hbm_device_destroy(other, HBMGUARD_KIND_SIMULATED);
	hbm_device_destroy(r.id, HBMGUARD_KIND_SIMULATED);	/* if not yet */
	hbm_device_put(h.dev);
	return ok;
}

/* Where hbm_device_remove() of one device waits, between the registry and its DEVICE_REMOVED. */
struct removal_pause {
	struct hbm_device *dev;
	struct completion reached, release;
};

static struct removal_pause *removal_pause;

void hbm_selftest_removing(struct hbm_device *dev)
{
	struct removal_pause *p = READ_ONCE(removal_pause);

	if (p && p->dev == dev) {
		complete(&p->reached);
		wait_for_completion(&p->release);
	}
}

/*
 * A device out of the registry whose DEVICE_REMOVED is not out yet: found
 * by no lookup (a listener told it gone must not find it after), its id
 * given to no other, its name still taken (its listeners know it alive).
 */
static bool selftest_leaving(void)
{
	struct removal_pause pause = {};
	struct removal r = {};
	struct hbm_device *found = NULL;
	struct task_struct *t;
	u32 same = U32_MAX, other = U32_MAX;
	bool ok = false;
	int err = 0;

	pause.dev = sim_held("selftest-leaving", &r.id);
	if (!pause.dev)
		return false;
	init_completion(&pause.reached);
	init_completion(&pause.release);
	init_completion(&r.done);
	WRITE_ONCE(removal_pause, &pause);
	t = kthread_run(remove_device, &r, "hbm-selftest-leave");
	if (IS_ERR(t))
		goto out;
	if (wait_for_completion_timeout(&pause.reached, 10 * HZ)) {
		found = hbm_device_get(r.id);
		if (found)
			hbm_device_put(found);
		err = sim_create("selftest-leaving", &same);
		if (!sim_create("selftest-other", &other))
			ok = !found && err == -EEXIST && other != r.id;
	}
	WRITE_ONCE(removal_pause, NULL);
	complete(&pause.release);
	wait_for_completion(&r.done);
	ok = ok && !r.err;
	if (!ok)
		pr_err("selftest: leaving: device %u %s, its name %d, another's id %u\n",
		       r.id, found ? "found" : "not found", err, other);
out:
	WRITE_ONCE(removal_pause, NULL);
	if (same != U32_MAX)
		hbm_device_destroy(same, HBMGUARD_KIND_SIMULATED);
	if (other != U32_MAX)
		hbm_device_destroy(other, HBMGUARD_KIND_SIMULATED);
	hbm_device_destroy(r.id, HBMGUARD_KIND_SIMULATED);	/* if not yet */
	hbm_device_put(pause.dev);
	return ok;
}

/*
 * A provider's unregistration removes the device it registered, not one
 * registered under the same id since: its device removed by someone else
 * first (hbm_device_destroy() by id, as at unload), a second provider's
 * device given that id stays, and the first's reference, the only one left
 * (no put lost, none too many), goes with its hbmguard_unregister_device().
 * Removing by the device's id, as this did before, took the second's.
 */
static bool selftest_remove_held(void)
{
	const struct hbmguard_provider_device first = {
		.name = "selftest-first", .identity = "selftest:first",
		.hbm_size = 16 << 20, .page_size = 4096,
	}, second = {
		.name = "selftest-second", .identity = "selftest:second",
		.hbm_size = 16 << 20, .page_size = 4096,
	};
	struct hbm_device *dev, *again = NULL, *found = NULL;
	unsigned int refs = 0;
	bool ok;
	u32 id;

	dev = hbmguard_register_device(&first);
	if (IS_ERR(dev))
		return false;
	id = dev->id;
	ok = !hbm_device_destroy(id, HBMGUARD_KIND_PROVIDER);
	if (ok)
		again = hbmguard_register_device(&second);
	if (IS_ERR(again))
		again = NULL;
	if (again) {
		refs = kref_read(&dev->ref);
		hbmguard_unregister_device(dev);
		dev = NULL;
		found = hbm_device_get(again->id);
	}
	/* the lowest free id is given: the same, or the test proves nothing */
	ok = ok && again && again->id == id && refs == 1 && found == again;
	if (!ok)
		pr_err("selftest: remove held: device %u, then %d, %u references, %s\n",
		       id, again ? (int)again->id : -1, refs,
		       again && found == again ? "the second kept" : "the second gone");
	if (found)
		hbm_device_put(found);
	if (again)
		hbmguard_unregister_device(again);
	if (dev)
		hbmguard_unregister_device(dev);
	return ok;
}

/**
 * hbm_selftests() - the in-module selftests, if asked for
 *
 * Return: 0, or -EIO when one failed.
 */
int hbm_selftests(void)
{
	if (!run_selftests)
		return 0;
	if (!selftest_id_reuse() || !selftest_leaving() || !selftest_remove_held())
		return -EIO;
	if (!hbm_nvidia_selftest()) {
		pr_err("selftest: the Xid ring's reserve for the Xids that lose data\n");
		return -EIO;
	}
	pr_info("selftests passed\n");
	return 0;
}
