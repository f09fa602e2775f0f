import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { cents } from '../format.ts';
import { Button, ErrorNotice, Spinner } from '../ui.tsx';

/** A page of a list as the API answers it. */
export interface ListPage<T> {
  data: T[];
  nextCursor: string | null;
}

/**
 * A paginated list read page after page: the first page on mount (and again when `deps` change),
 * the next one on `more()`, appended. The cursor is the API's; nothing is counted here.
 */
export function usePaged<T>(load: (cursor: string | undefined) => Promise<ListPage<T>>, deps: unknown[] = []) {
  const [items, setItems] = useState<T[] | undefined>(undefined);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const latest = useRef(0);
  const fetchPage = useCallback(async (after: string | undefined) => {
    const run = ++latest.current;
    setLoading(true);
    setError(undefined);
    try {
      const page = await load(after);
      if (run !== latest.current) return;
      setItems((prev) => (after && prev ? [...prev, ...page.data] : page.data));
      setCursor(page.nextCursor);
    } catch (e) {
      if (run === latest.current) setError(e);
    } finally {
      if (run === latest.current) setLoading(false);
    }
  }, deps);
  useEffect(() => {
    void fetchPage(undefined);
  }, [fetchPage]);
  return {
    items,
    error,
    loading,
    hasMore: cursor !== null,
    more: () => (cursor ? fetchPage(cursor) : Promise.resolve()),
    reload: () => fetchPage(undefined),
  };
}

/** The list's error, first-load progress, and the "Load more" button under it. */
export function PagedFooter(props: { list: ReturnType<typeof usePaged<unknown>>; what: string }) {
  const { list } = props;
  return (
    <>
      {list.error ? <ErrorNotice error={list.error} /> : null}
      {list.items === undefined && list.loading ? <Spinner label={`Loading ${props.what}…`} /> : null}
      {list.items !== undefined && list.hasMore ? (
        <p>
          <Button busy={list.loading} onClick={() => void list.more()}>
            Load more {props.what}
          </Button>
        </p>
      ) : null}
    </>
  );
}

/** Dollars typed by a person ("12.5") as integer cents (1250); null when it is not an amount. */
export function toCents(text: string): number | null {
  const trimmed = text.trim().replace(/^\$/, '');
  if (!/^\d+(\.\d{0,2})?$/.test(trimmed)) return null;
  const [whole, fraction = ''] = trimmed.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

/** Integer cents as the text of a dollar input: 1250 → "12.50". */
export const toDollars = (value: number): string => (value / 100).toFixed(2);

/** A signed amount: "+$25.00" / "−$0.03" (a real minus sign; the sign is text, not only colour). */
export function signedCents(value: number): string {
  if (value > 0) return `+${cents(value)}`;
  if (value < 0) return `−${cents(-value)}`;
  return cents(0);
}

/** A section of the billing page: its h2 and body in a card. */
export function Section(props: { id: string; title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card billing-section" aria-labelledby={`${props.id}-title`} id={props.id}>
      <div class="billing-head">
        <h2 id={`${props.id}-title`}>{props.title}</h2>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </div>
      {props.children}
    </section>
  );
}
