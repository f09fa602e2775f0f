import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api.ts';
import { Button, ErrorNotice, useAction } from '../../ui.tsx';

/** Small pieces the server page's own tabs share (overview and console). */

/** Re-renders every `ms` (for "N s ago"). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** "12 s ago", "3 min ago", "2 h ago". */
export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/** Milliseconds of uptime as "2 d 3 h", "4 h 5 min", "6 min 7 s". */
export function uptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min ${s % 60} s`;
}

export function CopyButton(props: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const copy = () =>
    void navigator.clipboard?.writeText(props.value).then(
      () => {
        setCopied(true);
        clearTimeout(timer.current);
        timer.current = setTimeout(() => setCopied(false), 2000);
      },
      () => setCopied(false),
    );
  return (
    <Button onClick={copy} aria-label={copied ? `${props.label} copied` : props.label}>
      {copied ? 'Copied' : 'Copy'}
    </Button>
  );
}

const SIGNALS = [
  { signal: 'start', label: 'Start', kind: 'primary' },
  { signal: 'stop', label: 'Stop', kind: 'plain' },
  { signal: 'restart', label: 'Restart', kind: 'plain' },
  { signal: 'kill', label: 'Kill', kind: 'danger' },
] as const;

type Signal = (typeof SIGNALS)[number]['signal'];

/**
 * Start, Stop, Restart, Kill (POST /v1/servers/:id/power): each button busy while its signal is
 * sent; the API's refusal (409 suspended or installing, 402 without credit) shown as it said it.
 */
export function PowerButtons(props: { serverId: string; onSent?: (signal: Signal) => void }) {
  const [sent, setSent] = useState<Signal | null>(null);
  const [pending, setPending] = useState<Signal | null>(null);
  const action = useAction(async (signal: Signal) => {
    setPending(signal);
    setSent(null);
    try {
      await ok(api().POST('/v1/servers/{id}/power', { params: { path: { id: props.serverId } }, body: { signal } }));
      setSent(signal);
      props.onSent?.(signal);
    } finally {
      setPending(null);
    }
  });
  return (
    <div class="power">
      <div class="actions">
        {SIGNALS.map((s) => (
          <Button
            key={s.signal}
            kind={s.kind}
            busy={pending === s.signal}
            disabled={pending !== null}
            onClick={() => void action.run(s.signal)}
          >
            {s.label}
          </Button>
        ))}
      </div>
      <p class="muted power-sent" role="status">
        {sent ? `${SIGNALS.find((s) => s.signal === sent)?.label} sent; the state follows in a few seconds.` : ''}
      </p>
      <ErrorNotice error={action.error} onDismiss={action.clearError} />
    </div>
  );
}
