import { createContext } from 'preact';
import type { Brand } from './brand.tsx';

/** The brand the shell shows, and how the admin brand page shows a saved change at once. */
export const BrandContext = createContext<{ brand: Brand | null; setBrand: (brand: Brand) => void }>({
  brand: null,
  setBrand: () => undefined,
});
