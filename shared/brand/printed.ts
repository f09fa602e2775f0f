import type { BrandValue } from '../api/schemas/brand.ts';
import { DEFAULT_BRAND } from '../settings/index.ts';

/**
 * What the invoice and credit-note PDFs print of the brand: the operator name in the heading (null
 * while it is the default, so a platform without a brand prints as it always did) and the legal
 * footer. A paid invoice and a credit note keep this copy, so issued documents never change.
 */
export interface PrintedBrand {
  name: string | null;
  legalFooter: string | null;
}

export const printedBrand = (brand: BrandValue): PrintedBrand => ({
  name: brand.name === DEFAULT_BRAND.name ? null : brand.name,
  legalFooter: brand.legalFooter,
});
