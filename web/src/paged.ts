import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/**
 * A paged list (`{ data, nextCursor }`) read page by page: the first page on mount and on `reload`,
 * the next with `more`. Used by the API keys and webhooks pages.
 */
export interface Paged<T> {
  items: T[] | undefined;
  error: unknown;
  loading: boolean;
  hasMore: boolean;
  reload: () => Promise<void>;
  more: () => Promise<void>;
}

export function usePaged<T>(load: (cursor?: string) => Promise<{ data: T[]; nextCursor: string | null }>, deps: unknown[] = []): Paged<T> {
  const [state, setState] = useState<{ items: T[] | undefined; cursor: string | null; error: unknown; loading: boolean }>({
    items: undefined,
    cursor: null,
    error: undefined,
    loading: true,
  });
  const latest = useRef(0);
  const fetchPage = useCallback(async (cursor?: string) => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const page = await load(cursor);
      if (run !== latest.current) return;
      setState((s) => ({
        items: cursor ? [...(s.items ?? []), ...page.data] : page.data,
        cursor: page.nextCursor,
        error: undefined,
        loading: false,
      }));
    } catch (error) {
      if (run === latest.current) setState((s) => ({ ...s, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    void fetchPage();
  }, [fetchPage]);
  return {
    items: state.items,
    error: state.error,
    loading: state.loading,
    hasMore: state.cursor !== null,
    reload: () => fetchPage(),
    more: () => (state.cursor ? fetchPage(state.cursor) : Promise.resolve()),
  };
}
