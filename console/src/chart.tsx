// Time series with uPlot (about 20 KB gzipped, canvas; see docs/console.md), loaded only by the
// pages that draw one.
import { useEffect, useRef } from 'preact/hooks';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];
/** Whole steps (1, 2, 5, 10, 20, 25, 50, …) for a y axis of counts: no "2.5 occurrences". */
const WHOLE = Array.from({ length: 13 }, (_, e) => [1, 2, 2.5, 5].map((m) => m * 10 ** e))
  .flat()
  .filter(Number.isInteger);

export function LineChart({ times, series, bars, title }: { times: number[]; series: { label: string; values: number[] }[]; bars?: boolean; title: string }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: { destroy(): void } | undefined;
    let live = true;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      if (!live || !el.current) return;
      // The content box: clientWidth counts the chart's padding (8 px a side), which the canvas must not overrun.
      const width = el.current.clientWidth - 16 || 800;
      // The answers' buckets are UTC days (the console asks in UTC): the axis says the same days as the table.
      const step = times.length > 1 ? Math.min(...times.slice(1).map((t, i) => t - times[i]!)) : 86_400;
      const daily = step >= 86_400;
      const n = series.length;
      plot = new UPlot(
        {
          width,
          height: 280,
          // Room on the right for the last tick's label, centred on the plot's edge (it was cut in half).
          padding: [null, 24, null, null],
          tzDate: (ts: number) => UPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
          // Bars: half a bucket of room at each end, so the first and last bars are whole.
          ...(bars
            ? {
                scales: {
                  x: { time: true, range: (_u: unknown, min: number, max: number): [number, number] => [min - step / 2, max + step / 2] },
                  // Bars stand on zero.
                  y: { range: (_u: unknown, _min: number, max: number): [number, number] => [0, max > 0 ? max * 1.05 : 1] },
                },
              }
            : {}),
          series: [
            {},
            ...series.map((s, i) => ({
              label: s.label,
              stroke: COLORS[i % COLORS.length],
              width: 2,
              // Each series' bars narrower than the one before, drawn over it: every series stays visible.
              ...(bars
                ? { paths: UPlot.paths.bars!({ size: [(0.8 * (n - i)) / n, Infinity] }), fill: COLORS[i % COLORS.length] + 'cc', points: { show: false } }
                : {}),
            })),
          ],
          // A series of days gets day ticks, never hours.
          axes: [
            daily ? { incrs: [86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400, 28 * 86_400, 91 * 86_400, 365 * 86_400] } : {},
            { size: 60, ...(series.every((s) => s.values.every(Number.isInteger)) ? { incrs: WHOLE } : {}) },
          ],
        },
        [times, ...series.map((s) => s.values)],
        el.current,
      );
    });
    return () => {
      live = false;
      plot?.destroy();
    };
  }, [times, series, bars]);
  return <div class="chart" ref={el} role="img" aria-label={title} />;
}
