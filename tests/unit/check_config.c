// SPDX-License-Identifier: GPL-2.0
/* Unit tests of hbmguardd's configuration parser (daemon/config.c). */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "config.h"
#include "timespan.h"
#include "unit.h"

static struct hbm_config c;
static char err[512];

static int parse(const char *text)
{
	err[0] = 0;
	return hbm_config_parse(text, "test.conf", &c, err, sizeof(err));
}

START_TEST(defaults_and_full_file)
{
	struct hbm_policy_config p;

	ck_assert_int_eq(parse(""), 0);
	ck_assert_str_eq(c.state_dir, "/var/lib/hbmguard");
	ck_assert_uint_eq(c.policy.set, 0);

	ck_assert_int_eq(parse("# hbmguardd\n"
			       "[Daemon]\n"
			       "StateDirectory = /srv/hbm\n"
			       "ControlSocket=/run/x.sock\n"
			       "\n"
			       "; per device below\n"
			       "[Policy]\n"
			       "CEThreshold=40\n"
			       "CEWindow=12h\n"
			       "[Device \"0000:3b:00.0\"]\n"
			       "CEThreshold=10\n"
			       "[Device \"GPU-7\"]\n"
			       "RetireLimit=500\n"
			       "CEThreshold=60\n"
			       "CEThreshold=61\n"), 0);
	ck_assert_str_eq(c.state_dir, "/srv/hbm");
	ck_assert_str_eq(c.control_socket, "/run/x.sock");
	ck_assert_uint_eq(c.policy.ce_threshold, 40);
	ck_assert_uint_eq(c.policy.ce_window, 43200);
	ck_assert_uint_eq(c.nr_devices, 2);
	p = hbm_config_policy_for(&c, "0000:3b:00.0");
	ck_assert_uint_eq(p.ce_threshold, 10);
	ck_assert_uint_eq(p.ce_window, 43200);
	ck_assert(!(p.set & HBM_SET_RETIRE_LIMIT));
	p = hbm_config_policy_for(&c, "GPU-7");
	ck_assert_uint_eq(p.ce_threshold, 61);	/* the last one wins */
	ck_assert_uint_eq(p.retire_limit, 500);
	p = hbm_config_policy_for(&c, "other");
	ck_assert_uint_eq(p.ce_threshold, 40);
}
END_TEST

START_TEST(recovery_deadlines)
{
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(c.recovery.pause_timeout, 30);
	ck_assert_uint_eq(c.recovery.restore_timeout, 120);
	ck_assert_uint_eq(c.recovery.kill_timeout, 10);
	ck_assert_int_eq(parse("[Recovery]\nPauseTimeout=5\nRestoreTimeout=1m\nKillTimeout=2s\n"), 0);
	ck_assert_uint_eq(c.recovery.pause_timeout, 5);
	ck_assert_uint_eq(c.recovery.restore_timeout, 60);
	ck_assert_uint_eq(c.recovery.kill_timeout, 2);
	ck_assert_int_eq(parse("[Recovery]\nPauseTimeout=0\n"), -EINVAL);
	ck_assert_str_eq(err, "test.conf:2: PauseTimeout: 0 is out of range (1..3600 seconds)");
	ck_assert_int_eq(parse("[Recovery]\nRestoreTimeout=2h\n"), -EINVAL);
	ck_assert_str_eq(err, "test.conf:2: RestoreTimeout: 2h is out of range (1..3600 seconds)");
	ck_assert_int_eq(parse("[Recovery]\nKillTimeout=soon\n"), -EINVAL);
	ck_assert_str_eq(err, "test.conf:2: KillTimeout: 'soon' is not a time span (e.g. 90, 30s, 2min, 1h 30min)");
	ck_assert_int_eq(parse("[Recovery]\nCEThreshold=5\n"), -EINVAL);
	ck_assert_str_eq(err, "test.conf:2: CEThreshold: unknown key (PauseTimeout, RestoreTimeout, KillTimeout)");
}
END_TEST

/*
 * Every form of systemd.time(7)'s time spans, each unit by each of its
 * names; what was accepted before (a number, or one of s, m, h, d) still is.
 */
START_TEST(time_units)
{
	static const struct {
		const char *value;
		uint32_t seconds;
	} good[] = {
		{ "90", 90 }, { "30m", 1800 }, { "12h", 43200 }, { "365d", 365 * 86400 },
		{ "1", 1 }, { "007", 7 },
		{ "30s", 30 }, { "30sec", 30 }, { "30second", 30 }, { "30seconds", 30 },
		{ "2min", 120 }, { "2minute", 120 }, { "2minutes", 120 },
		{ "1hr", 3600 }, { "1hour", 3600 }, { "1hours", 3600 },
		{ "2day", 172800 }, { "2days", 172800 },
		{ "1w", 604800 }, { "1week", 604800 }, { "2weeks", 1209600 },
		{ "1M", 2629800 }, { "1month", 2629800 }, { "2months", 5259600 },
		{ "0.5y", 15778800 }, { "0.5year", 15778800 }, { "0.5years", 15778800 },
		{ "2000ms", 2 }, { "2000msec", 2 },
		{ "3000000us", 3 }, { "3000000usec", 3 },
		{ "1000000\xc2\xb5s", 1 }, { "1000000\xce\xbcs", 1 },	/* micro sign, mu */
		{ "1h 30min", 5400 }, { "1h30min", 5400 }, { "1.5h", 5400 },
		{ "2 h", 7200 }, { "1d 2h 3m 4s", 93784 }, { "1d2h3m4s", 93784 },
		{ "700ms300ms 1s", 2 }, { "1.25min", 75 }, { "5 5", 10 },
		{ "1m 1ms 999ms", 61 }, { "  2min  ", 120 }, { "1 \t s", 1 },
		{ "59s 1min", 119 }, { "0d 1s", 1 }, { ".5min", 30 },
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char text[128];

		snprintf(text, sizeof(text), "[Policy]\nCEWindow=%s\n", good[i].value);
		ck_assert_msg(parse(text) == 0, "refused '%s': %s", good[i].value, err);
		ck_assert_msg(c.policy.ce_window == good[i].seconds, "'%s': %u, not %u",
			      good[i].value, c.policy.ce_window, good[i].seconds);
	}
	/* The same parser for the deadlines. */
	ck_assert_int_eq(parse("[Recovery]\nPauseTimeout=1min 30s\nRestoreTimeout=1h\n"
			       "KillTimeout=10sec\n"), 0);
	ck_assert_uint_eq(c.recovery.pause_timeout, 90);
	ck_assert_uint_eq(c.recovery.restore_timeout, 3600);
	ck_assert_uint_eq(c.recovery.kill_timeout, 10);
}
END_TEST

