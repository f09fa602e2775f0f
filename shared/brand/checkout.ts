import type { BrandValue } from '../api/schemas/brand.ts';

/**
 * Stripe Checkout's `branding_settings` from the brand: the operator name, the button colour and
 * the logo. Stripe fetches the logo itself, so only a public https URL is sent (the local stack's
 * http://127.0.0.1 one is not). The page's own background stays Stripe's.
 */
export function checkoutBranding(brand: BrandValue): { display_name: string; button_color: string; logo?: { type: 'url'; url: string } } {
  const logo = brand.logo?.url.startsWith('https://') ? { logo: { type: 'url' as const, url: brand.logo.url } } : {};
  return { display_name: brand.name, button_color: brand.primaryColor, ...logo };
}
