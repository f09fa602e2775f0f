import type { DashboardConfig } from '../dashboard-config.ts';

export type { DashboardConfig };

let loaded: DashboardConfig | undefined;

export async function loadConfig(): Promise<DashboardConfig> {
  if (loaded) return loaded;
  const res = await fetch(`${import.meta.env.BASE_URL}config.json`, { cache: 'no-store' });
  if (!res.ok) throw new Error(`The dashboard's configuration could not be read (${res.status})`);
  loaded = (await res.json()) as DashboardConfig;
  return loaded;
}

export const config = (): DashboardConfig => {
  if (!loaded) throw new Error('configuration not loaded');
  return loaded;
};
