import { accessPatterns } from '../db/access-patterns.ts';

/** Registered panels. Registration and the catalog arrive with the panels work; health counts them now. */
export async function countInstances(): Promise<{ total: number; enabled: number }> {
  const items = await accessPatterns.allInstances();
  return { total: items.length, enabled: items.filter((i) => i.enabled !== false).length };
}
