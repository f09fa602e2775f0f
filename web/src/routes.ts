import type { ComponentType } from 'preact';

/**
 * The dashboard's pages: one source for the router, the navigation and the browser tests. Every
 * page is its own chunk (the overview's too, so the first render shows the shell at once); `admin`
 * pages are listed for admins only, and the API refuses the rest anyway.
 */
export type PageModule = { default: ComponentType<{ params: Record<string, string> }> };

export interface AppRoute {
  path: string;
  load: () => Promise<PageModule>;
  /** In the navigation under this label (omitted: reached by a link). */
  nav?: string;
  admin?: boolean;
}

export const ROUTES: AppRoute[] = [
  { path: '/', nav: 'Overview', load: () => import('./pages/overview.tsx') },
  { path: '/servers', nav: 'Servers', load: () => import('./pages/servers.tsx') },
  { path: '/deploy', nav: 'Deploy', load: () => import('./pages/deploy.tsx') },
  { path: '/servers/:id', load: () => import('./pages/server.tsx') },
  { path: '/billing', nav: 'Billing', load: () => import('./pages/billing.tsx') },
  { path: '/keys', nav: 'API keys', load: () => import('./pages/keys.tsx') },
  { path: '/webhooks', nav: 'Webhooks', load: () => import('./pages/webhooks.tsx') },
  { path: '/account', nav: 'Account', load: () => import('./pages/account.tsx') },
  // The admin's landing page: first of the admin group.
  { path: '/admin/home', nav: 'Admin home', admin: true, load: () => import('./pages/admin/home.tsx') },
  { path: '/admin/instances', nav: 'Panels', admin: true, load: () => import('./pages/admin/instances.tsx') },
  { path: '/admin/accounts', nav: 'Accounts', admin: true, load: () => import('./pages/admin/accounts.tsx') },
  { path: '/admin/accounts/:id', admin: true, load: () => import('./pages/admin/account.tsx') },
  { path: '/admin/servers', nav: 'All servers', admin: true, load: () => import('./pages/admin/servers.tsx') },
  { path: '/admin/plans', nav: 'Plans', admin: true, load: () => import('./pages/admin/plans.tsx') },
  { path: '/admin/settings', nav: 'Settings', admin: true, load: () => import('./pages/admin/settings.tsx') },
  { path: '/admin/brand', nav: 'Brand', admin: true, load: () => import('./pages/admin/brand.tsx') },
  { path: '/admin/audit', nav: 'Audit log', admin: true, load: () => import('./pages/admin/audit.tsx') },
];
