import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { bytes, cents, millicents } from '../../format.ts';
import { Loading, useLoad } from '../../ui.tsx';

type Window = 'hour' | 'day' | 'week';
type Point = Schema<'UsagePoint'>;

/** A graph's series: what it shows of each point, and how a value reads. */
interface Series {
  id: string;
  title: string;
  value: (p: Point) => number | null;
  format: (v: number) => string;
}

const SERIES: Series[] = [
  { id: 'cpu', title: 'CPU', value: (p) => p.cpuAbsolute, format: (v) => `${v.toFixed(1)} %` },
  { id: 'memory', title: 'Memory', value: (p) => p.memoryBytes, format: bytes },
  { id: 'disk', title: 'Disk', value: (p) => p.diskBytes, format: bytes },
  { id: 'network-in', title: 'Network in', value: (p) => p.networkRxBytesPerSecond, format: (v) => `${bytes(v)}/s` },
  { id: 'network-out', title: 'Network out', value: (p) => p.networkTxBytesPerSecond, format: (v) => `${bytes(v)}/s` },
];

/** The API keeps one sample per server per five minutes (shared/servers/usage-history.ts SAMPLE_BUCKET_MS). */
const SAMPLE_BUCKET_MS = 5 * 60_000;

/**
 * CPU, memory, disk and network over the last hour, day or week (GET /v1/servers/:id/usage/history,
 * no panel call). Our own SVG, no chart library: each graph is an image with a text summary, and
 * its numbers are a table behind a toggle, for keyboards and screen readers alike.
 *
 * They refresh themselves with the live usage above them (read every 10 s while the page is
 * visible, paused while it is hidden): `liveAsOf` is the time of the live state it shows, and a
 * live-state refresh is what keeps a sample. The last hour is read again at each new live state
 * (at most every 20 s, the live state's interval: a dozen points), the day and the week when the
 * live state enters a new five-minute bucket. History reads are database reads, never panel calls;
 * nothing is read while the page is hidden or shows no live usage.
 */
export function UsageGraphs(props: { serverId: string; liveAsOf?: string | undefined }) {
  const [window, setWindow] = useState<Window>('hour');
  const live = props.liveAsOf;
  const refreshed = live && window !== 'hour' ? Math.floor(Date.parse(live) / SAMPLE_BUCKET_MS) : live;
  const history = useLoad(
    () => ok(api().GET('/v1/servers/{id}/usage/history', { params: { path: { id: props.serverId }, query: { window } } })),
    [props.serverId, window, refreshed],
  );
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">Usage history</h2>
      <fieldset class="window-pick">
        <legend>Window</legend>
        {(['hour', 'day', 'week'] as const).map((w) => (
          <label key={w}>
            <input type="radio" name="usage-window" value={w} checked={window === w} onChange={() => setWindow(w)} /> Last {w}
          </label>
        ))}
      </fieldset>
      <Loading state={history} label="Reading usage history…">
        {(h) =>
          h.points.length === 0 ? (
            <p class="muted" data-testid="usage-history-empty">
              No samples in the last {h.window} yet: they are kept while the server's page is open (one every 5 minutes), and shown here as
              they come.
            </p>
          ) : (
            <div class="graphs" data-testid="usage-graphs">
              {SERIES.map((s) => (
                <Graph key={s.id} series={s} history={h} />
              ))}
            </div>
          )
        }
      </Loading>
    </section>
  );
}

const W = 300;
const H = 90;

function Graph({ series, history }: { series: Series; history: Schema<'UsageHistory'> }) {
  const [table, setTable] = useState(false);
  const from = Date.parse(history.from);
  const span = Math.max(1, Date.parse(history.to) - from);
  const known = history.points.flatMap((p) => {
    const v = series.value(p);
    return v === null ? [] : [{ t: Date.parse(p.at), v, at: p.at }];
  });
  const max = Math.max(...known.map((k) => k.v), 0);
  const top = max > 0 ? max * 1.1 : 1;
  const xy = known.map((k) => ({ ...k, x: ((k.t - from) / span) * W, y: H - (k.v / top) * H }));
  const path = xy.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
  const last = known.at(-1);
  const summary = known.length
    ? `${series.title} over the last ${history.window}: ${known.length} points, highest ${series.format(max)}, latest ${series.format(last!.v)}.`
    : `${series.title} over the last ${history.window}: no values yet.`;
  const tableId = `usage-table-${series.id}`;
  const summaryId = `usage-summary-${series.id}`;
  return (
    <figure class="graph card" data-testid={`graph-${series.id}`}>
      <figcaption>
        <strong>{series.title}</strong> <span class="muted">{last ? series.format(last.v) : '—'}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={summaryId} preserveAspectRatio="none">
        <title>{summary}</title>
        <line x1="0" y1={H} x2={W} y2={H} class="axis" />
        {path ? <path d={path} class="line" /> : null}
        {xy.length === 1 ? <circle cx={xy[0]!.x} cy={xy[0]!.y} r="3" class="dot" /> : null}
      </svg>
      <p class="muted graph-summary" id={summaryId}>
        {summary}
      </p>
      <button type="button" class="link" aria-expanded={table} aria-controls={tableId} onClick={() => setTable(!table)}>
        {table ? 'Hide' : 'Show'} the numbers
      </button>
      {table ? (
        <div class="table-wrap" id={tableId}>
          <table>
            <caption class="visually-hidden">{series.title}</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">{series.title}</th>
              </tr>
            </thead>
            <tbody>
              {known.map((k) => (
                <tr key={k.at}>
                  <td>{new Date(k.at).toLocaleString()}</td>
                  <td>{series.format(k.v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </figure>
  );
}

/** Cost so far this month from the ledger, and the projection to the month's end (GET /v1/servers/:id/cost). */
export function CostThisMonth(props: { serverId: string }) {
  const cost = useLoad(() => ok(api().GET('/v1/servers/{id}/cost', { params: { path: { id: props.serverId } } })), [props.serverId]);
  return (
    <section class="card" aria-labelledby="cost-title">
      <h2 id="cost-title">Cost this month</h2>
      <Loading state={cost} label="Reading this month's charges…">
        {(c) => (
          <>
            <dl class="props">
              <dt>So far ({c.month})</dt>
              <dd data-testid="cost-so-far">{cents(c.soFarCents)}</dd>
              <dt>By the month's end</dt>
              <dd data-testid="cost-projected">{cents(c.projectedCents)}</dd>
            </dl>
            <p class="hint">
              So far: the hourly charges booked to your ledger. By the month's end: {c.hoursToCome} more hours
              {c.priceMillicentsPerHour ? ` at ${millicents(c.priceMillicentsPerHour)}` : ''}, if nothing changes.
            </p>
          </>
        )}
      </Loading>
    </section>
  );
}
