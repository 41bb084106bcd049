/*
 * latency_svg.c: the timeline and the lead histogram as SVG (latency_svg.h).
 *
 * Written by hand rather than with a plotting library: the picture is a few hundred
 * rectangles and circles, and SVG text is easy to check in a test (a browser counts the
 * rows). Positions are computed in one pass to find the axis (the latest mark over every
 * row), then the rows are written; every number is printed with one decimal so the file
 * is the same for the same measurements.
 */
#include "agent/latency_svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 960, LEFT = 260, RIGHT = 30, ROW_H = 18, TOP = 56, HIST_H = 220 };

static void put(ts_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(ts_buf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) ts_buf_append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_text(ts_buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': ts_buf_puts(b, "&amp;"); break;
      case '<': ts_buf_puts(b, "&lt;"); break;
      case '>': ts_buf_puts(b, "&gt;"); break;
      case '"': ts_buf_puts(b, "&quot;"); break;
      case '\'': ts_buf_puts(b, "&apos;"); break;
      default:
        if ((unsigned char)*s >= 0x20) ts_buf_putc(b, *s); /* XML 1.0 forbids most C0 */
    }
  }
}

/* The request's time origin: its send time, or its first event when that is not known. */
static uint64_t origin(const ts_lat_request *r) {
  return r->sent_us ? r->sent_us : r->first_event_us;
}

static double at_ms(const ts_lat_request *r, uint64_t t) {
  uint64_t o = origin(r);
  return t && o && t >= o ? (double)(t - o) / 1e3 : NAN;
}

static const struct {
  const char *name, *color;
} marks[] = {{"sent", "#555"},       {"first byte", "#1f77b4"}, {"name", "#9467bd"},
             {"label", "#2ca02c"},   {"arguments complete", "#d62728"},
             {"result", "#ff7f0e"}};

static void mark_times(const ts_lat_request *r, const ts_lat_call *c, double t[6]) {
  t[0] = r->sent_us ? 0 : NAN;
  t[1] = at_ms(r, r->first_byte_us);
  t[2] = at_ms(r, c->name_us);
  t[3] = c->has_label ? at_ms(r, c->label_us) : NAN;
  t[4] = c->ready ? at_ms(r, c->args_us) : NAN;
  t[5] = at_ms(r, c->result_us);
}