/* Not time spans, below a second, out of a key's range: each said, nothing changed. */
START_TEST(time_units_bad)
{
	static const struct {
		const char *text;
		const char *message;
	} bad[] = {
		{ "CEWindow=soon", "CEWindow: 'soon' is not a time span (e.g. 90, 30s, 2min, 1h 30min)" },
		{ "CEWindow=", "CEWindow: '' is not a time span" },
		{ "CEWindow=-1", "'-1' is not a time span" },
		{ "CEWindow=-0", "'-0' is not a time span" },
		{ "CEWindow=1h -5m", "'1h -5m' is not a time span" },
		{ "CEWindow=12x", "'12x' is not a time span" },
		{ "CEWindow=5 x", "'5 x' is not a time span" },
		{ "CEWindow=h", "'h' is not a time span" },
		{ "CEWindow=1h min", "'1h min' is not a time span" },
		{ "CEWindow=3.", "'3.' is not a time span" },
		{ "CEWindow=3.s", "'3.s' is not a time span" },
		{ "CEWindow=.", "'.' is not a time span" },
		{ "CEWindow=.s", "'.s' is not a time span" },
		{ "CEWindow=.5s", "'.5s' is not a whole number of seconds" },
		{ "CEWindow=1.2.3", "'1.2.3' is not a time span" },
		{ "CEWindow=1hh", "'1hh' is not a time span" },
		{ "CEWindow=1H", "'1H' is not a time span" },
		{ "CEWindow=infinity", "'infinity' is not a time span" },
		{ "CEWindow=1ns", "'1ns' is not a time span" },
		{ "CEWindow=0x10", "'0x10' is not a time span" },
		{ "CEWindow=500ms", "CEWindow: '500ms' is not a whole number of seconds" },
		{ "CEWindow=1.5s", "'1.5s' is not a whole number of seconds" },
		{ "CEWindow=1s 1us", "'1s 1us' is not a whole number of seconds" },
		{ "CEWindow=0", "CEWindow: 0 is out of range (1..31536000 seconds)" },
		{ "CEWindow=0s 0ms", "CEWindow: 0s 0ms is out of range" },
		{ "CEWindow=1y", "CEWindow: 1y is out of range (1..31536000 seconds)" },
		{ "CEWindow=365d 1s", "CEWindow: 365d 1s is out of range" },
		{ "CEWindow=4294967296", "CEWindow: 4294967296 is out of range" },
		{ "CEWindow=18446744073709551616us", "CEWindow: 18446744073709551616us is out of range" },
		{ "CEWindow=99999999999999y", "CEWindow: 99999999999999y is out of range" },
		{ "CEWindow=10000000000000000000 10000000000000000000us", "is out of range" },
		/* The whole part just fits; its fraction does not (it wrapped to 1h, 1d). */
		{ "CEWindow=213503982.3762679586d", "CEWindow: 213503982.3762679586d is out of range" },
		{ "CEWindow=584542.0488284771855y", "CEWindow: 584542.0488284771855y is out of range" },
		{ "[Recovery]\nKillTimeout=601", "KillTimeout: 601 is out of range (1..600 seconds)" },
		{ "[Recovery]\nKillTimeout=10min 1s", "KillTimeout: 10min 1s is out of range" },
		{ "[Recovery]\nPauseTimeout=1h 1s", "PauseTimeout: 1h 1s is out of range (1..3600 seconds)" },
		{ "[Recovery]\nRestoreTimeout=999ms", "RestoreTimeout: '999ms' is not a whole number of seconds" },
	};
	struct hbm_config before;
	size_t i;

	ck_assert_int_eq(parse("[Policy]\nCEWindow=7h\n"), 0);
	before = c;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];

		snprintf(text, sizeof(text), "%s%s\n",
			 strncmp(bad[i].text, "[", 1) ? "[Policy]\n" : "", bad[i].text);
		ck_assert_msg(parse(text) == -EINVAL, "accepted: %s", bad[i].text);
		ck_assert_msg(!strncmp(err, "test.conf:2: ", 13) && strstr(err, bad[i].message),
			      "for %s: got '%s', expected '%s'", bad[i].text, err, bad[i].message);
		ck_assert_msg(!memcmp(&c, &before, sizeof(c)), "changed by: %s", bad[i].text);
	}
}
END_TEST

