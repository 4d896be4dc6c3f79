// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration parser (config.h).  It parses into a copy and only a
 * whole, valid file replaces the caller's configuration, so a bad reload
 * keeps the old one.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl.h"

#define CE_THRESHOLD_MAX	65535
#define CE_WINDOW_MAX		(365 * 86400)

void hbm_config_defaults(struct hbm_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->state_dir, "/var/lib/hbmguard");
	strcpy(c->control_socket, HBM_CTL_SOCKET);
	c->recovery.pause_timeout = 30;
	c->recovery.restore_timeout = 120;
	c->recovery.kill_timeout = 10;
}

struct parser {
	const char *file;
	unsigned int line;
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, const char *key, const char *fmt, ...)
{
	size_t n = snprintf(p->err, p->errlen, "%s:%u: ", p->file, p->line);
	va_list ap;

	if (key && n < p->errlen)
		n += snprintf(p->err + n, p->errlen - n, "%s: ", key);
	va_start(ap, fmt);
	if (n < p->errlen)
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	return s;
}

/* A whole number in [min, max], optionally with a time unit. */
static int number(struct parser *p, const char *key, const char *v, bool time,
		  uint64_t min, uint64_t max, uint32_t *out)
{
	unsigned long long n, mult = 1;
	char *end;

	if (!isdigit((unsigned char)*v))
		return fail(p, key, "'%s' is not a number", v);
	errno = 0;
	n = strtoull(v, &end, 10);
	if (time && *end) {
		if (!strcmp(end, "s"))
			mult = 1;
		else if (!strcmp(end, "m"))
			mult = 60;
		else if (!strcmp(end, "h"))
			mult = 3600;
		else if (!strcmp(end, "d"))
			mult = 86400;
		else
			return fail(p, key, "'%s': the unit is one of s, m, h, d", v);
		end += strlen(end);
	}
	if (errno || *end)
		return fail(p, key, "'%s' is not a number", v);
	if (n > max / mult || n * mult < min || n * mult > max)
		return fail(p, key, "%s is out of range (%llu..%llu%s)", v,
			    (unsigned long long)min, (unsigned long long)max,
			    time ? " seconds" : "");
	*out = n * mult;
	return 0;
}

/* Bytes: a whole number (0x for hex), optionally with K, M, G or T. */
static int bytes(struct parser *p, const char *key, const char *v, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long n;
	const char *u;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)*v))
		return fail(p, key, "'%s' is not a number of bytes", v);
	errno = 0;
	n = strtoull(v, &end, 0);
	if (*end && !end[1] && (u = strchr(units, *end))) {
		shift = 10 * (u - units + 1);
		end++;
	}
	if (errno || *end || (shift && n > UINT64_MAX >> shift))
		return fail(p, key, "'%s' is not a number of bytes (e.g. 4096, 0x1000, 96G)", v);
	*out = (uint64_t)n << shift;
	return 0;
}

static int yes_no(struct parser *p, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0")) {
		*out = false;
		return 0;
	}
	return fail(p, key, "'%s' is not yes or no", v);
}

static int path(struct parser *p, const char *key, const char *v, char *out)
{
	if (*v != '/')
		return fail(p, key, "'%s' is not an absolute path", v);
	if (strlen(v) >= PATH_MAX)
		return fail(p, key, "the path is too long");
	strcpy(out, v);
	return 0;
}

static int policy_key(struct parser *p, const char *key, const char *v,
		      struct hbm_policy_config *pol)
{
	int err;

	if (!strcmp(key, "CEThreshold")) {
		err = number(p, key, v, false, 1, CE_THRESHOLD_MAX, &pol->ce_threshold);
		pol->set |= err ? 0 : HBM_SET_CE_THRESHOLD;
	} else if (!strcmp(key, "CEWindow")) {
		err = number(p, key, v, true, 1, CE_WINDOW_MAX, &pol->ce_window);
		pol->set |= err ? 0 : HBM_SET_CE_WINDOW;
	} else if (!strcmp(key, "RetireLimit")) {
		err = number(p, key, v, false, 1, UINT32_MAX, &pol->retire_limit);
		pol->set |= err ? 0 : HBM_SET_RETIRE_LIMIT;
	} else {
		err = fail(p, key, "unknown key (CEThreshold, CEWindow, RetireLimit)");
	}
	return err;
}

static int range_key(struct parser *p, const char *key, const char *v,
		     struct hbm_range_config *r)
{
	uint32_t node;
	int err;

