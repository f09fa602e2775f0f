import { createContext } from 'preact';
import type { Brand } from './brand.tsx';

/** The brand the shell shows, and how the admin brand page shows a saved change at once. */
export const BrandContext = createContext<{ brand: Brand | null; setBrand: (brand: Brand) => void }>({
  brand: null,
  setBrand: () => undefined,
});

let name = 'Control panel';

/** The operator name for page titles (`Servers · <name>`), the default until the brand is read. */
export const siteName = (): string => name;

/** Takes the brand's name for titles, the current one included. */
export function setSiteName(next: string): void {
  const suffix = ` · ${name}`;
  if (document.title.endsWith(suffix)) document.title = `${document.title.slice(0, -suffix.length)} · ${next}`;
  name = next;
}