/* Every key with a bad value, and every malformed line: file, line, key. */
START_TEST(bad_input)
{
	static const struct {
		const char *text;
		const char *message;
	} bad[] = {
		{ "[Policy]\nCEThreshold=0\n", "test.conf:2: CEThreshold: 0 is out of range (1..65535)" },
		{ "[Policy]\nCEThreshold=65536\n", "test.conf:2: CEThreshold: 65536 is out of range" },
		{ "[Policy]\nCEThreshold=-1\n", "test.conf:2: CEThreshold: '-1' is not a number" },
		{ "[Policy]\nCEThreshold=12x\n", "test.conf:2: CEThreshold: '12x' is not a number" },
		{ "[Policy]\nCEThreshold=\n", "test.conf:2: CEThreshold: '' is not a number" },
		{ "[Policy]\nCEThreshold=99999999999999999999999\n", "is not a number" },
		{ "[Policy]\nCEWindow=0\n", "test.conf:2: CEWindow: 0 is out of range" },
		{ "[Policy]\nCEWindow=366d\n", "test.conf:2: CEWindow: 366d is out of range (1..31536000 seconds)" },
		{ "[Policy]\nCEWindow=5x\n", "test.conf:2: CEWindow: '5x' is not a time span" },
		{ "[Policy]\nRetireLimit=0\n", "test.conf:2: RetireLimit: 0 is out of range" },
		{ "[Policy]\nRetireLimit=4294967296\n", "test.conf:2: RetireLimit: 4294967296 is out of range" },
		{ "[Policy]\nFrobnicate=1\n", "test.conf:2: Frobnicate: unknown key" },
		{ "[Daemon]\nStateDirectory=relative\n", "test.conf:2: StateDirectory: 'relative' is not an absolute path" },
		{ "[Daemon]\nControlSocket=\n", "test.conf:2: ControlSocket: '' is not an absolute path" },
		/* It fits PATH_MAX, not a sockaddr_un: refused here, not when bound. */
		{ "[Daemon]\nControlSocket=/run/hbmguard/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.sock\n",
		  "test.conf:2: ControlSocket: the path is longer than a socket's address (107 bytes)" },
		{ "[Daemon]\nCEThreshold=5\n", "test.conf:2: CEThreshold: unknown key (StateDirectory, ControlSocket)" },
		{ "CEThreshold=5\n", "test.conf:1: CEThreshold: outside any section" },
		{ "[Policy]\njust words\n", "test.conf:2: 'just words' is not KEY=VALUE" },
		{ "[Policy]\n=5\n", "test.conf:2: a value without a key" },
		{ "[Nope]\n", "test.conf:1: unknown section [Nope]" },
		{ "[Policy\n", "test.conf:1: '[Policy': a section is" },
		{ "[Device]\n", "test.conf:1: unknown section [Device]" },
		{ "[Device gpu0]\n", "test.conf:1: [Device ...] takes a quoted identity" },
		{ "[Device \"\"]\n", "test.conf:1: [Device ...] takes a quoted identity" },
		{ "[Device \"a b\"]\n", "test.conf:1: 'a b' is not a device identity" },
		{ "\n\n# c\n[Policy]\nCEThreshold=1\n\nCEWindow=x\n", "test.conf:7: CEWindow: 'x' is not a time span" },
		{ "[Range]\n", "test.conf:1: [Range ...] takes a quoted name" },
		{ "[Range hbm0]\n", "test.conf:1: [Range ...] takes a quoted name" },
		{ "[Range \"a b\"]\nNumaNode=1\n", "test.conf:1: 'a b' is not a range name" },
		{ "[Range \"0123456789012345678901234567890123\"]\n", "is not a range name" },
		{ "[Range \"h\"]\nNumaNode=1\n[Range \"h\"]\n", "test.conf:3: [Range \"h\"] twice" },
		{ "[Range \"h\"]\n", "test.conf:1: [Range \"h\"] takes NumaNode=, or Address= and Size=" },
		{ "[Range \"h\"]\nNumaNode=1\nAddress=0x1000\nSize=4K\n", "test.conf:1: [Range \"h\"] takes" },
		{ "[Policy]\n[Range \"h\"]\nAddress=0x1000\n", "test.conf:2: [Range \"h\"] takes" },
		{ "[Range \"h\"]\nNumaNode=1024\n", "test.conf:2: NumaNode: 1024 is out of range (0..1023)" },
		{ "[Range \"h\"]\nAddress=0x1001\nSize=4K\n", "test.conf:2: Address: '0x1001' is not page aligned" },
		{ "[Range \"h\"]\nAddress=4096\nSize=5000\n", "test.conf:3: Size: '5000' is not a whole number of pages" },
		{ "[Range \"h\"]\nAddress=4096\nSize=0\n", "test.conf:3: Size: '0' is not a whole number of pages" },
		{ "[Range \"h\"]\nAddress=4096\nSize=4X\n", "test.conf:3: Size: '4X' is not a number of bytes" },
		{ "[Range \"h\"]\nAddress=4096\nSize=99999999999T\n", "Size: '99999999999T' is not a number of bytes" },
		{ "[Range \"h\"]\nNumaNode=1\nClaim=maybe\n", "test.conf:3: Claim: 'maybe' is not yes or no" },
		{ "[Range \"h\"]\nNumaNode=1\nSparePages=0\n", "test.conf:3: SparePages: 0 is out of range" },
		{ "[Range \"h\"]\nNumaNode=1\nCEThreshold=5\n", "test.conf:3: CEThreshold: unknown key (NumaNode, Address, Size, SparePages, Claim)" },
		{ "[Metrics]\nListen=9477\n", "test.conf:2: Listen: '9477' is not ADDRESS:PORT" },
		{ "[Metrics]\nListen=:9477\n", "test.conf:2: Listen: ':9477' is not ADDRESS:PORT" },
		{ "[Metrics]\nListen=localhost:9477\n", "test.conf:2: Listen: 'localhost' is not a numeric IP address" },
		{ "[Metrics]\nListen=127.0.0.1:0\n", "test.conf:2: Listen: 0 is out of range (1..65535)" },
		{ "[Metrics]\nListen=127.0.0.1:65536\n", "test.conf:2: Listen: 65536 is out of range" },
		{ "[Metrics]\nListen=127.0.0.1:http\n", "test.conf:2: Listen: 'http' is not a number" },
		{ "[Metrics]\nListen=127.0.0.1:\n", "test.conf:2: Listen: '' is not a number" },
		{ "[Metrics]\nListen=::1:9477\n", "test.conf:2: Listen: '::1' is not a numeric IP address (an IPv6 one in brackets)" },
		{ "[Metrics]\nListen=[127.0.0.1]:9477\n", "test.conf:2: Listen: '127.0.0.1' is not a numeric IP address" },
		{ "[Metrics]\nListen=[::1:9477\n", "test.conf:2: Listen: '[::1:9477' is not ADDRESS:PORT" },
		{ "[Metrics]\nListen=[]:9477\n", "test.conf:2: Listen: '[]:9477' is not ADDRESS:PORT" },
		{ "[Metrics]\nListen=0123456789012345678901234567890123456789012345678901234567890123:1\n",
		  "is not ADDRESS:PORT" },
		{ "[Metrics]\nPort=9477\n", "test.conf:2: Port: unknown key (Listen)" },
		{ "[Scheduler]\nSlurm=maybe\n", "test.conf:2: Slurm: 'maybe' is not yes or no" },
		{ "[Scheduler]\nSlurmNode=gpu[1-4]\n",
		  "test.conf:2: SlurmNode: 'gpu[1-4]' is not one node's name (letters, digits, -_.)" },
		{ "[Scheduler]\nSlurmNode=a,b\n", "'a,b' is not one node's name" },
		{ "[Scheduler]\nSlurmNode=a b\n", "'a b' is not one node's name" },
		{ "[Scheduler]\nSlurmNode=0123456789012345678901234567890123456789012345678901234567890123\n",
		  "is longer than 63 characters" },
		{ "[Scheduler]\nHook=drain.sh\n", "test.conf:2: Hook: 'drain.sh' is not an absolute path" },
		{ "[Scheduler]\nTimeout=0\n", "test.conf:2: Timeout: 0 is out of range (1..600 seconds)" },
		{ "[Scheduler]\nTimeout=11min\n", "Timeout: 11min is out of range (1..600 seconds)" },
		{ "[Scheduler]\nTimeout=soon\n", "Timeout: 'soon' is not a time span" },
		{ "[Scheduler]\nRecheckInterval=4\n",
		  "test.conf:2: RecheckInterval: 4 is out of range (5..3600 seconds)" },
		{ "[Scheduler]\nRecheckInterval=1h 1s\n", "RecheckInterval: 1h 1s is out of range" },
		{ "[Scheduler]\nRecheckInterval=often\n", "RecheckInterval: 'often' is not a time span" },
		{ "[Scheduler]\nPartition=gpu\n",
		  "test.conf:2: Partition: unknown key (Slurm, SlurmNode, Hook, Timeout, RecheckInterval)" },
		/* Address + Size past 2^64: the module would refuse it at registration. */
		{ "[Range \"h\"]\nAddress=0xfffffffffffff000\nSize=4K\n",
		  "test.conf:1: [Range \"h\"]: Address=0xfffffffffffff000 and Size=4096 go past the end of the address space" },
		{ "[Range \"h\"]\nAddress=0xffff800000000000\nSize=256T\n", "go past the end of the address space" },
		/* Two ranges of the same memory: the second would never register. */
		{ "[Range \"a\"]\nNumaNode=1\n[Range \"b\"]\nNumaNode=1\n",
		  "test.conf:3: [Range \"b\"]: NumaNode=1 is [Range \"a\"]'s (test.conf:1)" },
		{ "[Range \"a\"]\nAddress=0x100000\nSize=1M\n[Range \"b\"]\nAddress=0x1ff000\nSize=8K\n",
		  "test.conf:4: [Range \"b\"]: 0x1ff000+8192 overlaps [Range \"a\"] (test.conf:1): 0x100000+1048576" },
		{ "[Range \"a\"]\nAddress=0x200000\nSize=1M\n[Range \"b\"]\nAddress=0x100000\nSize=4M\n",
		  "test.conf:4: [Range \"b\"]: 0x100000+4194304 overlaps [Range \"a\"]" },
		/* [Cluster] (cluster.c) */
		{ "[Cluster]\nEndpoints=etcd:2379\n",
		  "test.conf:2: Endpoints: 'etcd:2379' is not an http:// or https:// URL" },
		{ "[Cluster]\nEndpoints=https://\n", "test.conf:2: Endpoints: 'https://' has no host" },
		{ "[Cluster]\nEndpoints=https://e:0\n", "test.conf:2: Endpoints: 0 is out of range (1..65535)" },
		{ "[Cluster]\nEndpoints=https://e:65536\n", "Endpoints: 65536 is out of range" },
		{ "[Cluster]\nEndpoints=https://e:2379/v3\n", "Endpoints: '2379/v3' is not a number" },
		{ "[Cluster]\nEndpoints=https://e/v3\n", "'https://e/v3' is not host[:port]" },
		{ "[Cluster]\nEndpoints=https://u@e:2379\n", "'https://u@e:2379' is not host[:port]" },
		{ "[Cluster]\nEndpoints=https://[::1:2379\n", "an IPv6 address ends with ]" },
		{ "[Cluster]\nEndpoints=https://[zz]:1\n", "'https://[zz]:1' is not host[:port]" },
		{ "[Cluster]\nEndpoints=https://a https://b https://c https://d https://e https://f "
		  "https://g https://h https://i\n", "test.conf:2: Endpoints: more than 8 endpoints" },
		{ "[Cluster]\nEndpoints=https://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:1\n", "is longer than 127 characters" },
		/* plain HTTP only when said so, whichever key comes first */
		{ "[Cluster]\n\nEndpoints=https://a:1,http://b:2379\n",
		  "test.conf:3: Endpoints: 'http://b:2379' is plain HTTP: use https://, or set AllowPlainHTTP=yes" },
		{ "[Cluster]\nAllowPlainHTTP=yes\nEndpoints=http://b:2379\nAllowPlainHTTP=no\n",
		  "'http://b:2379' is plain HTTP" },
		{ "[Cluster]\nAllowPlainHTTP=maybe\n", "test.conf:2: AllowPlainHTTP: 'maybe' is not yes or no" },
		{ "[Cluster]\nEndpoints=https://a:1\nCertificateFile=/c.pem\n",
		  "test.conf:2: [Cluster] takes CertificateFile= and KeyFile= together" },
		{ "[Cluster]\nEndpoints=https://a:1\nKeyFile=/k.pem\n", "takes CertificateFile= and KeyFile= together" },
		{ "[Cluster]\nKeyFile=k.pem\n", "test.conf:2: KeyFile: 'k.pem' is not an absolute path" },
		{ "[Cluster]\nTrustedCAFile=ca\n", "test.conf:2: TrustedCAFile: 'ca' is not an absolute path" },
		{ "[Cluster]\nLeaseTTL=1\n", "test.conf:2: LeaseTTL: 1 is out of range (2..3600 seconds)" },
		{ "[Cluster]\nLeaseTTL=2h\n", "LeaseTTL: 2h is out of range" },
		{ "[Cluster]\nLeaseTTL=1.5s\n", "LeaseTTL: '1.5s' is not a whole number of seconds" },
		{ "[Cluster]\nNode=a/b\n", "test.conf:2: Node: 'a/b' is not a node name" },
		{ "[Cluster]\nNode=..\n", "Node: '..' is not a node name" },
		{ "[Cluster]\nNode=0123456789012345678901234567890123456789012345678901234567890123\n",
		  "is not a node name" },
		{ "[Cluster]\nWatch=yes\n", "test.conf:2: Watch: unknown key (Endpoints, CertificateFile" },
	};
	struct hbm_config before;
	size_t i;

	ck_assert_int_eq(parse("[Daemon]\nStateDirectory=/keep\n[Policy]\nCEThreshold=7\n"), 0);
	before = c;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i].text) == -EINVAL, "accepted: %s", bad[i].text);
		ck_assert_msg(strstr(err, bad[i].message), "for %s: got '%s', expected '%s'",
			      bad[i].text, err, bad[i].message);
		/* A refused file changes nothing. */
		ck_assert_msg(!memcmp(&c, &before, sizeof(c)), "changed by: %s", bad[i].text);
	}
}
END_TEST

