import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import type { QuoteStatus } from '../../deploy-quote.tsx';

/**
 * The quote of a body, asked 400 ms after its last change; an answer to an older body is dropped.
 * `ready` only while the shown price is the current body's. (The egg's settings need not be loaded
 * first: until one is changed the body sends none, which is what the egg's defaults give.)
 */
export function useQuote(body: Schema<'CreateServer'>, key: string) {
  const [state, setState] = useState<{ status: QuoteStatus; quote?: Schema<'Quote'>; error?: unknown }>({ status: 'waiting' });
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, status: 'updating' }));
    const timer = setTimeout(() => {
      ok(api().POST('/v1/servers/quote', { body })).then(
        (quote) => {
          if (run === latest.current) setState({ status: 'ready', quote });
        },
        (error) => {
          if (run === latest.current) setState((s) => ({ ...s, status: 'error', error }));
        },
      );
    }, 400);
    return () => clearTimeout(timer);
  }, [key]);
  return state;
}