	if (!strcmp(key, "NumaNode")) {
		err = number(p, key, v, false, 0, 1023, &node);
		r->numa_node = err ? r->numa_node : (int)node;
		return err;
	}
	if (!strcmp(key, "Address")) {
		err = bytes(p, key, v, &r->address);
		if (!err && r->address % 4096)
			err = fail(p, key, "'%s' is not page aligned", v);
		return err;
	}
	if (!strcmp(key, "Size")) {
		err = bytes(p, key, v, &r->size);
		if (!err && (!r->size || r->size % 4096))
			err = fail(p, key, "'%s' is not a whole number of pages", v);
		return err;
	}
	if (!strcmp(key, "SparePages"))
		return number(p, key, v, false, 1, UINT32_MAX, &r->spare_pages);
	if (!strcmp(key, "Claim"))
		return yes_no(p, key, v, &r->claim);
	return fail(p, key, "unknown key (NumaNode, Address, Size, SparePages, Claim)");
}

/* A range is a node, or an address and a size: said once the file is read. */
static int range_check(struct parser *p, const struct hbm_range_config *r)
{
	bool by_node = r->numa_node >= 0, by_address = r->address || r->size;

	p->line = r->line;
	if (by_node == by_address || (by_address && (!r->address || !r->size)))
		return fail(p, NULL, "[Range \"%s\"] takes NumaNode=, or Address= and Size=",
			    r->name);
	return 0;
}

/* Deadlines of a rank recovery's steps, in seconds. */
static int recovery_key(struct parser *p, const char *key, const char *v,
			struct hbm_recovery_config *r)
{
	if (!strcmp(key, "PauseTimeout"))
		return number(p, key, v, true, 1, 3600, &r->pause_timeout);
	if (!strcmp(key, "RestoreTimeout"))
		return number(p, key, v, true, 1, 3600, &r->restore_timeout);
	if (!strcmp(key, "KillTimeout"))
		return number(p, key, v, true, 1, 600, &r->kill_timeout);
	return fail(p, key, "unknown key (PauseTimeout, RestoreTimeout, KillTimeout)");
}

static struct hbm_device_config *device_section(struct hbm_config *c,
						 const char *identity)
{
	size_t i;

	for (i = 0; i < c->nr_devices; i++)
		if (!strcmp(c->devices[i].identity, identity))
			return &c->devices[i];
	if (c->nr_devices == HBM_CONFIG_MAX_DEVICES)
		return NULL;
	strcpy(c->devices[c->nr_devices].identity, identity);
	return &c->devices[c->nr_devices++];
}

enum section { NONE, DAEMON, POLICY, RECOVERY, DEVICE, RANGE };

/* The quoted argument of [@what "..."], or NULL. */
static char *quoted(char *s, const char *what)
{
	size_t len = strlen(what), n;

	if (strncmp(s, what, len) || !isspace((unsigned char)s[len]))
		return NULL;
	s = trim(s + len);
	n = strlen(s);
	if (n < 3 || s[0] != '"' || s[n - 1] != '"')
		return NULL;
	s[n - 1] = 0;
	return s + 1;
}

static int range_section(struct parser *p, struct hbm_config *c, const char *name)
{
	struct hbm_range_config *r;
	const char *q;
	size_t i;

	if (!*name || strlen(name) >= sizeof(r->name))
		return fail(p, NULL, "'%s' is not a range name", name);
	for (q = name; *q; q++)
		if (!isalnum((unsigned char)*q) && !strchr("_.:-", *q))
			return fail(p, NULL, "'%s' is not a range name (letters, digits, _.:-)",
				    name);
	for (i = 0; i < c->nr_ranges; i++)
		if (!strcmp(c->ranges[i].name, name))
			return fail(p, NULL, "[Range \"%s\"] twice", name);
	if (c->nr_ranges == HBM_CONFIG_MAX_RANGES)
		return fail(p, NULL, "more than %d [Range] sections", HBM_CONFIG_MAX_RANGES);
	r = &c->ranges[c->nr_ranges++];
	memset(r, 0, sizeof(*r));
	strcpy(r->name, name);
	r->numa_node = -1;
	r->line = p->line;
	return 0;
}

static int section(struct parser *p, char *s, struct hbm_config *c,
		   enum section *sec, struct hbm_device_config **dev)
{
	size_t len = strlen(s);
	char *id;