/* [Metrics] Listen=: off by default, IPv4, bracketed IPv6, and off again. */
START_TEST(metrics_listen)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)&c.metrics.addr;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&c.metrics.addr;

	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(c.metrics.addr_len, 0);
	ck_assert_int_eq(parse("[Metrics]\nListen = 127.0.0.1:9477\n"), 0);
	ck_assert_str_eq(c.metrics.listen, "127.0.0.1:9477");
	ck_assert_uint_eq(c.metrics.addr_len, sizeof(*in4));
	ck_assert_int_eq(in4->sin_family, AF_INET);
	ck_assert_uint_eq(ntohs(in4->sin_port), 9477);
	ck_assert_uint_eq(ntohl(in4->sin_addr.s_addr), 0x7f000001);
	ck_assert_int_eq(parse("[Metrics]\nListen=[::1]:80\n"), 0);
	ck_assert_uint_eq(c.metrics.addr_len, sizeof(*in6));
	ck_assert_int_eq(in6->sin6_family, AF_INET6);
	ck_assert_uint_eq(ntohs(in6->sin6_port), 80);
	ck_assert(IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr));
	ck_assert_int_eq(parse("[Metrics]\nListen=0.0.0.0:9477\nListen=\n"), 0);
	ck_assert_uint_eq(c.metrics.addr_len, 0);
	ck_assert_str_eq(c.metrics.listen, "");
}
END_TEST

