// SPDX-License-Identifier: Apache-2.0
/* The /ui pages: see ui_pages.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "exporter/ui_pages.h"
#include "policy/util/json_out.h"
#include "exporter/prom_server.h"
#include "ui_index.h" /* generated from exporter/ui_index.html */

/* success and percentiles of the table: over the last 30 s, as `top` */
#define UI_WINDOW_S 30

struct ui {
	pthread_mutex_t lock; /* one server thread today; cheap insurance */
	ui_fetch_fn fetch;
	void *ctx;
	struct rt_history h;
	struct prom_page pages[2];
};

static int write_top(void *ctx, FILE *out)
{
	struct ui *ui = ctx;
	struct rt_snap snap = {};
	char err[512];
	int ret;

	pthread_mutex_lock(&ui->lock);
	ret = ui->fetch(ui->ctx, &snap, err, sizeof(err));
	if (ret) {
		fputs("{\"error\":", out);
		json_out__str(out, err);
		fputs("}\n", out);
		ret = 0; /* the page shows the reason */
	} else {
		rt_history__add(&ui->h, &snap);
		rt_history__write_json(&ui->h, out, UI_WINDOW_S);
	}
	rt_snap__free(&snap);
	pthread_mutex_unlock(&ui->lock);
	return ret;
}

struct ui *ui__new(ui_fetch_fn fetch, void *ctx)
{
	struct ui *ui = calloc(1, sizeof(*ui));

	if (!ui)
		return NULL;
	pthread_mutex_init(&ui->lock, NULL);
	ui->fetch = fetch;
	ui->ctx = ctx;
	ui->pages[0] = (struct prom_page){
		.path = "/ui",
		.content_type = "text/html; charset=utf-8",
		.body = ui_index_html,
		.len = sizeof(ui_index_html),
	};
	ui->pages[1] = (struct prom_page){
		.path = "/ui/top.json",
		.content_type = "application/json",
		.write = write_top,
		.ctx = ui,
	};
	return ui;
}

void ui__free(struct ui *ui)
{
	if (!ui)
		return;
	rt_history__free(&ui->h);
	pthread_mutex_destroy(&ui->lock);
	free(ui);
}

const struct prom_page *ui__pages(struct ui *ui, size_t *n)
{
	*n = ui ? 2 : 0;
	return ui ? ui->pages : NULL;
}