	if (s[len - 1] != ']')
		return fail(p, NULL, "'%s': a section is [Daemon], [Policy], [Recovery], [Device \"identity\"] or [Range \"name\"]", s);
	s[len - 1] = 0;
	s = trim(s + 1);
	if (!strcmp(s, "Daemon")) {
		*sec = DAEMON;
		return 0;
	}
	if (!strcmp(s, "Policy")) {
		*sec = POLICY;
		return 0;
	}
	if (!strcmp(s, "Recovery")) {
		*sec = RECOVERY;
		return 0;
	}
	id = quoted(s, "Range");
	if (id) {
		*sec = RANGE;
		return range_section(p, c, id);
	}
	if (!strncmp(s, "Range", 5) && (!s[5] || isspace((unsigned char)s[5])))
		return fail(p, NULL, "[Range ...] takes a quoted name");
	if (strncmp(s, "Device", 6) || !isspace((unsigned char)s[6]))
		return fail(p, NULL, "unknown section [%s]", s);
	id = quoted(s, "Device");
	if (!id)
		return fail(p, NULL, "[Device ...] takes a quoted identity");
	if (!*id || strlen(id) >= sizeof((*dev)->identity) || strpbrk(id, "\" \t"))
		return fail(p, NULL, "'%s' is not a device identity", id);
	*dev = device_section(c, id);
	if (!*dev)
		return fail(p, NULL, "more than %d [Device] sections", HBM_CONFIG_MAX_DEVICES);
	*sec = DEVICE;
	return 0;
}

int hbm_config_parse(const char *text, const char *file, struct hbm_config *out,
		     char *err, size_t errlen)
{
	struct parser p = { .file = file, .err = err, .errlen = errlen };
	struct hbm_config *c = malloc(sizeof(*c));
	struct hbm_device_config *dev = NULL;
	enum section sec = NONE;
	char *copy = strdup(text), *line, *save = NULL;
	int ret = 0;

	if (!c || !copy) {
		free(c);
		free(copy);
		return -ENOMEM;
	}
	hbm_config_defaults(c);
	/* strtok_r would skip empty lines and so miscount them. */
	for (line = copy; line && !ret; line = save) {
		char *eq, *key, *value;

		save = strchr(line, '\n');
		if (save)
			*save++ = 0;
		p.line++;
		line = trim(line);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			ret = section(&p, line, c, &sec, &dev);
			continue;
		}
		eq = strchr(line, '=');
		if (!eq) {
			ret = fail(&p, NULL, "'%s' is not KEY=VALUE", line);
			continue;
		}
		*eq = 0;
		key = trim(line);
		value = trim(eq + 1);
		if (!*key) {
			ret = fail(&p, NULL, "a value without a key");
		} else if (sec == NONE) {
			ret = fail(&p, key, "outside any section");
		} else if (sec == DAEMON) {
			if (!strcmp(key, "StateDirectory"))
				ret = path(&p, key, value, c->state_dir);
			else if (!strcmp(key, "ControlSocket"))
				ret = path(&p, key, value, c->control_socket);
			else
				ret = fail(&p, key, "unknown key (StateDirectory, ControlSocket)");
		} else if (sec == RECOVERY) {
			ret = recovery_key(&p, key, value, &c->recovery);
		} else if (sec == RANGE) {
			ret = range_key(&p, key, value, &c->ranges[c->nr_ranges - 1]);
		} else {
			ret = policy_key(&p, key, value,
					 sec == POLICY ? &c->policy : &dev->policy);
		}
	}
	for (size_t i = 0; !ret && i < c->nr_ranges; i++)
		ret = range_check(&p, &c->ranges[i]);
	if (!ret)
		*out = *c;
	free(c);
	free(copy);
	return ret;
}

int hbm_config_load(const char *path, struct hbm_config *c, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	text = calloc(1, 1 << 20);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(text, 1, (1 << 20) - 1, f);
	if (ferror(f) || !feof(f)) {
		snprintf(err, errlen, "%s: %s", path, ferror(f) ? "read error" :
			 "larger than 1 MiB");
		ret = -EFBIG;
	} else if (memchr(text, 0, len)) {
		snprintf(err, errlen, "%s: not a text file", path);
		ret = -EINVAL;
	} else {
		ret = hbm_config_parse(text, path, c, err, errlen);
	}
	fclose(f);
	free(text);
	return ret;
}

/* The policy of a device: [Policy], overridden by its [Device] section. */
struct hbm_policy_config hbm_config_policy_for(const struct hbm_config *c,
					       const char *identity)
{
	struct hbm_policy_config p = c->policy;
	size_t i;

	for (i = 0; i < c->nr_devices; i++) {
		const struct hbm_policy_config *d = &c->devices[i].policy;

		if (strcmp(c->devices[i].identity, identity))
			continue;
		if (d->set & HBM_SET_CE_THRESHOLD)
			p.ce_threshold = d->ce_threshold;
		if (d->set & HBM_SET_CE_WINDOW)
			p.ce_window = d->ce_window;
		if (d->set & HBM_SET_RETIRE_LIMIT)
			p.retire_limit = d->retire_limit;
		p.set |= d->set;
	}
	return p;
}