/* [Cluster]: off by default; each key; Endpoints= empty turns it off again. */
START_TEST(cluster_keys)
{
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(c.cluster.nr_endpoints, 0);
	ck_assert_uint_eq(c.cluster.lease_ttl, 10);
	ck_assert(!c.cluster.allow_plain_http);
	ck_assert_int_eq(parse("[Cluster]\nEndpoints = https://10.0.0.1:2379, https://[fd00::2]:2379"
			       "\thttps://etcd-3.example\n"
			       "CertificateFile=/etc/c.pem\nKeyFile=/etc/k.pem\nTrustedCAFile=/etc/ca.pem\n"
			       "LeaseTTL=1min\nNode=gpu-042.rack_7\n"), 0);
	ck_assert_uint_eq(c.cluster.nr_endpoints, 3);
	ck_assert_str_eq(c.cluster.endpoints[0], "https://10.0.0.1:2379");
	ck_assert_str_eq(c.cluster.endpoints[1], "https://[fd00::2]:2379");
	ck_assert_str_eq(c.cluster.endpoints[2], "https://etcd-3.example");
	ck_assert_str_eq(c.cluster.cert, "/etc/c.pem");
	ck_assert_str_eq(c.cluster.key, "/etc/k.pem");
	ck_assert_str_eq(c.cluster.ca, "/etc/ca.pem");
	ck_assert_uint_eq(c.cluster.lease_ttl, 60);
	ck_assert_str_eq(c.cluster.node, "gpu-042.rack_7");
	ck_assert_int_eq(parse("[Cluster]\nEndpoints=http://127.0.0.1:2379\nAllowPlainHTTP=yes\n"), 0);
	ck_assert(c.cluster.allow_plain_http);
	ck_assert_int_eq(parse("[Cluster]\nEndpoints=https://a\nEndpoints=\nNode=\n"), 0);
	ck_assert_uint_eq(c.cluster.nr_endpoints, 0);
	ck_assert_str_eq(c.cluster.node, "");
	/* off: a plain endpoint undone is no longer refused */
	ck_assert_int_eq(parse("[Cluster]\nEndpoints=http://a\nEndpoints=\n"), 0);
	ck_assert(hbm_cluster_name_valid("a"));
	ck_assert(!hbm_cluster_name_valid(""));
	ck_assert(!hbm_cluster_name_valid("."));
	ck_assert(hbm_cluster_name_valid("..."));
	ck_assert(!hbm_cluster_name_valid("a b"));
}
END_TEST

/* [Scheduler]: off by default; each key; Hook= and SlurmNode= empty undo. */
START_TEST(scheduler_keys)
{
	ck_assert_int_eq(parse(""), 0);
	ck_assert(!c.sched.slurm);
	ck_assert_str_eq(c.sched.slurm_node, "");
	ck_assert_str_eq(c.sched.hook, "");
	ck_assert_uint_eq(c.sched.timeout, 30);
	ck_assert_uint_eq(c.sched.recheck, 120);
	ck_assert_int_eq(parse("[Scheduler]\nSlurm=yes\nSlurmNode=gpu-042.a_b\n"
			       "Hook=/usr/local/sbin/drain-hook\nTimeout=2min\nRecheckInterval=10s\n"), 0);
	ck_assert_uint_eq(c.sched.recheck, 10);
	ck_assert(c.sched.slurm);
	ck_assert_str_eq(c.sched.slurm_node, "gpu-042.a_b");
	ck_assert_str_eq(c.sched.hook, "/usr/local/sbin/drain-hook");
	ck_assert_uint_eq(c.sched.timeout, 120);
	ck_assert_int_eq(parse("[Scheduler]\nHook=/x\nSlurmNode=n\nHook=\nSlurmNode=\n"), 0);
	ck_assert_str_eq(c.sched.hook, "");
	ck_assert_str_eq(c.sched.slurm_node, "");
}
END_TEST