static void histogram(const ts_lat_set *s, ts_buf *b, int y0) {
  size_t n = 0;
  double *v = ts_lat_values(s, TS_LAT_LEAD_MS, &n);
  if (v) ts_lat_sort(v, &n);
  put(b, "<g class=\"lead-distribution\" transform=\"translate(0,%d)\">\n", y0);
  put(b, "<text x=\"%d\" y=\"16\" font-size=\"14\" font-weight=\"bold\">Lead of the progress "
         "label (lead_ms), %zu labelled call%s</text>\n", LEFT - 200, n, n == 1 ? "" : "s");
  if (!n) {
    put(b, "<text x=\"%d\" y=\"60\" font-size=\"12\">no call had a progress label and complete "
           "arguments</text>\n</g>\n", LEFT - 200);
    free(v);
    return;
  }
  double lo = v[0], hi = v[n - 1];
  if (hi <= lo) hi = lo + 1;
  size_t bins[TS_LAT_SVG_BINS] = {0}, top = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = (size_t)((v[i] - lo) / (hi - lo) * TS_LAT_SVG_BINS);
    if (k >= TS_LAT_SVG_BINS) k = TS_LAT_SVG_BINS - 1;
    if (++bins[k] > top) top = bins[k];
  }
  int x0 = LEFT - 200, w = WIDTH - RIGHT - x0, h = HIST_H - 70, base = 30 + h;
  double bw = (double)w / TS_LAT_SVG_BINS;
  for (int k = 0; k < TS_LAT_SVG_BINS; k++) {
    double bh = (double)bins[k] / (double)top * h;
    double from = lo + (hi - lo) * k / TS_LAT_SVG_BINS, to = lo + (hi - lo) * (k + 1) / TS_LAT_SVG_BINS;
    put(b, "<rect class=\"bin\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
           "fill=\"#2ca02c\" fill-opacity=\"0.7\"><title>%.1f to %.1f ms: %zu</title></rect>\n",
        x0 + k * bw + 1, base - bh, bw - 2, bh, from, to, bins[k]);
  }
  put(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", x0, base, x0 + w, base);
  put(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.1f ms</text>\n", x0, base + 14, lo);
  put(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.1f ms</text>\n", x0 + w,
      base + 14, hi);
  static const struct {
    const char *name;
    double q;
  } qs[] = {{"p50", 0.5}, {"p90", 0.9}};
  for (size_t i = 0; i < 2; i++) {
    double q = ts_lat_quantile(v, n, qs[i].q), x = x0 + (q - lo) / (hi - lo) * w;
    /* a label near either edge is anchored inside the picture */
    const char *anchor = x > x0 + w - 60 ? "end" : x < x0 + 60 ? "start" : "middle";
    put(b, "<line class=\"%s\" x1=\"%.1f\" y1=\"28\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" "
           "stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" font-size=\"11\" "
           "text-anchor=\"%s\">%s %.1f ms</text>\n",
        qs[i].name, x, x, base, x, 26 - 12 * (int)i, anchor, qs[i].name, q);
  }
  put(b, "</g>\n");
  free(v);
}

int ts_lat_svg(const ts_lat_set *s, const char *title, ts_buf *out) {
  size_t rows = 0, total = 0;
  double span = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t j = 0; j < s->v[i].ncalls; j++) {
      total++;
      double t[6];
      mark_times(&s->v[i], &s->v[i].calls[j], t);
      for (int k = 0; k < 6; k++)
        if (!isnan(t[k]) && t[k] > span) span = t[k];
    }
  rows = total < TS_LAT_SVG_MAX_ROWS ? total : TS_LAT_SVG_MAX_ROWS;
  if (span <= 0) span = 1;
  int timeline_h = (int)rows * ROW_H + 40;
  int height = TOP + timeline_h + HIST_H + 20;
  put(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
           "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
      WIDTH, height, WIDTH, height);
  put(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"10\" y=\"20\" "
           "font-size=\"16\" font-weight=\"bold\">");
  put_text(out, title ? title : "toolstream bench");
  put(out, "</text>\n");
  /* the legend */
  int lx = 10;
  for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
    put(out, "<circle cx=\"%d\" cy=\"38\" r=\"4\" fill=\"%s\"/><text x=\"%d\" y=\"42\" "
             "font-size=\"11\">%s</text>\n", lx + 4, marks[k].color, lx + 12, marks[k].name);
    lx += 24 + 7 * (int)strlen(marks[k].name);
  }
  int plot_w = WIDTH - RIGHT - LEFT;
  put(out, "<g class=\"timeline\" transform=\"translate(0,%d)\">\n", TOP);
  size_t drawn = 0;
  for (size_t i = 0; i < s->n && drawn < rows; i++) {
    const ts_lat_request *r = &s->v[i];
    for (size_t j = 0; j < r->ncalls && drawn < rows; j++, drawn++) {
      const ts_lat_call *c = &r->calls[j];
      double t[6];
      mark_times(r, c, t);
      int y = (int)drawn * ROW_H + ROW_H / 2;
      put(out, "<g class=\"call\" data-request=\"%zu\" data-call=\"", i);
      put_text(out, c->call_id);
      put(out, "\" data-tool=\"");
      put_text(out, c->tool);
      put(out, "\">\n<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">#%zu ",
          LEFT - 8, y + 4, i);
      put_text(out, c->tool);
      put(out, " [%u]</text>\n", c->index);
      double first = NAN, last = NAN;
      for (int k = 0; k < 6; k++) {
        if (isnan(t[k])) continue;
        if (isnan(first) || t[k] < first) first = t[k];
        if (isnan(last) || t[k] > last) last = t[k];
      }
      if (!isnan(first))
        put(out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"6\" fill=\"#ccc\"/>\n",
            LEFT + first / span * plot_w, y - 3, (last - first) / span * plot_w);
      for (int k = 0; k < 6; k++) {
        if (isnan(t[k])) continue;
        put(out, "<circle class=\"mark\" data-mark=\"%s\" cx=\"%.1f\" cy=\"%d\" r=\"4\" "
                 "fill=\"%s\"><title>%s at %.1f ms</title></circle>\n",
            marks[k].name, LEFT + t[k] / span * plot_w, y, marks[k].color, marks[k].name, t[k]);
      }
      put(out, "</g>\n");
    }
  }
  int axis_y = (int)rows * ROW_H + 8;
  put(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", LEFT, axis_y,
      LEFT + plot_w, axis_y);
  for (int k = 0; k <= 4; k++)
    put(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.1f ms</text>\n",
        LEFT + plot_w * k / 4.0, axis_y + 14, span * k / 4);
  if (total > rows)
    put(out, "<text class=\"more\" x=\"10\" y=\"%d\" font-size=\"11\">%zu more calls not "
             "drawn</text>\n", axis_y + 28, total - rows);
  put(out, "</g>\n");
  histogram(s, out, TOP + timeline_h);
  put(out, "</svg>\n");
  return out->err;
}
