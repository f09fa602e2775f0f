import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { siteName } from './brand-context.ts';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ControlPlaneError } from './api.ts';

/**
 * The few building blocks every page uses. Plain HTML elements with their native semantics (labels,
 * buttons, <dialog>, tables) so that the keyboard and screen readers work without ARIA patches.
 */

/** A page's heading and body; the heading takes the focus on navigation (ui: announced by readers). */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · ${siteName()}`;
  }, [props.title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1} ref={heading}>
          {props.title}
        </h1>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

/** An API error as the API said it: its message, code and request id (to quote to support). */
export function ErrorNotice(props: { error: unknown; onDismiss?: () => void }) {
  if (!props.error) return null;
  const e = props.error;
  const message = e instanceof ControlPlaneError ? (e.body?.error.message ?? e.message) : e instanceof Error ? e.message : String(e);
  return (
    <div class="notice error" role="alert">
      <p>
        <strong>{e instanceof ControlPlaneError ? `Error ${e.status}` : 'Error'}:</strong> {message}
      </p>
      {e instanceof ControlPlaneError ? (
        <p class="meta">
          Code <code>{e.code}</code>
          {e.requestId ? (
            <>
              {' '}
              · request id <code>{e.requestId}</code>
            </>
          ) : null}
        </p>
      ) : null}
      {props.onDismiss ? (
        <button type="button" class="link" onClick={props.onDismiss}>
          Dismiss
        </button>
      ) : null}
    </div>
  );
}

export function Notice(props: { kind?: 'info' | 'warning' | 'success'; children: ComponentChildren }) {
  return (
    <div class={`notice ${props.kind ?? 'info'}`} role={props.kind === 'warning' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

export function Spinner(props: { label?: string }) {
  return (
    <p class="spinner" role="status">
      <span class="spin" aria-hidden="true" /> {props.label ?? 'Loading…'}
    </p>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
}

/** Loads data when the dependencies change; `reload` loads again (after a change). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const latest = useRef(0);
  const reload = useCallback(async () => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      if (run === latest.current) setState({ data, error: undefined, loading: false });
    } catch (error) {
      if (run === latest.current) setState((s) => ({ ...s, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { ...state, reload };
}

/** Shows a load's data, or its progress, or its error. */
export function Loading<T>(props: { state: Loaded<T>; children: (data: T) => ComponentChildren; label?: string }) {
  const { data, error, loading } = props.state;
  if (error && data === undefined) return <ErrorNotice error={error} />;
  if (data === undefined) return loading ? <Spinner label={props.label} /> : null;
  return (
    <>
      {error ? <ErrorNotice error={error} /> : null}
      {props.children(data)}
    </>
  );
}

/**
 * An action: runs `action`, shows progress while it runs (the button is disabled, so a double click
 * sends one request) and its error after. `run` answers whether it succeeded.
 */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<unknown>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = async (...args: A): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await action(...args);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clearError: () => setError(undefined) };
}

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { busy?: boolean; kind?: 'primary' | 'danger' | 'plain' };

export function Button({ busy, kind = 'plain', children, disabled, type, ...rest }: ButtonProps) {
  return (
    <button
      type={type ?? 'button'}
      class={`btn ${kind}`}
      disabled={Boolean(disabled) || busy}
      aria-busy={busy ? 'true' : undefined}
      {...rest}
    >
      {busy ? <span class="spin" aria-hidden="true" /> : null}
      {children}
    </button>
  );
}

/**
 * A part of a page in a card: its h2 (`${id}-title`, naming the section) with optional actions
 * beside it, and its body. The section has the id, so that a link can point at it.
 */
export function Section(props: {
  id: string;
  title: ComponentChildren;
  class?: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <section class={props.class ? `card ${props.class}` : 'card'} id={props.id} aria-labelledby={`${props.id}-title`}>
      <div class="section-head">
        <h2 id={`${props.id}-title`}>{props.title}</h2>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </div>
      {props.children}
    </section>
  );
}

/** A secret shown once, with a copy button and the warning that it will not be shown again. */
export function SecretOnce(props: { label: string; value: string; testid?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="notice success" role="status">
      <p>
        <strong>{props.label}</strong> — shown once; store it now.
      </p>
      <p class="secret">
        <code data-testid={props.testid}>{props.value}</code>{' '}
        <Button
          onClick={() =>
            void navigator.clipboard?.writeText(props.value).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {copied ? 'Copied' : 'Copy'}
        </Button>
      </p>
    </div>
  );
}

/** A badge's tone: it adds to the word, which is always written (colour is never the only signal). */
export type Tone = 'ok' | 'warn' | 'bad' | 'neutral';

export function Badge(props: { tone?: Tone; children: ComponentChildren }) {
  return <span class={`badge ${props.tone ?? 'neutral'}`}>{props.children}</span>;
}
