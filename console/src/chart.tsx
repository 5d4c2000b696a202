// Time series with uPlot (about 20 KB gzipped, canvas; see docs/console.md), loaded only by the
// pages that draw one.
import { useEffect, useRef } from 'preact/hooks';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

export function LineChart({ times, series, bars, title }: { times: number[]; series: { label: string; values: number[] }[]; bars?: boolean; title: string }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: { destroy(): void } | undefined;
    let live = true;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      if (!live || !el.current) return;
      const width = el.current.clientWidth || 800;
      plot = new UPlot(
        {
          width,
          height: 280,
          series: [
            {},
            ...series.map((s, i) => ({
              label: s.label,
              stroke: COLORS[i % COLORS.length],
              width: 2,
              ...(bars ? { paths: UPlot.paths.bars!({ size: [0.6, 40] }), fill: COLORS[i % COLORS.length] + '88' } : {}),
            })),
          ],
          axes: [{}, { size: 60 }],
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
