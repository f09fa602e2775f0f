import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { Button, ErrorNotice, Spinner } from './ui.tsx';

/** A page of a list as the API answers it. */
export interface ListPage<T> {
  data: T[];
  nextCursor: string | null;
}

/**
 * A paged list read page after page: the first page on mount and on `reload` (and again when
 * `deps` change), the next one on `more()`, appended. The cursor is the API's; nothing is counted.
 */
export interface Paged<T> {
  items: T[] | undefined;
  error: unknown;
  loading: boolean;
  hasMore: boolean;
  reload: () => Promise<void>;
  more: () => Promise<void>;
}

export function usePaged<T>(load: (cursor: string | undefined) => Promise<ListPage<T>>, deps: unknown[] = []): Paged<T> {
  const [state, setState] = useState<{ items: T[] | undefined; cursor: string | null; error: unknown; loading: boolean }>({
    items: undefined,
    cursor: null,
    error: undefined,
    loading: true,
  });
  const latest = useRef(0);
  const fetchPage = useCallback(async (cursor: string | undefined) => {
    const run = ++latest.current;
    setState((s) => ({ ...s, error: undefined, loading: true }));
    try {
      const page = await load(cursor);
      if (run !== latest.current) return;
      setState((s) => ({
        items: cursor && s.items ? [...s.items, ...page.data] : page.data,
        cursor: page.nextCursor,
        error: undefined,
        loading: false,
      }));
    } catch (error) {
      if (run === latest.current) setState((s) => ({ ...s, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    void fetchPage(undefined);
  }, [fetchPage]);
  return {
    items: state.items,
    error: state.error,
    loading: state.loading,
    hasMore: state.cursor !== null,
    reload: () => fetchPage(undefined),
    more: () => (state.cursor ? fetchPage(state.cursor) : Promise.resolve()),
  };
}

/**
 * A paged list as a page shows it: its error, the first load's progress ("Loading {what}…"), the
 * `empty` text or the items, and the button that loads the next page (`moreLabel`).
 */
export function PagedList<T>(props: {
  list: Paged<T>;
  what: string;
  empty: ComponentChildren;
  moreLabel?: string;
  children: (items: T[]) => ComponentChildren;
}) {
  const { list } = props;
  return (
    <>
      <ErrorNotice error={list.error} />
      {list.items === undefined ? (
        list.loading ? (
          <Spinner label={`Loading ${props.what}…`} />
        ) : null
      ) : list.items.length === 0 ? (
        props.empty
      ) : (
        props.children(list.items)
      )}
      {list.items !== undefined && list.hasMore ? (
        <p>
          <Button busy={list.loading} onClick={() => void list.more()}>
            {props.moreLabel ?? `Load more ${props.what}`}
          </Button>
        </p>
      ) : null}
    </>
  );
}
