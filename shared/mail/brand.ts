import type { SettingsValue } from '../api/schemas/settings.ts';

/**
 * Who the mail says it is from, and the footer every message carries: the one place they come
 * from. The operator's brand (setting `brand`) when an admin has named it, else the seller's legal
 * name; the brand's legal footer, else the seller's invoice footer; the brand's support links.
 */
export interface MailBrand {
  /** The sender's display name and the name the messages sign with. */
  name: string;
  /** Lines under every message (the seller's address, the legal footer, where to get help). */
  footer: string[];
}

/** The name while neither a brand nor a seller is set: what the dashboard and PDFs say too. */
export const DEFAULT_BRAND_NAME = 'Control panel';

export function mailBrand(settings: Pick<SettingsValue, 'invoiceIssuer' | 'brand'>): MailBrand {
  const issuer = settings.invoiceIssuer;
  const brand = settings.brand;
  const branded = brand.name.trim() !== '' && brand.name !== DEFAULT_BRAND_NAME;
  const name = (branded ? brand.name.trim() : issuer.legalName?.trim()) || DEFAULT_BRAND_NAME;
  const address = [issuer.address.line1, issuer.address.postalCode, issuer.address.city, issuer.address.country].filter(Boolean).join(', ');
  const support = [brand.supportEmail, brand.supportUrl].filter(Boolean).join(' · ');
  const legal = brand.legalFooter ?? issuer.footer ?? '';
  return { name, footer: [name, address, legal, support && `Support: ${support}`].filter((line) => line.trim() !== '') };
}