/* hbm_bytes(), config's and hbmctl's one reading of a number of bytes. */
START_TEST(bytes_syntax)
{
	static const struct {
		const char *v;
		uint64_t bytes;	/* 1: refused */
	} cases[] = {
		{ "4096", 4096 }, { "0x1000", 4096 }, { "0X1000", 4096 }, { "010", 10 },
		{ "0", 0 }, { "4K", 4096 }, { "96G", 96ULL << 30 }, { "0x10M", 16ULL << 20 },
		{ "16777215T", 16777215ULL << 40 }, { "18446744073709551615", UINT64_MAX },
		{ "", 1 }, { " 1", 1 }, { "+1", 1 }, { "-1", 1 }, { "0x", 1 }, { "1KB", 1 },
		{ "1k", 1 }, { "08x", 1 }, { "16777216T", 1 }, { "18446744073709551616", 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t b = 1;
		int err = hbm_bytes(cases[i].v, &b);

		ck_assert_msg(err == (cases[i].bytes == 1 ? -EINVAL : 0), "'%s': %d", cases[i].v, err);
		ck_assert_msg(b == cases[i].bytes, "'%s': %" PRIu64, cases[i].v, b);
	}
}
END_TEST

START_TEST(ranges)
{
	ck_assert_int_eq(parse("[Range \"hbm0\"]\nNumaNode=1\nClaim=yes\n"
			       "[Range \"gh:1\"]\nAddress=0x4000000000\nSize=96G\nSparePages=512\n"), 0);
	ck_assert_uint_eq(c.nr_ranges, 2);
	ck_assert_str_eq(c.ranges[0].name, "hbm0");
	ck_assert_int_eq(c.ranges[0].numa_node, 1);
	ck_assert(c.ranges[0].claim);
	ck_assert_uint_eq(c.ranges[0].spare_pages, 0);
	ck_assert_str_eq(c.ranges[1].name, "gh:1");
	ck_assert_int_eq(c.ranges[1].numa_node, -1);
	ck_assert_uint_eq(c.ranges[1].address, 0x4000000000ULL);
	ck_assert_uint_eq(c.ranges[1].size, 96ULL << 30);
	ck_assert_uint_eq(c.ranges[1].spare_pages, 512);
	ck_assert(!c.ranges[1].claim);
	/* Ranges that touch do not overlap; the last page of the address space is one. */
	ck_assert_int_eq(parse("[Range \"a\"]\nAddress=0x100000\nSize=1M\n"
			       "[Range \"b\"]\nAddress=0x200000\nSize=1M\n"
			       "[Range \"c\"]\nAddress=0xfff000\nSize=4K\n"
			       "[Range \"d\"]\nAddress=0xffffffffffffe000\nSize=4K\n"
			       "[Range \"e\"]\nNumaNode=1\n[Range \"f\"]\nNumaNode=2\n"), 0);
	ck_assert_uint_eq(c.nr_ranges, 6);
	/* A leading zero is decimal, as systemd reads sizes: not octal (helper-193). */
	ck_assert_int_eq(parse("[Range \"a\"]\nAddress=0102400000\nSize=08192\n"), 0);
	ck_assert_uint_eq(c.ranges[0].address, 102400000);
	ck_assert_uint_eq(c.ranges[0].size, 8192);
	ck_assert_int_eq(parse("[Range \"a\"]\nAddress=0X1000\nSize=4K\n"), 0);
	ck_assert_uint_eq(c.ranges[0].address, 0x1000);
}
END_TEST

START_TEST(too_many_ranges)
{
	size_t len = 0, i;
	char text[4096];

	for (i = 0; i <= HBM_CONFIG_MAX_RANGES; i++)
		len += sprintf(text + len, "[Range \"r%zu\"]\nNumaNode=%zu\n", i, i);
	ck_assert_int_eq(parse(text), -EINVAL);
	ck_assert(strstr(err, "more than 16 [Range] sections"));
}
END_TEST

START_TEST(too_many_devices)
{
	size_t len = 0, i;
	char *text = malloc(64 * 1024);

	for (i = 0; i <= HBM_CONFIG_MAX_DEVICES; i++)
		len += sprintf(text + len, "[Device \"gpu%zu\"]\nCEThreshold=5\n", i);
	ck_assert_int_eq(parse(text), -EINVAL);
	ck_assert(strstr(err, "more than 256 [Device] sections"));
	free(text);
}
END_TEST

START_TEST(load_from_file)
{
	char path[] = "/tmp/hbmconf.XXXXXX";
	int fd = mkstemp(path);
	const char text[] = "[Policy]\nCEThreshold=33\n";

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.policy.ce_threshold, 33);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "[Policy]\0x", 10), 10);
	close(fd);
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "not a text file"));
	unlink(path);
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), -ENOENT);
	ck_assert(strstr(err, "No such file"));
}
END_TEST

/*
 * What is not a regular file: a FIFO nobody writes is refused at once (it
 * held the start, or a reload's event loop until the watchdog, forever), a
 * directory says so; /dev/null is an empty file.  1 MiB is the bound, itself
 * allowed.
 */
START_TEST(load_what_is_not_a_file)
{
	char dir[] = "/tmp/hbmconf.XXXXXX", path[64];
	size_t big = 1 << 20;
	char *text = malloc(big + 1);
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo.conf", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "fifo.conf: not a regular file"), "%s", err);
	unlink(path);
	ck_assert_int_eq(hbm_config_load(dir, &c, err, sizeof(err)), -EISDIR);
	ck_assert_msg(strstr(err, ": Is a directory"), "%s", err);
	ck_assert_int_eq(hbm_config_load("/dev/null", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(hbm_config_load("/dev/zero", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "/dev/zero: not a regular file"), "%s", err);

	/* Comment lines up to 1 MiB exactly, then one byte more. */
	memset(text, '#', big);
	for (size_t i = 63; i < big; i += 64)
		text[i] = '\n';
	snprintf(path, sizeof(path), "%s/big.conf", dir);
	f = fopen(path, "w");
	ck_assert_uint_eq(fwrite(text, 1, big, f), big);
	fclose(f);
	ck_assert_msg(hbm_config_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	f = fopen(path, "a");
	fputc('\n', f);
	fclose(f);
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), -EFBIG);
	ck_assert_msg(strstr(err, "big.conf: larger than 1 MiB"), "%s", err);
	unlink(path);
	rmdir(dir);
	free(text);
}
END_TEST

/* Drop-ins: a scratch tree of the four directories and a main file. */
static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_int_eq(symlink(target, path), 0);
}

static int load_tree(void)
{
	char main_file[128], d0[128], d1[128], d2[128], d3[128];
	const char *dirs[] = { d0, d1, d2, d3, NULL };

	snprintf(main_file, sizeof(main_file), "%s/hbmguardd.conf", root);
	snprintf(d0, sizeof(d0), "%s/etc/hbmguardd.conf.d", root);
	snprintf(d1, sizeof(d1), "%s/run/hbmguardd.conf.d", root);
	snprintf(d2, sizeof(d2), "%s/usr-local-lib/hbmguardd.conf.d", root);
	snprintf(d3, sizeof(d3), "%s/usr-lib/hbmguardd.conf.d", root);
	err[0] = 0;
	return hbm_config_load_files(main_file, false, dirs, &c, err, sizeof(err));
}

