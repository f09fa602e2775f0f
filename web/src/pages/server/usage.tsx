import { useEffect } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { bytes, mb } from '../../format.ts';
import { Button, ErrorNotice, Spinner, useLoad } from '../../ui.tsx';
import { PowerWord } from '../../status-badges.tsx';
import { age, uptime, useNow } from './parts.tsx';

/**
 * GET /v1/servers/:id/resources every 10 s while the page is visible; `onState` hears the time of
 * each live state it shows (the usage graphs read their history again when it is a new sample's).
 */
export function Usage(props: { serverId: string; ramMb: number; diskMb: number; onState?: (asOf: string) => void }) {
  const usage = useLoad(() => ok(api().GET('/v1/servers/{id}/resources', { params: { path: { id: props.serverId } } })), [props.serverId]);
  const now = useNow();
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void usage.reload();
    }, 10_000);
    return () => clearInterval(timer);
  }, [usage.reload]);
  const u = usage.data;
  const onState = props.onState;
  useEffect(() => {
    if (u?.asOf) onState?.(u.asOf);
  }, [u?.asOf, onState]);
  if (!u) return usage.error ? <ErrorNotice error={usage.error} /> : <Spinner label="Reading live usage…" />;
  // The specification's shape of live usage: the panel's stats object (`attributes`), snake_case as the panel names it.
  const r = u.attributes.resources;
  return (
    <>
      {usage.error ? <ErrorNotice error={usage.error} /> : null}
      <dl class="cards usage" data-testid="usage">
        <div class="stat">
          <dt>State</dt>
          <dd>
            <PowerWord state={u.attributes.current_state} />
          </dd>
        </div>
        <div class="stat">
          <dt>CPU</dt>
          <dd>{r ? `${r.cpu_absolute.toFixed(1)} %` : '—'}</dd>
        </div>
        <div class="stat">
          <dt>Memory</dt>
          <dd>
            {r ? bytes(r.memory_bytes) : '—'} <span class="of">of {mb(props.ramMb)}</span>
          </dd>
        </div>
        <div class="stat">
          <dt>Disk</dt>
          <dd>
            {r ? bytes(r.disk_bytes) : '—'} <span class="of">of {mb(props.diskMb)}</span>
          </dd>
        </div>
        <div class="stat">
          <dt>Network in / out</dt>
          <dd>{r ? `${bytes(r.network_rx_bytes)} / ${bytes(r.network_tx_bytes)}` : '—'}</dd>
        </div>
        <div class="stat">
          <dt>Uptime</dt>
          <dd>{r && r.uptime > 0 ? uptime(r.uptime) : '—'}</dd>
        </div>
      </dl>
      <p class="muted">
        Usage as of {age(u.asOf, now)}; refreshed every 10 s.{' '}
        <Button busy={usage.loading} onClick={() => void usage.reload()}>
          Refresh usage
        </Button>
      </p>
    </>
  );
}
