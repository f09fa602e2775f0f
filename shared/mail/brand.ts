import type { SettingsValue } from '../api/schemas/settings.ts';

/**
 * Who the mail says it is from, and the footer every message carries: the one place they come
 * from. Today the seller's legal name and invoice footer (setting `invoiceIssuer`); the operator's
 * brand settings (issue 39, item 5) take their place here.
 */
export interface MailBrand {
  /** The sender's display name and the name the messages sign with. */
  name: string;
  /** Lines under every message (the seller's address, its invoice footer). */
  footer: string[];
}

/** The name while no seller is set: what the dashboard and PDFs say too. */
export const DEFAULT_BRAND_NAME = 'Control panel';

export function mailBrand(settings: Pick<SettingsValue, 'invoiceIssuer'>): MailBrand {
  const issuer = settings.invoiceIssuer;
  const name = issuer.legalName?.trim() || DEFAULT_BRAND_NAME;
  const address = [issuer.address.line1, issuer.address.postalCode, issuer.address.city, issuer.address.country].filter(Boolean).join(', ');
  return { name, footer: [name, address, issuer.footer ?? ''].filter((line) => line.trim() !== '') };
}
