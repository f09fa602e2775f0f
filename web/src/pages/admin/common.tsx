import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ControlPlaneError } from '../../api.ts';
import { Button, type Loaded, useLoad } from '../../ui.tsx';

/**
 * What the admin pages share: cursor pagination over a list route, the field errors of a
 * `validation_failed`, and short ids.
 */

export interface ListPage<T> {
  data: T[];
  nextCursor: string | null;
}

/**
 * A cursor-paged list: `load(cursor)` reads one page; Next follows `nextCursor`, Previous goes back
 * to the cursor before. A change of `deps` (the filters) starts again at the first page, so a cursor
 * is never sent with filters other than those it was issued for (the API refuses it).
 */
export function useCursorList<T>(load: (cursor: string | undefined) => Promise<ListPage<T>>, deps: unknown[]) {
  const key = JSON.stringify(deps);
  const [nav, setNav] = useState<{ key: string; stack: (string | undefined)[] }>({ key, stack: [undefined] });
  const stack = nav.key === key ? nav.stack : [undefined];
  const cursor = stack[stack.length - 1];
  const state = useLoad(() => load(cursor), [key, cursor]);
  const nextCursor = state.data?.nextCursor ?? null;
  return {
    state,
    page: stack.length,
    next: nextCursor && !state.loading ? () => setNav({ key, stack: [...stack, nextCursor] }) : undefined,
    previous: stack.length > 1 && !state.loading ? () => setNav({ key, stack: stack.slice(0, -1) }) : undefined,
  };
}

/** Previous / Next under a paged table, with the page number announced. */
export function Pager(props: { list: { state: Loaded<unknown>; page: number; next?: () => void; previous?: () => void }; label: string }) {
  const { list } = props;
  if (list.page === 1 && !list.next && !list.state.loading) return null;
  return (
    <nav class="actions pager" aria-label={`${props.label} pages`}>
      <Button onClick={list.previous} disabled={!list.previous}>
        Previous page
      </Button>
      <span class="muted" role="status">
        Page {list.page}
        {list.state.loading ? ' (loading…)' : ''}
      </span>
      <Button onClick={list.next} disabled={!list.next}>
        Next page
      </Button>
    </nav>
  );
}

/** The `details.issues` of a validation error as `{ 'body.prices.ramMillicentsPerGbHour': 'message' }`. */
export function fieldIssues(error: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (error instanceof ControlPlaneError && error.is('validation_failed')) {
    for (const issue of error.details?.issues ?? []) out[issue.field] = issue.message;
  }
  return out;
}

/** The first 8 characters of a uuid, for tables (the full id is in the title and the link). */
export const shortId = (id: string): string => id.slice(0, 8);

/** A FormData text value, trimmed ('' when absent). */
export const text = (form: FormData, name: string): string => String(form.get(name) ?? '').trim();

/**
 * A table's horizontal scroller (`.table-wrap`) that the keyboard can reach: a region that scrolls
 * must take the focus when nothing inside it can (axe: scrollable-region-focusable).
 */
export function ScrollRegion(props: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region needs the focus to be scrolled by keyboard
    <section class="table-wrap" tabIndex={0} aria-label={props.label}>
      {props.children}
    </section>
  );
}
