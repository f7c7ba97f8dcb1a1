/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /ui pages served beside /metrics (prom_server's pages, so whatever
 * guards /metrics guards them): /ui, a static page compiled into the binary
 * (exporter/ui_index.html: plain JS and inline SVG, no external assets), and
 * /ui/top.json, the view of `milometer top` plus the history the charts
 * draw (route_view.h's rt_history, sampled when the page asks).
 */
#ifndef MM_EXPORTER_UI_PAGES_H
#define MM_EXPORTER_UI_PAGES_H

#include <stddef.h>

#include "exporter/route_view.h"

struct prom_page;
struct ui;

/* Fill snap with cumulative figures: the agent's store, or Prometheus. */
typedef int (*ui_fetch_fn)(void *ctx, struct rt_snap *snap, char *err,
			   size_t errlen);

struct ui *ui__new(ui_fetch_fn fetch, void *ctx);
void ui__free(struct ui *ui);
/* The pages to give prom_server_opts; they live as long as ui. */
const struct prom_page *ui__pages(struct ui *ui, size_t *n);

#endif /* MM_EXPORTER_UI_PAGES_H */
