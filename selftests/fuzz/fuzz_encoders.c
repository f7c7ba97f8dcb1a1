// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP and Prometheus encoders on a store built from the input: metric
 * kinds, names, units, label keys and values (any bytes) and values
 * (any double: NaN, infinities, negative zero) all come from the fuzzer.
 */
#include "policy/model/metric_store.h"
#include "exporter/otlp_encode.h"
#include "exporter/prom_text.h"
#include "selftests/fuzz/fuzz_util.h"

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct input *in)
{
	uint8_t b = 0;

	if (in->n) {
		b = *in->p++;
		in->n--;
	}
	return b;
}

static double dbl(struct input *in)
{
	double d = 0;

	if (in->n >= sizeof(d)) {
		memcpy(&d, in->p, sizeof(d));
		in->p += sizeof(d);
		in->n -= sizeof(d);
	}
	return d;
}

/* A string of up to 15 bytes from the input, NUL-terminated. */
static const char *str(struct input *in, char *buf)
{
	size_t len = byte(in) % 16;

	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(byte(in) | 1); /* no NUL inside */
	buf[len] = 0;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const units[] = { "s", "ms",        "By",
					     "1", "{request}", "" };
	static const double bounds[] = { 0.1, 1, 10 };
	struct input in = { data, size };
	struct mstore_opts so = { .max_series_per_metric = 64,
				  .keep_delta = true };
	struct mstore *s = mstore__new(&so);
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	char names[4][16], lk[4][16], lv[4][16];
	int ids[4], nmetrics = byte(&in) % 4 + 1;
	uint64_t now = 1000000000ull;
	void *buf = NULL;
	size_t len = 0;
	char *text = NULL;
	size_t tlen = 0;
	FILE *out;

	if (!s || !e)
		abort();
	for (int i = 0; i < nmetrics; i++) {
		uint8_t k = byte(&in);
		struct mmetric_desc d = {
			.name = str(&in, names[i]),
			.unit = units[byte(&in) % 6],
			.instrument = (enum minstrument)(k % 4),
			.temporality = (k >> 2) & 1 ? MT_DELTA : MT_CUMULATIVE,
			.is_int = (k >> 3) & 1,
			.hist = (k >> 4) & 1 ? MH_EXPONENTIAL : MH_EXPLICIT,
			.bounds = (k >> 5) & 1 ? bounds : NULL,
			.nbounds = (k >> 5) & 1 ? 3 : 0,
			.exp_max_buckets = byte(&in) % 200,
			.exp_max_scale = (int8_t)byte(&in) % 21,
		};

		ids[i] = mstore__add_metric(s, &d);
	}
	while (in.n) {
		int m = byte(&in) % nmetrics;
		struct mlabel l[4];
		size_t nl = byte(&in) % 5;
		struct mseries *ser;
		double v;

		for (size_t j = 0; j < nl; j++) {
			l[j].key = str(&in, lk[j]);
			l[j].value = str(&in, lv[j]);
		}
		v = dbl(&in);
		now += byte(&in) * 1000000ull;
		if (ids[m] < 0)
			continue;
		mstore__lock(s);
		ser = mstore__series(s, ids[m], l, nl);
		if (ser) {
			mseries__add(ser, v, now);
			mseries__set(ser, v, now);
			mseries__observe(ser, v, now);
		}
		mstore__unlock(s);
		if (byte(&in) % 8 == 0) { /* export mid-way: deltas reset */
			if (otlp_encode__store(e, s, now, &buf, &len) > 0)
				free(buf);
			buf = NULL;
		}
	}
	if (otlp_encode__store(e, s, now, &buf, &len) > 0)
		free(buf);
	for (int fmt = 0; fmt < 2; fmt++) {
		out = open_memstream(&text, &tlen);
		if (!out)
			abort();
		prom_text__write(out, s, (enum prom_format)fmt, now);
		fclose(out);
		free(text);
		text = NULL;
	}
	otlp_encoder__free(e);
	mstore__free(s);
	return 0;
}