static void tree_setup(void)
{
	strcpy(root, "/tmp/hbmdropin.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void tree_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* A file that must not be read: it would be refused. */
#define UNREAD "[Policy]\nCEThreshold=never read\n"

START_TEST(dropin_order)
{
	struct hbm_policy_config p;

	ck_assert_int_eq(load_tree(), 0);	/* nothing there: the defaults */
	ck_assert_uint_eq(c.policy.set, 0);
	put("hbmguardd.conf", "[Policy]\nCEThreshold=5\nRetireLimit=7\n"
	    "[Device \"g\"]\nCEThreshold=3\n[Range \"h\"]\nNumaNode=1\n");
	/* By name across directories, not by directory: 40 wins over /etc's 20. */
	put("usr-lib/hbmguardd.conf.d/10-vendor.conf", "[Policy]\nCEThreshold=10\nCEWindow=1h\n");
	put("etc/hbmguardd.conf.d/20-admin.conf", "[Policy]\nCEThreshold=20\n");
	put("usr-lib/hbmguardd.conf.d/40-vendor.conf", "[Policy]\nCEThreshold=40\n");
	put("run/hbmguardd.conf.d/30-now.conf", "[Policy]\nCEWindow=2h\n");
	/* ... and /etc's 45 over /usr/lib's 15. */
	put("etc/hbmguardd.conf.d/45-admin.conf", "[Recovery]\nKillTimeout=45\n");
	put("usr-lib/hbmguardd.conf.d/15-vendor.conf", "[Recovery]\nKillTimeout=15\n");
	/* [Device] and [Range] of a name seen before: amended key by key. */
	put("usr-local-lib/hbmguardd.conf.d/50-dev.conf",
	    "[Device \"g\"]\nRetireLimit=9\n[Range \"h\"]\nClaim=yes\n"
	    "[Range \"i\"]\nAddress=0x100000\nSize=1M\n");
	ck_assert_msg(load_tree() == 0, "%s", err);
	ck_assert_uint_eq(c.policy.ce_threshold, 40);
	ck_assert_uint_eq(c.recovery.kill_timeout, 45);
	ck_assert_uint_eq(c.policy.ce_window, 7200);
	ck_assert_uint_eq(c.policy.retire_limit, 7);	/* the main file's, untouched */
	p = hbm_config_policy_for(&c, "g");
	ck_assert_uint_eq(p.ce_threshold, 3);
	ck_assert_uint_eq(p.retire_limit, 9);
	ck_assert_uint_eq(c.nr_ranges, 2);
	ck_assert_int_eq(c.ranges[0].numa_node, 1);
	ck_assert(c.ranges[0].claim);
	ck_assert_uint_eq(c.ranges[1].size, 1 << 20);
}
END_TEST

START_TEST(dropin_masking)
{
	put("hbmguardd.conf", "[Recovery]\nKillTimeout=5\n");
	/* The same name in a directory of more priority hides the other. */
	put("usr-lib/hbmguardd.conf.d/50-x.conf", UNREAD);
	put("usr-local-lib/hbmguardd.conf.d/50-x.conf", UNREAD);
	put("run/hbmguardd.conf.d/50-x.conf", UNREAD);
	put("etc/hbmguardd.conf.d/50-x.conf", "[Recovery]\nKillTimeout=30\n");
	put("usr-lib/hbmguardd.conf.d/60-y.conf", UNREAD);
	put("usr-local-lib/hbmguardd.conf.d/60-y.conf", "[Recovery]\nPauseTimeout=1min\n");
	/* A symlink to /dev/null masks, so does an empty file. */
	put("usr-lib/hbmguardd.conf.d/70-z.conf", UNREAD);
	link_to("/dev/null", "etc/hbmguardd.conf.d/70-z.conf");
	put("usr-lib/hbmguardd.conf.d/80-e.conf", UNREAD);
	put("run/hbmguardd.conf.d/80-e.conf", "");
	/* Not *.conf, hidden: not drop-ins.  A directory masks nothing. */
	put("etc/hbmguardd.conf.d/README", UNREAD);
	put("etc/hbmguardd.conf.d/90.conf.bak", UNREAD);
	put("etc/hbmguardd.conf.d/.90.conf", UNREAD);
	put("etc/hbmguardd.conf.d/95-dir.conf/x", UNREAD);
	put("usr-lib/hbmguardd.conf.d/95-dir.conf", "[Recovery]\nRestoreTimeout=5min\n");
	ck_assert_msg(load_tree() == 0, "%s", err);
	ck_assert_uint_eq(c.recovery.kill_timeout, 30);
	ck_assert_uint_eq(c.recovery.pause_timeout, 60);
	ck_assert_uint_eq(c.recovery.restore_timeout, 300);
	ck_assert_uint_eq(c.policy.set, 0);
	/* The mask taken away, what it hid is read (and refused). */
	put("run/hbmguardd.conf.d/80-e.conf", "# not empty\n");
	ck_assert_int_eq(load_tree(), 0);
	link_to("/dev/null", "etc/hbmguardd.conf.d/80-e.conf");
	ck_assert_int_eq(load_tree(), 0);
	snprintf(err, sizeof(err), "%s/etc/hbmguardd.conf.d/70-z.conf", root);
	ck_assert_int_eq(unlink(err), 0);
	ck_assert_int_eq(load_tree(), -EINVAL);
	ck_assert_msg(strstr(err, "/usr-lib/hbmguardd.conf.d/70-z.conf:2: CEThreshold: "
			     "'never read' is not a number"), "%s", err);
}
END_TEST

/* A bad drop-in: its file and line, and nothing of any file applied. */
START_TEST(dropin_bad)
{
	static const struct {
		const char *rel, *text, *message;
	} bad[] = {
		{ "etc/hbmguardd.conf.d/50-bad.conf", "\n[Policy]\nCEWindow=500ms\n",
		  "/etc/hbmguardd.conf.d/50-bad.conf:3: CEWindow: '500ms' is not a whole number of seconds" },
		/* Sections do not carry over from the file before. */
		{ "run/hbmguardd.conf.d/50-bad.conf", "CEThreshold=5\n",
		  "/run/hbmguardd.conf.d/50-bad.conf:1: CEThreshold: outside any section" },
		{ "usr-lib/hbmguardd.conf.d/50-bad.conf", "[Nope]\n",
		  "/usr-lib/hbmguardd.conf.d/50-bad.conf:1: unknown section [Nope]" },
		/* A range a drop-in makes both a node and an address. */
		{ "etc/hbmguardd.conf.d/50-bad.conf", "[Policy]\n[Range \"h\"]\nAddress=0x1000\nSize=4K\n",
		  "/etc/hbmguardd.conf.d/50-bad.conf:2: [Range \"h\"] takes NumaNode=, or Address= and Size=" },
		{ "etc/hbmguardd.conf.d/50-bad.conf", "[Range \"h\"]\nClaim=yes\n[Range \"h\"]\n",
		  "/etc/hbmguardd.conf.d/50-bad.conf:3: [Range \"h\"] twice" },
		{ "etc/hbmguardd.conf.d/50-bad.conf", "[Policy]\0\n",
		  "/etc/hbmguardd.conf.d/50-bad.conf: not a text file" },
	};
	char path[256];
	struct hbm_config before;
	size_t i;

	put("hbmguardd.conf", "[Policy]\nCEThreshold=5\n[Range \"h\"]\nNumaNode=1\n");
	put("usr-lib/hbmguardd.conf.d/10-good.conf", "[Policy]\nRetireLimit=3\n");
	put("usr-lib/hbmguardd.conf.d/90-good.conf", "[Policy]\nCEWindow=1h\n");
	ck_assert_int_eq(load_tree(), 0);
	before = c;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i].rel, bad[i].text);
		if (strstr(bad[i].message, "not a text file")) {	/* its NUL */
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s", root, bad[i].rel);
			f = fopen(path, "w");
			fwrite("[Policy]\0\n", 1, 10, f);
			fclose(f);
		}
		ck_assert_int_eq(load_tree(), -EINVAL);
		ck_assert_msg(!strncmp(err, root, strlen(root)) &&
			      !strcmp(err + strlen(root), bad[i].message),
			      "got '%s', expected '%s'", err, bad[i].message);
		ck_assert_msg(!memcmp(&c, &before, sizeof(c)), "changed by %s", bad[i].rel);
		snprintf(path, sizeof(path), "%s/%s", root, bad[i].rel);
		unlink(path);
	}
	/* A drop-in's range on the node of the main file's: both files named. */
	put("etc/hbmguardd.conf.d/50-bad.conf", "\n[Range \"i\"]\nNumaNode=1\n");
	ck_assert_int_eq(load_tree(), -EINVAL);
	snprintf(path, sizeof(path), "%s/etc/hbmguardd.conf.d/50-bad.conf:2: [Range \"i\"]: "
		 "NumaNode=1 is [Range \"h\"]'s (%s/hbmguardd.conf:3)", root, root);
	ck_assert_msg(!strcmp(err, path), "got '%s', expected '%s'", err, path);
	ck_assert(!memcmp(&c, &before, sizeof(c)));
	snprintf(path, sizeof(path), "%s/etc/hbmguardd.conf.d/50-bad.conf", root);
	unlink(path);
	/* What cannot be read is an error, not passed over. */
	link_to("nowhere.conf", "etc/hbmguardd.conf.d/60-dangling.conf");
	ck_assert_int_eq(load_tree(), -ENOENT);
	ck_assert_msg(strstr(err, "/etc/hbmguardd.conf.d/60-dangling.conf: No such file"), "%s", err);
	ck_assert(!memcmp(&c, &before, sizeof(c)));
	snprintf(path, sizeof(path), "%s/etc/hbmguardd.conf.d/60-dangling.conf", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run/hbmguardd.conf.d", root);
	rmdir(path);
	put("run/hbmguardd.conf.d", "a file, not a directory");
	ck_assert_int_eq(load_tree(), -ENOTDIR);
	ck_assert_msg(strstr(err, "/run/hbmguardd.conf.d: Not a directory"), "%s", err);
	unlink(path);
	/* A bad main file: named, the drop-ins not read. */
	put("hbmguardd.conf", "[Policy]\nCEThreshold=0\n");
	ck_assert_int_eq(load_tree(), -EINVAL);
	ck_assert_msg(strstr(err, "/hbmguardd.conf:2: CEThreshold: 0 is out of range"), "%s", err);
	ck_assert(!memcmp(&c, &before, sizeof(c)));
}
END_TEST

