import { useEffect, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { cents, millicents, mb, signed } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { Button, ErrorNotice, Notice, Spinner, useAction } from '../../ui.tsx';

type Server = Schema<'ServerWithLive'>;
type Size = { ramMb: number; cpuPercent: number; diskMb: number };

/** The resize form's fields, each with the smallest value the API takes. */
const SIZE_FIELDS: { key: keyof Size; id: string; label: string; hint: string; min: number }[] = [
  { key: 'ramMb', id: 'resize-ram', label: 'Memory (MB)', hint: 'At least 256.', min: 256 },
  { key: 'cpuPercent', id: 'resize-cpu', label: 'CPU (%)', hint: '100 = one core; at least 25.', min: 25 },
  { key: 'diskMb', id: 'resize-disk', label: 'Disk (MB)', hint: 'At least 512.', min: 512 },
];

/** "+$0.01234/h", "−$0.005/h" or "no change": a price difference in millicents per hour. */
export function signedPerHour(diff: number): string {
  if (diff === 0) return 'no change';
  return `${signed(diff, millicents)}/h`;
}

/**
 * Resize: the three sizes, the price difference from the API's quote of the new size (same egg,
 * instance and region) against the server's own hourly price, then PATCH after a confirmation.
 */
export function ResizeForm(props: { server: Server; reload: () => Promise<void> }) {
  const { server } = props;
  const [form, setForm] = useState({
    ramMb: String(server.resources.ramMb),
    cpuPercent: String(server.resources.cpuPercent),
    diskMb: String(server.resources.diskMb),
  });
  // A size changed elsewhere (another tab, the API) becomes the form's starting point again.
  const current = `${server.resources.ramMb}/${server.resources.cpuPercent}/${server.resources.diskMb}`;
  useEffect(() => {
    setForm({
      ramMb: String(server.resources.ramMb),
      cpuPercent: String(server.resources.cpuPercent),
      diskMb: String(server.resources.diskMb),
    });
  }, [current]);
  const size: Size | null = (() => {
    const n = { ramMb: Number(form.ramMb), cpuPercent: Number(form.cpuPercent), diskMb: Number(form.diskMb) };
    return Object.values(n).every((v) => Number.isInteger(v) && v > 0) ? n : null;
  })();
  const same =
    size !== null &&
    size.ramMb === server.resources.ramMb &&
    size.cpuPercent === server.resources.cpuPercent &&
    size.diskMb === server.resources.diskMb;
  const [quote, setQuote] = useState<{ data?: Schema<'Quote'>; error?: unknown; loading: boolean }>({ loading: false });
  const key = size ? `${size.ramMb}/${size.cpuPercent}/${size.diskMb}` : '';

  // Price the new size (debounced while typing): the API states the price, the browser compares.
  useEffect(() => {
    if (!size || same) {
      setQuote({ loading: false });
      return;
    }
    let live = true;
    setQuote({ loading: true });
    const timer = setTimeout(() => {
      ok(
        api().POST('/v1/servers/quote', {
          // The add-ons stay: priced with the new size so the difference is the resize's alone.
          body: {
            name: server.name,
            eggId: server.eggId,
            instanceId: server.instanceId,
            region: server.region,
            ...size,
            addons: server.addons,
          },
        }),
      ).then(
        (data) => live && setQuote({ data, loading: false }),
        (error) => live && setQuote({ error, loading: false }),
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key, server.id, server.priceMillicentsPerHour]);

  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const resize = useAction(async () => {
    if (!size) return;
    const updated = await ok(api().PATCH('/v1/servers/{id}', { params: { path: { id: server.id } }, body: size }));
    setConfirming(false);
    setDone(
      `Resized to ${mb(updated.resources.ramMb)} RAM, ${updated.resources.cpuPercent}% CPU, ${mb(updated.resources.diskMb)} disk: now ${cents(updated.priceCentsPerHour)}/h.`,
    );
    await props.reload();
  });
  const diff = quote.data ? quote.data.priceMillicentsPerHour - server.priceMillicentsPerHour : null;
  const set = (field: keyof typeof form) => (e: { currentTarget: HTMLInputElement }) => {
    const value = e.currentTarget.value;
    setDone(null);
    setForm((f) => ({ ...f, [field]: value }));
  };

  return (
    <>
      <form
        id="resize-form"
        onSubmit={(event) => {
          event.preventDefault();
          resize.clearError();
          setConfirming(true);
        }}
      >
        <p class="muted">
          Now {mb(server.resources.ramMb)} RAM, {server.resources.cpuPercent}% CPU, {mb(server.resources.diskMb)} disk at{' '}
          {millicents(server.priceMillicentsPerHour)}/h. Memory, CPU and disk change on the panel at once.
        </p>
        <div class="resize-fields">
          {SIZE_FIELDS.map((f) => (
            <Field key={f.key} id={f.id} label={f.label} hint={f.hint}>
              {(control) => (
                <input
                  {...control}
                  type="number"
                  inputMode="numeric"
                  min={f.min}
                  step={1}
                  required
                  value={form[f.key]}
                  onInput={set(f.key)}
                />
              )}
            </Field>
          ))}
        </div>
        <div class="resize-price" aria-live="polite">
          {same ? (
            <p>
              Price difference: <strong data-testid="resize-difference">no change</strong> (the current size).
            </p>
          ) : quote.loading ? (
            <Spinner label="Pricing the new size…" />
          ) : quote.data && diff !== null ? (
            <p>
              Price difference: <strong data-testid="resize-difference">{signedPerHour(diff)}</strong> —{' '}
              {millicents(quote.data.priceMillicentsPerHour)}
              /h instead of {millicents(server.priceMillicentsPerHour)}/h (about {cents(quote.data.monthly.estimateCents)} a month).
            </p>
          ) : null}
        </div>
        {quote.error ? (
          <>
            <p>The new size could not be priced; the API’s answer:</p>
            <ErrorNotice error={quote.error} />
          </>
        ) : null}
        {done ? <Notice kind="success">{done}</Notice> : null}
        <div class="actions">
          <Button type="submit" kind="primary" disabled={!size || same}>
            Resize
          </Button>
        </div>
      </form>
      <Dialog
        id="resize-dialog"
        open={confirming}
        title="Resize the server?"
        confirmLabel="Apply new size"
        busy={resize.busy}
        error={resize.error}
        onConfirm={() => void resize.run()}
        onCancel={() => setConfirming(false)}
      >
        {size ? (
          <>
            <p>
              {mb(server.resources.ramMb)} → {mb(size.ramMb)} RAM, {server.resources.cpuPercent}% → {size.cpuPercent}% CPU,{' '}
              {mb(server.resources.diskMb)} → {mb(size.diskMb)} disk.
            </p>
            <p>
              Hourly price: {diff !== null ? <strong>{signedPerHour(diff)}</strong> : 'stated by the API after the resize'}
              {quote.data ? ` (${millicents(quote.data.priceMillicentsPerHour)}/h from now on)` : ''}. A price rise needs 24 hours of credit
              for all your servers.
            </p>
          </>
        ) : null}
      </Dialog>
    </>
  );
}
