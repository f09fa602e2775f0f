import { useEffect, useState } from 'preact/hooks';

/**
 * A router small enough to read: the History API, paths under the build's base (`/app/`), and a
 * hook that re-renders on navigation. Links are plain `<a href>` elements (keyboard and middle-click
 * work as everywhere); a click on one inside the app is turned into `navigate` by the listener below.
 */
export const BASE = import.meta.env.BASE_URL.replace(/\/$/, '');

/** The path inside the app (`/servers/abc`), without the base. */
export const appPath = (): string => location.pathname.slice(BASE.length) || '/';
export const href = (path: string): string => `${BASE}${path}`;

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const url = path.startsWith(BASE) ? path : href(path);
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((n) => n + 1);
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return { path: appPath(), query: new URLSearchParams(location.search) };
}

/** Same-origin links under the base navigate inside the app, without a page load. */
export function interceptLinks(): void {
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element | null)?.closest?.('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download') || anchor.origin !== location.origin) return;
    if (!anchor.pathname.startsWith(`${BASE}/`) && anchor.pathname !== BASE) return;
    event.preventDefault();
    navigate(anchor.pathname + anchor.search);
  });
}

/** Matches `/servers/:id` against a path; answers the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const trim = (p: string) => (p.length > 1 ? p.replace(/\/$/, '') : p);
  const want = trim(pattern).split('/');
  const got = trim(path).split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(got[i]!);
    else if (w !== got[i]) return null;
  }
  return params;
}
