import { useState } from 'preact/hooks';
import { Button, type Loaded, useLoad } from '../../ui.tsx';

/**
 * What the admin pages share: cursor pagination over a list route and short ids.
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
  const shown = JSON.stringify([key, cursor ?? null]);
  const loaded = useLoad(async (): Promise<{ shown: string; page?: ListPage<T>; error?: unknown }> => {
    try {
      return { shown, page: await load(cursor) };
    } catch (error) {
      return { shown, error };
    }
  }, [shown]);
  // What was read for other filters or another cursor is not shown while this page loads, nor its
  // error: the table holds only what the filters in the address ask for. A reload keeps the page.
  const mine = loaded.data?.shown === shown ? loaded.data : undefined;
  const data = mine?.page;
  const state: Loaded<ListPage<T>> = {
    data,
    error: mine?.error,
    loading: loaded.loading || mine === undefined,
    reload: loaded.reload,
  };
  const nextCursor = data?.nextCursor ?? null;
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

/** The first 8 characters of a uuid, for tables (the full id is in the title and the link). */
export const shortId = (id: string): string => id.slice(0, 8);

/** A FormData text value, trimmed ('' when absent). */
export const text = (form: FormData, name: string): string => String(form.get(name) ?? '').trim();