/* hbmguardd -c FILE: FILE.d/ beside it, and FILE must be there. */
START_TEST(dropin_given_file)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/my.conf", root);
	put("my.conf.d/20-b.conf", "[Policy]\nCEThreshold=20\n");
	ck_assert_int_eq(hbm_config_load(path, &c, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "/my.conf: No such file"), "%s", err);
	put("my.conf", "[Policy]\nCEThreshold=5\nCEWindow=1h\n");
	put("my.conf.d/10-a.conf", "[Policy]\nCEWindow=2h\n");
	put("hbmguardd.conf.d/30-c.conf", UNREAD);	/* not this file's */
	ck_assert_msg(hbm_config_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.policy.ce_threshold, 20);
	ck_assert_uint_eq(c.policy.ce_window, 7200);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, defaults_and_full_file);
	tcase_add_test(tc, time_units);
	tcase_add_test(tc, time_units_bad);
	tcase_add_test(tc, recovery_deadlines);
	tcase_add_test(tc, cluster_keys);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, too_many_devices);
	tcase_add_test(tc, bytes_syntax);
	tcase_add_test(tc, ranges);
	tcase_add_test(tc, too_many_ranges);
	tcase_add_test(tc, load_from_file);
	tcase_add_test(tc, load_what_is_not_a_file);
	suite_add_tcase(s, tc);
	tc = tcase_create("dropins");
	tcase_add_checked_fixture(tc, tree_setup, tree_teardown);
	tcase_add_test(tc, dropin_order);
	tcase_add_test(tc, dropin_masking);
	tcase_add_test(tc, metrics_listen);
	tcase_add_test(tc, scheduler_keys);
	tcase_add_test(tc, dropin_bad);
	tcase_add_test(tc, dropin_given_file);
	suite_add_tcase(s, tc);
	return s;
}
