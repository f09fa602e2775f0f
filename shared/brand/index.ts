import type { BrandValue } from '../api/schemas/brand.ts';
import { getSettings } from '../settings/index.ts';

/**
 * The operator's brand as every customer-facing text shows it (dashboard, invoice and credit-note
 * PDFs, Checkout, e-mail): one read, flat fields, absolute links. Set by an admin in the platform
 * setting `brand` and the logo upload (shared/brand/logo.ts).
 */
export interface BrandView {
  /** The operator name (default "Control panel"). */
  name: string;
  /** `#rrggbb`, AA contrast with white text checked when it was set (contrast.ts). */
  primaryColor: string;
  /** Absolute URL of the PNG/JPEG logo (a new URL per upload), or null. */
  logoUrl: string | null;
  /** The legal footer paragraph, or null. */
  footer: string | null;
  supportEmail: string | null;
  supportUrl: string | null;
  termsUrl: string | null;
  privacyUrl: string | null;
}

export function brandView(brand: BrandValue): BrandView {
  return {
    name: brand.name,
    primaryColor: brand.primaryColor,
    logoUrl: brand.logo?.url ?? null,
    footer: brand.legalFooter,
    supportEmail: brand.supportEmail,
    supportUrl: brand.supportUrl,
    termsUrl: brand.termsUrl,
    privacyUrl: brand.privacyUrl,
  };
}

/** The brand now (the settings as this process keeps them: a saved change is seen within seconds). */
export async function getBrand(): Promise<BrandView> {
  return brandView((await getSettings()).brand);
}
