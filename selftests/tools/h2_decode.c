// SPDX-License-Identifier: Apache-2.0
/*
 * h2_decode: run the agent's HTTP/2 decoder (agent/h2/) over connections
 * recorded by selftests/integration/h2relay.py and print one line per
 * exchange, so a test can hold them against what a real client and server
 * did. Also prints how long decoding took.
 *
 *   h2_decode [-q [-n N]] FILE.cap...
 *     -q    only the summary (times the decoding alone)
 *     -n N  decode each connection N times (warm caches; rates are per pass)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/h2/conn.h"
#include "agent/h2/detect.h"

struct rec {
	char dir; /* 'c', 's', 'x' */
	uint64_t ns;
	size_t len;
	uint8_t *b;
};

struct tally {
	int conn;
	int quiet;
	uint64_t exchanges, aborted;
};

static void on_ex(void *ctx, const struct h2_exchange *ex)
{
	struct tally *t = ctx;

	if (t->quiet == 2)
		return;
	t->exchanges++;
	t->aborted += !!(ex->flags & 0x01);
	if (t->quiet)
		return;
	printf("conn=%d stream=%u method=%s authority=%s path=%s status=%u grpc=%d "
	       "unknown=0x%x flags=0x%x dur_ns=%llu req_bytes=%llu resp_bytes=%llu\n",
	       t->conn, ex->stream_id, ex->method_str[0] ? ex->method_str : "-",
	       ex->authority[0] ? ex->authority : "-",
	       ex->path[0] ? ex->path : "-", ex->status, ex->grpc_status,
	       ex->unknown, ex->flags,
	       (unsigned long long)(ex->end_ns - ex->start_ns),
	       (unsigned long long)ex->req_bytes,
	       (unsigned long long)ex->resp_bytes);
}

static int load(const char *path, struct rec **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	struct rec *r = NULL;
	size_t cnt = 0, cap = 0;
	char d;
	unsigned long long ns;
	size_t len;

	if (!f) {
		fprintf(stderr, "h2_decode: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fscanf(f, "%c %llu %zu\n", &d, &ns, &len) == 3) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			r = realloc(r, cap * sizeof(*r));
		}
		r[cnt] = (struct rec){ d, ns, len, malloc(len ? len : 1) };
		if (len && fread(r[cnt].b, 1, len, f) != len)
			break;
		cnt++;
	}
	fclose(f);
	*out = r;
	*n = cnt;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The first n bytes of one direction, joined. */
static size_t gather(struct rec *r, size_t n, char dir, uint8_t *buf,
		     size_t cap)
{
	size_t len = 0;

	for (size_t i = 0; i < n && len < cap; i++) {
		size_t k;

		if (r[i].dir != dir)
			continue;
		k = r[i].len < cap - len ? r[i].len : cap - len;
		memcpy(buf + len, r[i].b, k);
		len += k;
	}
	return len;
}

int main(int argc, char **argv)
{
	uint64_t bytes = 0, conns = 0, h1 = 0;
	struct h2_conn_stats tot = {};
	struct tally t = {};
	double spent = 0;

	int first = 1;

	int reps = 1;

	if (argc > first && !strcmp(argv[first], "-q")) {
		t.quiet = 1;
		first++;
	}
	if (t.quiet && argc > first + 1 && !strcmp(argv[first], "-n")) {
		reps = atoi(argv[first + 1]);
		first += 2;
		if (reps < 1)
			reps = 1;
	}
	for (int a = first; a < argc; a++) {
		static uint8_t head[65536];
		struct h2_upgrade_head up;
		struct h2_upgrade_req ur;
		struct h2_conn_opts o = { .from_start = true,
					  .on_exchange = on_ex,
					  .ctx = &t };
		size_t skip[2] = { 0, 0 }, n = 0, hl;
		struct rec *r = NULL;
		struct h2_conn *c;
		struct h2_conn_stats st;
		enum h2_detect det;
		uint64_t end_ns = 0;
		double t0;

		if (load(argv[a], &r, &n))
			return 1;
		t.conn = a;
		hl = gather(r, n, 'c', head, sizeof(head));
		det = h2_detect__client(head, hl, &up);
		if (det == H2_DETECT_UPGRADE) {
			long sw;

			hl = gather(r, n, 's', head, sizeof(head));
			sw = h2_detect__switched(head, hl);
			if (sw <= 0) {
				h1++;
				continue;
			}
			if (up.body_len < 0) {
				fprintf(stderr,
					"h2_decode: %s: chunked upgrade request not followed\n",
					argv[a]);
				continue;
			}
			skip[0] = up.head_len + up.body_len;
			skip[1] = sw;
			ur = (struct h2_upgrade_req){ up.method, up.path,
						      up.authority, r[0].ns,
						      up.head_len };
			o.upgrade = &ur;
			o.from_start = false;
		} else if (det != H2_DETECT_PREFACE) {
			h1++;
			continue;
		}
		conns++;
		for (int rep = 0; rep < reps; rep++) {
			size_t sk[2] = { skip[0], skip[1] };

			if (rep)
				t.quiet =
					2; /* count the exchanges of the first pass only */

			t0 = now_s();
			c = h2_conn__new(&o);
			if (!c)
				return 1;
			for (size_t i = 0; i < n; i++) {
				int d = r[i].dir == 'c' ? H2_FROM_CLIENT
							: H2_FROM_SERVER;
				size_t off = 0;

				if (r[i].dir == 'x') {
					end_ns = r[i].ns;
					continue;
				}
				if (sk[d]) {
					off = sk[d] < r[i].len ? sk[d]
							       : r[i].len;
					sk[d] -= off;
				}
				if (rep == 0)
					bytes += r[i].len - off;
				if (r[i].len > off &&
				    h2_conn__feed(c, d, r[i].b + off,
						  r[i].len - off, r[i].ns)) {
					fprintf(stderr,
						"h2_decode: %s: not HTTP/2 at record %zu\n",
						argv[a], i);
					break;
				}
			}
			h2_conn__stats(c, &st);
			h2_conn__free(c, end_ns ? end_ns : r[n - 1].ns);
			spent += now_s() - t0;
		}
		if (t.quiet == 2)
			t.quiet = 1;
		tot.exchanges += st.exchanges;
		tot.unknown_fields += st.unknown_fields;
		tot.hpack_errors += st.hpack_errors;
		tot.push_promises += st.push_promises;
		tot.untracked_streams += st.untracked_streams;
		for (size_t i = 0; i < n; i++)
			free(r[i].b);
		free(r);
	}
	printf("summary connections=%llu http1=%llu exchanges=%llu aborted=%llu "
	       "unknown_fields=%llu hpack_errors=%llu untracked=%llu bytes=%llu "
	       "decode_ns_per_exchange=%.0f decode_ns_per_byte=%.2f\n",
	       (unsigned long long)conns, (unsigned long long)h1,
	       (unsigned long long)t.exchanges, (unsigned long long)t.aborted,
	       (unsigned long long)tot.unknown_fields,
	       (unsigned long long)tot.hpack_errors,
	       (unsigned long long)tot.untracked_streams,
	       (unsigned long long)bytes,
	       t.exchanges ? spent * 1e9 / reps / t.exchanges : 0,
	       bytes ? spent * 1e9 / reps / bytes : 0);
	return 0;
}
