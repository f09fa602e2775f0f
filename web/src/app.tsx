import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ok, type Schema } from './api.ts';
import { currentUser, onUserChange, signIn, signOut } from './auth.ts';
import { cents, setCurrency } from './format.ts';
import { ROUTES, type AppRoute, type PageModule } from './routes.ts';
import { href, match, useLocation } from './router.ts';
import { type Session, SessionContext } from './session.ts';
import { Button, ErrorNotice, Spinner } from './ui.tsx';
import { BrandContext } from './brand-context.ts';
import { BrandFooter, BrandMark, useBrand } from './brand.tsx';

const loaded = new Map<AppRoute, PageModule>();

function resolve(path: string): { route: AppRoute; params: Record<string, string> } | null {
  for (const route of ROUTES) {
    const params = match(route.path, path);
    if (params) return { route, params };
  }
  return null;
}

/** The page at the current path, its chunk loaded on first visit. */
function Outlet(props: { isAdmin: boolean }) {
  const { path } = useLocation();
  const found = resolve(path);
  const [, setReady] = useState(0);
  const [error, setError] = useState<unknown>();
  const module = found ? loaded.get(found.route) : undefined;
  useEffect(() => {
    if (!found || module) return;
    found.route.load().then(
      (m) => {
        loaded.set(found.route, m);
        setReady((n) => n + 1);
      },
      (e) => setError(e),
    );
  }, [found?.route, module]);
  useEffect(() => {
    document.getElementById('page-title')?.focus({ preventScroll: true });
  }, [path, module]);
  if (!found || (found.route.admin && !props.isAdmin)) {
    return (
      <section class="page">
        <h1 id="page-title" tabIndex={-1}>
          Not found
        </h1>
        <p>
          There is no page here. <a href={href('/')}>Back to the overview</a>.
        </p>
      </section>
    );
  }
  if (error) return <ErrorNotice error={error} />;
  if (!module) return <Spinner />;
  const Page = module.default;
  return <Page params={found.params} />;
}

function Nav(props: { isAdmin: boolean; path: string }) {
  const links = ROUTES.filter((r) => r.nav && (!r.admin || props.isAdmin));
  const current = (r: AppRoute) => (r.path === '/' ? props.path === '/' : props.path === r.path || props.path.startsWith(`${r.path}/`));
  const item = (r: AppRoute) => (
    <li key={r.path}>
      <a href={href(r.path)} aria-current={current(r) ? 'page' : undefined}>
        {r.nav}
      </a>
    </li>
  );
  return (
    <nav aria-label="Main">
      <ul>{links.filter((r) => !r.admin).map(item)}</ul>
      {props.isAdmin ? (
        <>
          <p class="nav-group" id="nav-admin">
            Admin
          </p>
          <ul aria-labelledby="nav-admin">{links.filter((r) => r.admin).map(item)}</ul>
        </>
      ) : null}
    </nav>
  );
}

/** The signed-in shell: header with balance and sign-out, navigation, the page. */
export function App() {
  const { path } = useLocation();
  const [account, setAccount] = useState<Schema<'Account'>>();
  const [error, setError] = useState<unknown>();
  const [menuOpen, setMenuOpen] = useState(false);
  const [brand, setBrand] = useBrand();
  const refresh = async () => {
    try {
      // The platform's currency once, with the first account read: every amount shown is in it.
      const [next, billing] = await Promise.all([ok(api().GET('/v1/account')), account ? undefined : ok(api().GET('/v1/billing/config'))]);
      if (billing) setCurrency(billing.currency);
      setAccount(next);
      setError(undefined);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    void refresh();
    return onUserChange((user) => {
      if (!user) void signIn();
    });
  }, []);
  useEffect(() => setMenuOpen(false), [path]);
  const session = useMemo<Session | null>(() => (account ? { account, refresh } : null), [account]);
  if (!session) {
    return (
      <main id="main" class="boot">
        {error ? <ErrorNotice error={error} /> : <Spinner label="Signing in…" />}
      </main>
    );
  }
  return (
    <SessionContext.Provider value={session}>
      <BrandContext.Provider value={{ brand, setBrand }}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <BrandMark brand={brand} href={href('/')} />
          <button
            type="button"
            class="btn plain menu"
            aria-expanded={menuOpen}
            aria-controls="sidebar"
            onClick={() => setMenuOpen((o) => !o)}
          >
            Menu
          </button>
          <p class="who">
            <span class="balance" data-testid="header-balance">
              {cents(session.account.balanceCents)}
            </span>{' '}
            <span class="email">{currentUser()?.profile.email ?? session.account.email}</span>
          </p>
          <Button onClick={() => void signOut()}>Sign out</Button>
        </header>
        <div class="layout">
          <aside id="sidebar" class={menuOpen ? 'open' : ''}>
            <Nav isAdmin={session.account.isAdmin} path={path} />
          </aside>
          <main id="main">
            <Outlet isAdmin={session.account.isAdmin} />
          </main>
        </div>
        <BrandFooter brand={brand} />
      </BrandContext.Provider>
    </SessionContext.Provider>
  );
}
